#!/usr/bin/env python3
"""scripts/compare_timing_methods.py, the GPU check's table of the timing methods.

The records come from a real run: the simulator timed with --timing graph
(hot), so the script reads the fields attnbench writes. The events and cupti
files are that run's with the method and median rewritten, as a GPU would give
them; the script must pass what meets the expectations (cupti and graph within
2% on long cases, events above both on short hot ones), name each case that
does not, and refuse a file that is no results file.
"""
import copy
import json
import subprocess
import sys

import attnbench_testing

ARGS = None

SCENARIO = {
    "name": "methods",
    "description": "one small simulated case timed by CUDA graph",
    "defaults": {"batch": 1, "heads": 1, "head_dim": 64, "seqlen": 64, "direction": "fwd"},
    "cases": [{}],
    "implementations": ["cudasim.flash"],
    "accuracy": {"check": False},
    "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
                "max_samples": 3, "min_seconds": 0, "max_seconds": 0.1, "graph_calls": 2},
}


class CompareTimingMethods(attnbench_testing.ScenarioTestCase):
    prefix, scenario_content, scenario_file = "attnbench_timing_methods_", SCENARIO, "methods.json"

    def setUp(self):
        super().setUp()
        graph = self.directory / "graph.json"
        run = subprocess.run([str(ARGS.binary), "run", str(self.scenario), "--timing", "graph", "-o", str(graph)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.graph = json.loads(graph.read_text())
        self.assertEqual([r["timing"]["method"] for r in self.graph["records"]], ["graph"])
        self.graph_p50 = self.graph["records"][0]["timing"]["statistics"]["p50"]
        self.files = [graph]

    def add_method(self, method, factor, launch_overhead=None):
        """A copy of the graph run as if timed by `method`, its median `factor` times the graph's."""
        results = copy.deepcopy(self.graph)
        timing = results["records"][0]["timing"]
        timing["method"] = method
        timing["statistics"]["p50"] = self.graph_p50 * factor
        if launch_overhead is not None:
            timing["cupti"] = {"launch_overhead_seconds": launch_overhead}
        path = self.directory / f"{method}.json"
        path.write_text(json.dumps(results))
        self.files.append(path)

    def compare(self, long_flops):
        return subprocess.run([sys.executable, str(ARGS.source_dir / "scripts" / "compare_timing_methods.py"),
                               *map(str, self.files), "--long-flops", str(long_flops)],
                              capture_output=True, text=True)

    def test_methods_that_agree_pass_as_long_and_as_short_cases(self):
        self.add_method("events", 1.3)
        self.add_method("cupti", 1.01, launch_overhead=4e-6)
        for long_flops in (0, 1e30):
            compared = self.compare(long_flops)
            self.assertEqual(compared.returncode, 0, compared.stdout + compared.stderr)
            self.assertIn("timing methods: as expected", compared.stdout)
            self.assertRegex(compared.stdout, r"cudasim\.flash\s+hot\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+4\.00\s+1\.010")

    def test_kernel_timers_that_disagree_on_a_long_case_fail(self):
        self.add_method("events", 1.3)
        self.add_method("cupti", 1.05)
        compared = self.compare(0)
        self.assertEqual(compared.returncode, 1, compared.stdout + compared.stderr)
        self.assertIn("cupti and graph differ by 5.0% (at most 2%)", compared.stdout)

    def test_events_below_a_kernel_timer_on_a_short_hot_case_fails(self):
        self.add_method("events", 0.9)
        self.add_method("cupti", 1.0)
        compared = self.compare(1e30)
        self.assertEqual(compared.returncode, 1, compared.stdout + compared.stderr)
        self.assertIn("not above cupti", compared.stdout)
        self.assertIn("not above graph", compared.stdout)

    def test_a_file_that_is_no_results_file_is_refused(self):
        bad = self.directory / "bad.json"
        bad.write_text("[]")
        self.files.append(bad)
        compared = self.compare(0)
        self.assertEqual(compared.returncode, 2, compared.stdout + compared.stderr)
        self.assertIn("bad.json: not a results file", compared.stderr)


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench binary", source_dir=None)
    attnbench_testing.run_unittests(rest)
