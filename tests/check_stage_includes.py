#!/usr/bin/env python3
"""The harness's includes point only down its layers (docs/architecture.md).

A command passes through the stages of harness/ in the order cli/, scenario/,
run/, measure/, results/, compare/ or report/; their includes form layers, each
stage using only the stages below it, which do less:

    cli/                 the command line: may use every stage
    compare/, report/    read results files back
    run/                 the case loop, driving measure/ and results/ over scenario/'s cases
    results/             the results file
    measure/             one case on one implementation
    scenario/            scenario files -> cases
    the floor            the top level of harness/ and harness/common/: what every stage uses

The rules, for every #include "harness/..." in harness/:

- a file in a stage includes no stage of its own layer or above it (so
  scenario/ includes no later stage, results/ does not include run/, and
  compare/ and report/ do not include each other);
- a file on the floor includes nothing but the floor.

Folders that are no stage (plugin/, gbench/, cuda/, cudasim/) are not checked.
The rules are tried on made-up files first, so a rule that stops finding its
violation fails too. Exit status 1 lists every violation with its file and
line.
"""
import argparse
import pathlib
import re
import sys

# Each stage's layer, the floor being 0: a stage includes only stages of a lower layer.
LAYER = {"scenario": 1, "measure": 2, "results": 3, "run": 4, "compare": 5, "report": 5, "cli": 6}
FLOOR_FOLDERS = {"common"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"harness/([^"]+)"')
SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".cu", ".cuh"}


def place(path):
    """'floor', a stage's name, or None (a folder that is no stage) for a path under harness/."""
    parts = pathlib.PurePosixPath(path).parts
    if len(parts) == 1 or parts[0] in FLOOR_FOLDERS:
        return "floor"
    return parts[0] if parts[0] in LAYER else None


def violation(includer, included):
    """Why `includer` may not include `included` (both relative to harness/), or None."""
    source, target = place(includer), place(included)
    if source is None:
        return None
    if source == "floor":
        if target != "floor":
            return "the floor (top level, common/) includes only the floor"
        return None
    if target in LAYER and source != target and LAYER[target] >= LAYER[source]:
        return f"{target}/ is not below {source}/: a stage includes only the floor and the stages below it"
    return None


def check(files):
    """files: {path relative to harness/: text}. Returns the violations as lines."""
    problems = []
    for path, text in sorted(files.items()):
        for number, line in enumerate(text.splitlines(), start=1):
            match = INCLUDE.match(line)
            if not match:
                continue
            reason = violation(path, match.group(1))
            if reason:
                problems.append(f"harness/{path}:{number}: includes harness/{match.group(1)}: {reason}")
    return problems


def self_test():
    """Each rule finds a planted violation, and allowed includes pass."""
    planted = {
        "scenario/scenario.hpp": '#include "harness/measure/protocol.hpp"\n',
        "results/document.hpp": '#include "harness/run/shard.hpp"\n',
        "implementation.hpp": '#include "harness/measure/traffic_model.hpp"\n',
        "common/problem.hpp": '#include "harness/scenario/mask_sums.hpp"\n',
        "report/table.hpp": '#include "harness/compare/statistics.hpp"\n',
    }
    allowed = {
        "run/runner.cpp": '#include "harness/results/output.hpp"\n#include "harness/scenario/scenario.hpp"\n',
        "scenario/scenario.cpp": '#include "harness/implementation.hpp"\n#include "harness/common/problem.hpp"\n',
        "common/problem.hpp": '#include "harness/dtype.hpp"\n',
        "cuda/cupti_profiler.hpp": '#include "harness/measure/profiler.hpp"\n',
    }
    failures = []
    found = check(planted)
    for path in planted:
        if not any(problem.startswith(f"harness/{path}:") for problem in found):
            failures.append(f"self-test: the violation planted in harness/{path} was not found")
    for problem in check(allowed):
        failures.append(f"self-test: an allowed include was refused: {problem}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source-dir", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    failures = self_test()
    harness = args.source_dir / "harness"
    files = {path.relative_to(harness).as_posix(): path.read_text(encoding="utf-8")
             for path in harness.rglob("*") if path.suffix in SOURCE_SUFFIXES and path.is_file()}
    if not files:
        failures.append(f"no sources found under {harness}")
    failures += check(files)
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
