#!/usr/bin/env python3
"""Every scenario shipped under scenarios/ (subfolders included) passes `attnbench validate`.

The files are found when the test runs, so a new scenario is checked without
editing this test. A binary built without CUDA does not know the cuda.*
implementations; there, and only there, "unknown implementation "cuda.…""
is the one diagnostic tolerated (the scenarios name them for GPU runs).
"""
import json
import re
import subprocess
import sys

import attnbench_testing

CUDA_NAME_UNKNOWN = re.compile(r'implementations\[\d+\]: unknown implementation "cuda\.[^"]*"')


def main():
    arguments, _ = attnbench_testing.parse_path_arguments(binary="the attnbench binary", source_dir="the checkout")
    scenarios = sorted(p for p in (arguments.source_dir / "scenarios").rglob("*.json")
                       if not p.name.endswith(".schema.json"))
    assert scenarios, "no scenario found under scenarios/"
    info = json.loads(subprocess.run([str(arguments.binary), "info", "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    names = [i["name"] if isinstance(i, dict) else i for i in info["implementations"]]
    cuda_known = any(name.startswith("cuda.") for name in names)

    validate = subprocess.run([str(arguments.binary), "validate", *map(str, scenarios)],
                              capture_output=True, text=True)
    problems = [line for line in validate.stderr.splitlines() if line.strip()]
    if not cuda_known:
        problems = [line for line in problems if not CUDA_NAME_UNKNOWN.search(line)]
    if validate.returncode not in (0, 2) or problems:
        sys.exit(f"attnbench validate exited {validate.returncode}:\n" + "\n".join(problems or [validate.stdout]))
    for path in scenarios:
        if validate.returncode == 0:
            assert f"{path}: ok" in validate.stdout, f"{path} not reported ok:\n{validate.stdout}"
    print(f"{len(scenarios)} shipped scenarios validate"
          + ("" if cuda_known else " (cuda.* names not checked: this binary was built without CUDA)"))


if __name__ == "__main__":
    main()
