#!/usr/bin/env python3
"""The Slurm recipe (scripts/slurm/) without Slurm.

Runs scripts/slurm/attnbench-array.sbatch as array tasks 1..3 of 3 would run it
(a fake SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT environment) on a tiny CPU
scenario, reruns one task as a requeue would (it must resume, not redo), then
runs scripts/slurm/merge.sbatch and checks that the merged file is complete,
valid for Python's jsonschema too, and holds every (case, implementation) of
the scenario exactly once. Both scripts must also pass `bash -n`.
"""
import json
import subprocess

import attnbench_testing

jsonschema = attnbench_testing.require_module("jsonschema")

ARGS = None

SCENARIO = {
    "name": "slurm",
    "description": "three small cases for the Slurm recipe test",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "direction": "fwd"},
    "sweep": {"seqlen": [24, 40, 56]},
    "implementations": ["cpu.flash", "cpu.standard"],
    "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 2,
                "max_samples": 3, "min_seconds": 0, "max_seconds": 0.05},
}


class SlurmRecipe(attnbench_testing.ScenarioTestCase):
    prefix, scenario_content, scenario_file = "attnbench_slurm_", SCENARIO, "slurm.json"

    def setUp(self):
        super().setUp()
        self.results = self.directory / "results"
        self.scripts = ARGS.source_dir / "scripts" / "slurm"

    def environment(self, **variables):
        """This process's environment without any Slurm or recipe settings, plus `variables`."""
        recipe = ("SHARD_COUNT", "RUN_ARGS", "MERGE_ARGS", "MERGED")
        env = attnbench_testing.environment_without(*recipe, prefixes=("SLURM_",))
        env.update(ATTNBENCH=str(ARGS.binary), RESULTS_DIR=str(self.results), **variables)
        return env

    def array_task(self, task, count):
        return subprocess.run(
            ["bash", str(self.scripts / "attnbench-array.sbatch"), str(self.scenario)],
            env=self.environment(SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT=str(count)),
            capture_output=True, text=True, cwd=self.directory)

    def test_scripts_parse(self):
        for script in ("attnbench-array.sbatch", "merge.sbatch"):
            check = subprocess.run(["bash", "-n", str(self.scripts / script)], capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stderr)

    def test_array_tasks_then_merge_give_every_case_once(self):
        for task in (1, 2, 3):
            run = self.array_task(task, 3)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            part = json.loads((self.results / f"part-{task}.json").read_text())
            self.assertEqual(part["shard"], {"index": task, "count": 3})

        # A requeued task finds its complete part and runs nothing again.
        before = (self.results / "part-2.json").read_text()
        requeued = self.array_task(2, 3)
        self.assertEqual(requeued.returncode, 0, requeued.stdout + requeued.stderr)
        self.assertIn("already in the results file", requeued.stdout + requeued.stderr)
        self.assertEqual(json.loads(before)["records"],
                         json.loads((self.results / "part-2.json").read_text())["records"])

        merge = subprocess.run(["bash", str(self.scripts / "merge.sbatch")], env=self.environment(),
                               capture_output=True, text=True, cwd=self.directory)
        self.assertEqual(merge.returncode, 0, merge.stdout + merge.stderr)
        merged = json.loads((self.results / "merged.json").read_text())
        self.assertTrue(merged["complete"])
        schema = attnbench_testing.load_schema(ARGS.source_dir, "results.schema.json")
        jsonschema.Draft202012Validator(schema).validate(merged)
        self.assertEqual(sorted(entry["shard"]["index"] for entry in merged["merged_from"]), [1, 2, 3])

        listed = attnbench_testing.listed_scenario(ARGS.binary, self.scenario)
        expected = sorted((case["key"], implementation)
                          for case in listed["cases"]
                          for implementation in SCENARIO["implementations"])
        cells = sorted((record["case_key"], record["implementation"]) for record in merged["records"])
        self.assertEqual(cells, expected)

    def test_a_task_outside_an_array_is_refused(self):
        run = subprocess.run(["bash", str(self.scripts / "attnbench-array.sbatch"), str(self.scenario)],
                             env=self.environment(), capture_output=True, text=True, cwd=self.directory)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("sbatch --array=1-N", run.stderr)
        self.assertFalse(self.results.exists())

    def test_merge_without_parts_exits_two(self):
        merge = subprocess.run(["bash", str(self.scripts / "merge.sbatch")], env=self.environment(),
                               capture_output=True, text=True, cwd=self.directory)
        self.assertEqual(merge.returncode, 2, merge.stderr)
        self.assertIn("no part-*.json", merge.stderr)


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench binary", source_dir=None)
    attnbench_testing.run_unittests(rest)
