#!/usr/bin/env python3
"""attnbench-gbench end to end on tiny CPU scenarios.

Checks the JSON that Google Benchmark's tools/compare.py reads (context;
benchmarks[] with name, run_type, real_time, cpu_time, time_unit, iterations)
and our counters; the benchmark names (<scenario>/<implementation>/<case_key>,
the case keys of `attnbench list --json`, with Google Benchmark's /manual_time);
that a FLOP/s counter times the manual time gives the case's FLOPs; standard
flags (--benchmark_filter, also with an exact escaped name,
--benchmark_format=json, --benchmark_out, --benchmark_repetitions); a case
that cannot run reported as error_occurred while the run goes on; an accuracy
failure reported the same way with exit 1; bad input exiting 2 before any
benchmark runs.
"""
import json
import re
import shutil
import subprocess
import unittest

import attnbench_testing

ARGS = None

TINY = {
    "name": "tiny",
    "description": "two small cases",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 33, "seqlen_k": 20},
    "cases": [{"direction": "fwd"}, {"direction": "fwd+bwd", "causal": True, "dropout": 0.1}],
    "measure": {"cache": "hot"},
}
# Possible in principle, far too large for the machine: skipped with the numbers.
HUGE = {"name": "huge", "description": "does not fit",
        "defaults": {"batch": 4096, "heads": 64, "seqlen": 65536, "head_dim": 128}}
# A bound nothing meets: every checked implementation fails its accuracy check.
STRICT = dict(TINY, name="strict", accuracy={"bound": {"fp32": 1e-300}})
# A timing method this front end does not give: every benchmark skipped, saying so.
GRAPH = dict(TINY, name="graph", measure={"cache": "hot", "timing": "graph"})

FAST = "--benchmark_min_time=0.005s"  # the form Google Benchmark documents, whatever version is linked
TIME_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
POSIX_ERE_SPECIAL = re.compile(r"([\\.\[\]()*+?{}|^$])")


class GbenchFrontEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = attnbench_testing.make_temporary_directory("attnbench_gbench_")
        cls.scenarios = {}
        for scenario in (TINY, HUGE, STRICT, GRAPH):
            cls.scenarios[scenario["name"]] = attnbench_testing.write_scenario(
                cls.directory / f"{scenario['name']}.json", scenario)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory)

    def gbench(self, *arguments):
        return subprocess.run([str(ARGS.binary), *map(str, arguments)], capture_output=True, text=True)

    def expected_cases(self, scenario):
        """{case key: FLOPs of one call} from `attnbench list --json`, and the implementations."""
        entry = attnbench_testing.listed_scenario(ARGS.attnbench, self.scenarios[scenario])
        return {case["key"]: case["flops"]["total"] for case in entry["cases"]}, entry["implementations"]

    def test_json_for_compare_py_with_names_counters_and_a_skipped_case(self):
        run = self.gbench(f"--scenario={self.scenarios['tiny']}", "--scenario", self.scenarios["huge"],
                          "--benchmark_format=json", FAST)
        self.assertEqual(run.returncode, 0, run.stderr)
        output = json.loads(run.stdout)
        for key in ("date", "host_name", "executable", "num_cpus", "library_build_type"):
            self.assertIn(key, output["context"])

        flops_of_case, implementations = self.expected_cases("tiny")
        huge_keys, huge_implementations = self.expected_cases("huge")
        expected = {f"tiny/{i}/{key}/manual_time" for key in flops_of_case for i in implementations}
        expected |= {f"huge/{i}/{key}/manual_time" for key in huge_keys for i in huge_implementations}
        by_name = {benchmark["name"]: benchmark for benchmark in output["benchmarks"]}
        self.assertEqual(set(by_name), expected)
        self.assertEqual(len(by_name), len(output["benchmarks"]), "one result per benchmark")

        for name, benchmark in by_name.items():
            with self.subTest(name=name):
                scenario, implementation, rest = name.split("/", 2)
                for key in ("name", "run_type", "real_time", "cpu_time", "time_unit", "iterations"):
                    self.assertIn(key, benchmark)
                self.assertEqual(benchmark["run_type"], "iteration")
                if scenario == "huge":
                    self.assertTrue(benchmark["error_occurred"])
                    self.assertRegex(benchmark["error_message"], r"^needs .* available$")
                    continue
                self.assertNotIn("error_occurred", benchmark)
                self.assertEqual(benchmark["time_unit"], "us")
                self.assertGreaterEqual(benchmark["iterations"], 1)
                self.assertGreater(benchmark["real_time"], 0)
                for counter in ("flops", "compulsory_bytes", "bytes_per_second", "peak_bytes"):
                    self.assertGreater(benchmark[counter], 0, counter)
                self.assertGreaterEqual(benchmark["extra_bytes"], 0)
                counted = implementation != "cpu.reference"  # the tiled and the standard CPU ones count bytes
                self.assertEqual("counted_read_bytes" in benchmark, counted)
                if counted:
                    self.assertGreater(benchmark["counted_read_bytes"], 0)
                    self.assertGreater(benchmark["counted_write_bytes"], 0)
                # The rate is over the manual time: FLOP/s x seconds per call = the case's FLOPs.
                seconds = benchmark["real_time"] * TIME_UNIT_SECONDS[benchmark["time_unit"]]
                case_key = rest[: -len("/manual_time")]
                self.assertAlmostEqual(benchmark["flops"] * seconds / flops_of_case[case_key], 1.0, places=4)

    def test_the_context_names_the_attnbench_build_and_threads(self):
        run = self.gbench(f"--scenario={self.scenarios['tiny']}", "--threads=1", "--benchmark_format=json",
                          "--benchmark_filter=cpu\\.flash", FAST)
        self.assertEqual(run.returncode, 0, run.stderr)
        context = json.loads(run.stdout)["context"]
        info = json.loads(subprocess.run([str(ARGS.attnbench), "info", "--json"], capture_output=True, text=True,
                                         check=True).stdout)
        self.assertEqual(context["attnbench_version"], info["tool"]["version"])
        self.assertEqual(context["attnbench_git_revision"], info["tool"]["git_revision"])
        self.assertEqual(context["attnbench_threads"], "1")

    def test_listing_works_where_an_implementation_cannot_run(self):
        info = json.loads(subprocess.run([str(ARGS.attnbench), "info", "--json"], capture_output=True, text=True,
                                         check=True).stdout)
        unavailable = [i["name"] for i in info["implementations"] if not i["available"]]
        if not unavailable:
            self.skipTest("every implementation of this build can run here")
        scenario = attnbench_testing.write_scenario(self.directory / "gpu.json",
                                                    dict(TINY, name="gpu", implementations=unavailable[:1]))
        listing = self.gbench(f"--scenario={scenario}", "--benchmark_list_tests")
        self.assertEqual(listing.returncode, 0, listing.stderr)
        keys, _ = self.expected_cases("tiny")
        self.assertEqual(sorted(listing.stdout.split()),
                         sorted(f"gpu/{unavailable[0]}/{key}/manual_time" for key in keys))
        self.assertEqual(self.gbench(f"--scenario={scenario}", "--benchmark_list_tests=false").returncode, 4)
        self.assertEqual(self.gbench(f"--scenario={scenario}", FAST).returncode, 4, "running it is still refused")

    def test_filter_repetitions_and_benchmark_out(self):
        out = self.directory / "repetitions.json"
        run = self.gbench(f"--scenario={self.scenarios['tiny']}", r"--benchmark_filter=/cpu\.flash/", FAST,
                          "--benchmark_repetitions=3", f"--benchmark_out={out}", "--benchmark_out_format=json")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("tiny/cpu.flash/", run.stdout, "the console reporter still writes to stdout")
        benchmarks = json.loads(out.read_text())["benchmarks"]
        self.assertTrue(all("/cpu.flash/" in b["name"] for b in benchmarks))
        flops_of_case, _ = self.expected_cases("tiny")
        for case_key in flops_of_case:
            name = f"tiny/cpu.flash/{case_key}/manual_time"
            runs = [b for b in benchmarks if b["name"] == name and b["run_type"] == "iteration"]
            self.assertEqual(sorted(b["repetition_index"] for b in runs), [0, 1, 2])
            aggregates = {b["aggregate_name"] for b in benchmarks
                          if b["run_type"] == "aggregate" and b["run_name"] == name}
            self.assertTrue({"mean", "median", "stddev"} <= aggregates, aggregates)

    def test_an_exact_escaped_name_selects_one_benchmark(self):
        flops_of_case, _ = self.expected_cases("tiny")
        key = next(k for k in flops_of_case if "fwd+bwd" in k)  # has + ( ) , . in it
        pattern = "^" + POSIX_ERE_SPECIAL.sub(r"\\\1", f"tiny/cpu.standard/{key}") + "/manual_time$"
        run = self.gbench(f"--scenario={self.scenarios['tiny']}", f"--benchmark_filter={pattern}",
                          "--benchmark_format=json", FAST)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual([b["name"] for b in json.loads(run.stdout)["benchmarks"]],
                         [f"tiny/cpu.standard/{key}/manual_time"])

    def test_an_accuracy_failure_is_an_error_and_exit_one(self):
        run = self.gbench(f"--scenario={self.scenarios['strict']}", "--benchmark_format=json", FAST)
        self.assertEqual(run.returncode, 1, run.stderr)
        benchmarks = json.loads(run.stdout)["benchmarks"]
        self.assertEqual(len(benchmarks), 6)
        for benchmark in benchmarks:
            with self.subTest(name=benchmark["name"]):
                if "/cpu.reference/" in benchmark["name"]:  # the oracle is not checked against itself
                    self.assertNotIn("error_occurred", benchmark)
                else:
                    self.assertTrue(benchmark["error_occurred"])
                    self.assertTrue(benchmark["error_message"].startswith("accuracy: O: max abs error"),
                                    benchmark["error_message"])

    def test_a_timing_method_other_than_events_skips_with_the_reason(self):
        run = self.gbench(f"--scenario={self.scenarios['graph']}", "--benchmark_format=json", FAST)
        self.assertEqual(run.returncode, 0, run.stderr)
        benchmarks = json.loads(run.stdout)["benchmarks"]
        self.assertEqual(len(benchmarks), 6)
        for benchmark in benchmarks:
            with self.subTest(name=benchmark["name"]):
                self.assertTrue(benchmark["error_occurred"])
                self.assertTrue(benchmark["error_message"].startswith("this front end times by events only"),
                                benchmark["error_message"])

    def test_bad_input_exits_two_before_any_benchmark_runs(self):
        bad = self.directory / "bad.json"
        bad.write_text('{"name": "bad", "description": "typo", "defaults": {"hed_dim": 8}}')
        run = self.gbench(f"--scenario={bad}", "--benchmark_format=json")
        self.assertEqual(run.returncode, 2)
        self.assertIn(f"{bad}: defaults.hed_dim: unknown key", run.stderr)
        self.assertEqual(run.stdout, "", "nothing ran")

        tiny = f"--scenario={self.scenarios['tiny']}"
        for arguments, message in (([], "no scenario"),
                                   ([tiny, "--impl=cpu.nope"], 'unknown implementation "cpu.nope"'),
                                   ([tiny, "--threads=0"], "--threads=0"),
                                   ([tiny, "--benchmark_filter=nothing-matches"], "matches no benchmark"),
                                   ([tiny, "--no_such_flag"], "unrecognized"),
                                   ([tiny, "--benchmark_filer=cpu"], "--benchmark_filer: did you mean --benchmark_filter?"),
                                   ([tiny, "--scenarios=x.json"], "--scenarios: did you mean --scenario?")):
            with self.subTest(arguments=arguments):
                run = self.gbench(*arguments)
                self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
                self.assertIn(message, run.stdout + run.stderr)

        never = self.directory / "never.json"
        run = self.gbench(tiny, "--benchmark_filter=nothing-matches", f"--benchmark_out={never}")
        self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
        self.assertFalse(never.exists(), "bad input leaves no --benchmark_out file")


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench-gbench binary",
                                                        attnbench="the attnbench binary")
    attnbench_testing.run_unittests(rest)
