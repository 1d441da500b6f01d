#!/usr/bin/env python3
"""Checks scripts/plot.py end to end on CPU results.

Runs the binary on a tiny sweep (three sequence lengths, causal off and on,
cpu.flash and cpu.standard, hot cache, few samples), then plot.py on the results
file: every expected figure must exist as a non-empty PNG (with the PNG
signature) and SVG (naming both implementations and its axis label), and
nothing else may be written. A broken results file must make plot.py fail with
a message naming it, writing nothing.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

import attnbench_testing

attnbench_testing.require_module("matplotlib")  # plot.py needs it

SCENARIO = {
    "name": "plot_sweep",
    "description": "tiny sweep for the plot check",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16},
    "sweep": {"seqlen": [32, 64, 128], "causal": [False, True]},
    "implementations": ["cpu.flash", "cpu.standard"],
    "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
                "max_samples": 3, "min_seconds": 0, "max_seconds": 0.05},
}
GROUPS = ("causal-false", "causal-true")
AXIS_LABELS = {"tflops": "TFLOP/s", "runtime": "Runtime (ms)", "speedup": "Speedup over cpu.standard",
               "memory": "Peak memory (MB)", "io": "Compulsory HBM bytes"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    args = parser.parse_args()
    plot = args.source_dir / "scripts" / "plot.py"

    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        scenario = attnbench_testing.write_scenario(directory / "sweep.json", SCENARIO)
        results = directory / "results.json"
        attnbench_testing.run_scenario(args.binary, scenario, results)

        out = directory / "plots"
        drawn = subprocess.run([sys.executable, str(plot), str(results), "--attnbench", args.binary, "--out", str(out)],
                               capture_output=True, text=True)
        assert drawn.returncode == 0, drawn.stderr
        expected = {f"{kind}_{group}.{extension}" for kind in AXIS_LABELS for group in GROUPS
                    for extension in ("png", "svg")}
        written = {path.name for path in out.iterdir()}
        assert written == expected, f"missing {sorted(expected - written)}, unexpected {sorted(written - expected)}"
        for name in sorted(expected):
            data = (out / name).read_bytes()
            assert data, f"{name} is empty"
            if name.endswith(".png"):
                assert data.startswith(PNG_SIGNATURE), f"{name} is not a PNG"
            else:
                svg = data.decode()
                assert svg.lstrip().startswith("<?xml") and "<svg" in svg, f"{name} is not an SVG"
                kind = name.split("_")[0]
                names = ["cpu.flash"] if kind == "speedup" else ["cpu.flash", "cpu.standard"]
                for label in names + [AXIS_LABELS[kind]]:
                    assert label in svg, f"{name} does not show {label!r}"
        assert sorted(drawn.stdout.split()) == sorted(str(out / name) for name in expected), drawn.stdout

        broken = directory / "broken.json"
        broken.write_text('{"schema": "attnbench.results/1", "records": [')
        nothing = directory / "nothing"
        failed = subprocess.run([sys.executable, str(plot), str(broken), "--attnbench", args.binary,
                                 "--out", str(nothing)], capture_output=True, text=True)
        assert failed.returncode == 2, (failed.returncode, failed.stderr)
        assert "broken.json" in failed.stderr, failed.stderr
        assert not nothing.exists(), "a failed plot wrote figures"

        missing = subprocess.run([sys.executable, str(plot), str(results), "--attnbench", str(directory / "absent"),
                                  "--out", str(nothing)], capture_output=True, text=True)
        assert missing.returncode == 2 and "--attnbench" in missing.stderr, missing.stderr
    print("plot.py: every figure drawn as PNG and SVG; bad input refused")


if __name__ == "__main__":
    main()
