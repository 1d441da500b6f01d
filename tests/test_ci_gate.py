#!/usr/bin/env python3
"""scripts/ci_gate.sh end to end on two copies of the same build.

The "base" and "head" builds are wrappers that log each call and run the same
attnbench binary on a tiny CPU scenario. Against itself the gate must exit 0
(pass) and write summary.md, junit.xml and compare.json; the log shows the
interleaving (base then head in odd rounds, head then base in even ones) and
that the head build merges and compares. A head whose runs report more peak
memory is a deterministic regression: the gate must exit 1; a head that loses a
case is not comparable (exit 3), and the gate never lets compare allow that. A run that cannot
start ends the gate with its status; bad arguments exit 2 before anything runs.
The time threshold is raised and noisy cells judged (COMPARE_ARGS) because a
shared test machine can slow one side's samples many times over; compare's own
tests cover its statistics and noise rules.
"""
import json
import stat
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import attnbench_testing

ARGS = None

SCENARIO = {
    "name": "gate",
    "description": "small cases for the CI gate test",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "direction": "fwd"},
    "sweep": {"seqlen": [32, 48]},
    "implementations": ["cpu.flash"],
    "accuracy": {"check": False},
    "measure": {"cache": "hot", "warmup_min_iterations": 2, "warmup_min_seconds": 0, "min_samples": 10,
                "max_samples": 20, "min_seconds": 0, "max_seconds": 0.2},
}


class CiGate(attnbench_testing.ScenarioTestCase):
    prefix, scenario_content, scenario_file = "attnbench_gate_", SCENARIO, "gate.json"

    def setUp(self):
        super().setUp()
        self.log = self.directory / "calls.log"
        self.builds = {side: self.wrapper(side) for side in ("base", "head")}
        self.gate = ARGS.source_dir / "scripts" / "ci_gate.sh"

    def wrapper(self, side, extra_peak_bytes=0, only_impl=""):
        """A build of `side`: logs "<side> <subcommand> [round-K]" and runs the real binary; its runs
        then add `extra_peak_bytes` to every measured peak memory, and run only the implementation
        `only_impl` when given (a build that lost the others)."""
        path = self.directory / side / "attnbench"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"""#!{sys.executable}
import json, subprocess, sys
arguments = sys.argv[1:]
shard = arguments[arguments.index("-o") + 1].rsplit("/", 1)[-1][:-len(".json")] if arguments[0] == "run" else ""
with open({str(self.log)!r}, "a") as log:
    log.write(f"{side} {{arguments[0]}} {{shard}}\\n")
if arguments[0] == "run" and {only_impl!r}:
    arguments += ["--impl", {only_impl!r}]
status = subprocess.call([{str(ARGS.binary)!r}, *arguments])
if arguments[0] == "run" and {extra_peak_bytes}:
    output = arguments[arguments.index("-o") + 1]
    with open(output) as file:
        results = json.load(file)
    for record in results["records"]:
        if record["memory"]:
            record["memory"]["peak_bytes"] += {extra_peak_bytes}
            record["memory"]["extra_bytes"] += {extra_peak_bytes}
    with open(output, "w") as file:
        json.dump(results, file)
sys.exit(status)
""")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return path

    def gate_run(self, *arguments, compare_args="--time-threshold 100 --allow-noisy"):
        env = attnbench_testing.environment_without("RUN_ARGS")
        # One thread: with two OpenMP threads on a loaded two-core machine a
        # sample can wait a whole scheduler tick for a preempted thread (200x).
        env["RUN_ARGS"] = "--threads 1"
        env["COMPARE_ARGS"] = compare_args
        return subprocess.run(["bash", str(self.gate), *map(str, arguments)], capture_output=True, text=True,
                              env=env, cwd=self.directory)

    def test_a_build_against_itself_passes_with_all_three_outputs(self):
        outdir = self.directory / "gate"
        gate = self.gate_run(self.builds["base"], self.builds["head"], self.scenario, outdir, 2)
        self.assertEqual(gate.returncode, 0, gate.stdout + gate.stderr)

        calls = self.log.read_text().split("\n")
        runs = [line for line in calls if " run " in line]
        self.assertEqual(runs, ["base run round-1", "head run round-1", "head run round-2", "base run round-2"])
        self.assertEqual([line.split()[:2] for line in calls if " merge " in line or " compare " in line],
                         [["head", "merge"], ["head", "merge"], ["head", "compare"]])

        for side in ("base", "head"):
            merged = json.loads((outdir / f"{side}.json").read_text())
            self.assertTrue(merged["complete"], side)
            self.assertEqual(len(merged["merged_from"]), 2)
            self.assertEqual(len(merged["records"]), 2, "one record per cell, its rounds joined")
            for record in merged["records"]:
                self.assertEqual([r["round"] for r in record["timing"]["rounds"]], [1, 2])
                self.assertEqual(sum(r["samples"] for r in record["timing"]["rounds"]),
                                 len(record["timing"]["samples_seconds"]))
        self.assertTrue((outdir / "summary.md").read_text().strip())
        junit = ElementTree.parse(outdir / "junit.xml").getroot()
        self.assertEqual(len(junit.findall(".//testcase")), 2, "one test case per compared cell")
        self.assertEqual(junit.findall(".//failure"), [])
        self.assertIsInstance(json.loads((outdir / "compare.json").read_text()), dict)

    def test_a_regression_fails_the_gate_with_exit_one(self):
        regressed = self.wrapper("regressed", extra_peak_bytes=4096)
        outdir = self.directory / "gate"
        gate = self.gate_run(self.builds["base"], regressed, self.scenario, outdir, 2)
        self.assertEqual(gate.returncode, 1, gate.stdout + gate.stderr)
        self.assertIn("compare exited 1", gate.stdout)
        junit = ElementTree.parse(outdir / "junit.xml").getroot()
        self.assertEqual(len(junit.findall(".//failure")), 2, "both cells grew by 4 KiB")

    def test_a_cell_missing_from_the_head_is_not_a_pass(self):
        # Each side's merge is complete (the head ran every case of what it has), so
        # only compare sees that cpu.standard vanished.
        scenario = self.directory / "two_implementations.json"
        scenario.write_text(json.dumps(dict(SCENARIO, implementations=["cpu.flash", "cpu.standard"])))
        lossy = self.wrapper("lossy", only_impl="cpu.flash")
        outdir = self.directory / "gate"
        gate = self.gate_run(self.builds["base"], lossy, scenario, outdir, 2)
        self.assertEqual(gate.returncode, 3, gate.stdout + gate.stderr)
        self.assertIn("2 cells that ran in BASE are missing from NEW", gate.stdout)
        junit = ElementTree.parse(outdir / "junit.xml").getroot()
        self.assertEqual(len(junit.findall(".//error")), 2, "the missing cells are errors, not silently absent")

    def test_the_gate_refuses_to_allow_missing_cells(self):
        outdir = self.directory / "never"
        gate = self.gate_run(self.builds["base"], self.builds["head"], self.scenario, outdir, 2,
                             compare_args="--time-threshold 100 --allow-noisy --allow-missing")
        self.assertEqual(gate.returncode, 2, gate.stdout + gate.stderr)
        self.assertIn("--allow-missing", gate.stderr)
        self.assertFalse(self.log.exists())

    def test_bad_arguments_exit_two_before_running_anything(self):
        outdir = self.directory / "never"
        for arguments in ([self.builds["base"], self.builds["head"], self.scenario],
                          [self.builds["base"], self.builds["head"], self.scenario, outdir, "0"],
                          [self.directory / "absent", self.builds["head"], self.scenario, outdir]):
            gate = self.gate_run(*arguments)
            self.assertEqual(gate.returncode, 2, gate.stderr)
        self.assertFalse(self.log.exists())
        self.assertFalse(outdir.exists())

    def test_a_run_that_cannot_start_ends_the_gate_with_its_status(self):
        bad = self.directory / "bad.json"
        bad.write_text('{"name": "bad"}')
        gate = self.gate_run(self.builds["base"], self.builds["head"], bad, self.directory / "out", 2)
        self.assertEqual(gate.returncode, 2, gate.stdout + gate.stderr)
        self.assertIn("the base build failed in round 1/2 (exit 2)", gate.stderr)
        self.assertNotIn("compare", self.log.read_text())


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench binary", source_dir=None)
    attnbench_testing.run_unittests(rest)
