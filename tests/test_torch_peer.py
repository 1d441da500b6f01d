#!/usr/bin/env python3
"""scripts/torch_peer.py without a GPU.

What runs without PyTorch is checked against attnbench itself: the input
generator bit for bit against `attnbench run --dump`, the fp64 reference
against cpu.reference's outputs (masks, padding, GQA, backward), the
statistics against the harness's on real samples. The script end to end runs
with PyTorch hidden ("PyTorch is not installed") and with a stand-in torch
package that has no CUDA device ("no CUDA device"), the same on any machine:
every record skipped with the reason, exit 4, the case list that of
`attnbench list --json`, a file that validates against the results schema and
that `attnbench merge` and `attnbench report` take beside attnbench's own.
Bad input exits 2 and writes nothing.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

import attnbench_testing

jsonschema = attnbench_testing.require_module("jsonschema")
ARGS = None
BACKENDS = ["torch.flash", "torch.cudnn", "torch.efficient", "torch.math"]

# A small sweep that touches what the peer maps differently: GQA, bottom-right
# causal with Nq != Nk, a window, padding, dropout, the bhsd layout, bf16.
SCENARIO = {
    "name": "peer",
    "description": "small cases for the torch_peer test",
    "defaults": {"batch": 2, "heads": 4, "kv_heads": 2, "head_dim": 16, "seqlen_q": 24, "seqlen_k": 40},
    "cases": [
        {"direction": "fwd"},
        {"causal": True, "direction": "fwd+bwd", "dtype": "bf16"},
        {"window": [8, 0], "direction": "bwd", "layout": "bhsd"},
        {"seqlen": 32, "padding": {"shortfall": [0, 20], "seed": 3}, "causal": True, "direction": "fwd+bwd"},
        {"seqlen": 32, "dropout": 0.1, "direction": "fwd", "input": {"distribution": "uniform", "low": -2,
                                                                     "high": 2, "seed": 9}},
    ],
    "implementations": ["cpu.flash"],
    "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
                "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05},
    "accuracy": {"max_oracle_macs": 1e8, "bound": {"fp16": 0.02}},
}

# A torch that imports, has sdpa_kernel, and sees no CUDA device.
FAKE_TORCH = {
    "torch/__init__.py": "__version__ = '0.0-test'\n"
                         "from . import cuda, version, nn\n"
                         "def get_num_threads():\n    return 1\n",
    "torch/version.py": "cuda = None\n",
    "torch/cuda.py": "def is_available():\n    return False\n",
    "torch/nn/__init__.py": "from . import attention\n",
    "torch/nn/attention/__init__.py": "def sdpa_kernel(backends):\n    raise AssertionError('no device')\n",
}


class TorchPeer(attnbench_testing.ScenarioTestCase):
    prefix, scenario_content, scenario_file = "attnbench_peer_", SCENARIO, "peer.json"

    @classmethod
    def setUpClass(cls):
        cls.peer = attnbench_testing.load_script(ARGS.source_dir, "torch_peer")

    def run_peer(self, *arguments, torch_stub="missing"):
        """torch_peer.py with `import torch` failing ("missing") or finding FAKE_TORCH ("no_cuda")."""
        stub = self.directory / "stub"
        if torch_stub == "missing":
            (stub / "torch").mkdir(parents=True, exist_ok=True)
            (stub / "torch" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
        else:
            for name, text in FAKE_TORCH.items():
                (stub / name).parent.mkdir(parents=True, exist_ok=True)
                (stub / name).write_text(text)
        env = dict(os.environ, PYTHONPATH=str(stub))
        command = [sys.executable, str(ARGS.source_dir / "scripts" / "torch_peer.py"),
                   "--attnbench", str(ARGS.binary), *map(str, arguments)]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    def validate(self, path):
        document = json.loads(path.read_text())
        schema = attnbench_testing.load_schema(ARGS.source_dir, "results.schema.json")
        jsonschema.Draft202012Validator(schema).validate(document)
        return document

    # ---- end to end, without a device ----

    def test_without_torch_every_record_is_skipped(self):
        output = self.directory / "torch.json"
        run = self.run_peer(self.scenario, "-o", output)
        self.assertEqual(run.returncode, 4, run.stderr)
        document = self.validate(output)
        listed = attnbench_testing.listed_scenario(ARGS.binary, self.scenario)
        self.assertEqual([(r["case_key"], r["implementation"]) for r in document["records"]],
                         [(c["key"], i) for c in listed["cases"] for i in BACKENDS])
        for record, (case, _) in zip(document["records"], [(c, i) for c in listed["cases"] for i in BACKENDS]):
            self.assertEqual(record["status"], "skipped")
            self.assertEqual(record["reason"], "PyTorch is not installed")
            self.assertEqual(record["problem"], case["problem"])
            self.assertEqual(record["flops"], case["flops"])
            self.assertEqual(record["case_origin"], case["origin"])
            self.assertEqual(record["case_index"], case["index"])
        self.assertTrue(document["complete"])
        self.assertEqual(document["devices"], [])
        scenario = document["scenarios"][0]
        self.assertEqual(scenario["implementations"], BACKENDS)
        self.assertEqual(scenario["case_count"], len(listed["cases"]))
        self.assertEqual(scenario["source"], SCENARIO)

    def test_without_a_cuda_device(self):
        output = self.directory / "torch.json"
        run = self.run_peer(self.scenario, "-o", output, "--backends", "flash,math", torch_stub="no_cuda")
        self.assertEqual(run.returncode, 4, run.stderr)
        document = self.validate(output)
        self.assertEqual({r["implementation"] for r in document["records"]}, {"torch.flash", "torch.math"})
        for record in document["records"]:
            self.assertEqual(record["status"], "skipped")
            self.assertTrue(record["reason"].startswith("no CUDA device"), record["reason"])
        self.assertIn("PyTorch 0.0-test", document["tool"]["compiler"])

    def test_the_readmes_gpu_scenario_without_a_gpu(self):
        """`scripts/torch_peer.py scenarios/fa2/fwd.json -o torch.json`: the scenario names CUDA
        implementations this machine cannot run; the peer still lists its cases, skips every
        record and exits 4 with a valid file (docs/peers.md)."""
        info = json.loads(subprocess.run([str(ARGS.binary), "info", "--json"], capture_output=True, text=True,
                                         check=True).stdout)
        if not info["tool"]["cuda_built"]:
            self.skipTest("built without CUDA: the scenario's cuda.* names are unknown to this binary")
        output = self.directory / "torch.json"
        scenario = ARGS.source_dir / "scenarios" / "fa2" / "fwd.json"
        run = self.run_peer(scenario, "-o", output)
        self.assertEqual(run.returncode, 4, run.stderr)
        document = self.validate(output)
        listed = attnbench_testing.listed_scenario(ARGS.binary, scenario)
        self.assertEqual(len(document["records"]), len(listed["cases"]) * len(BACKENDS))
        self.assertTrue(all(record["status"] == "skipped" for record in document["records"]))

    def test_filter_selects_as_attnbench_does(self):
        output = self.directory / "torch.json"
        run = self.run_peer(self.scenario, "-o", output, "--filter", "causal", "--backends", "torch.cudnn")
        self.assertEqual(run.returncode, 4, run.stderr)
        document = self.validate(output)
        listing = subprocess.run([str(ARGS.binary), "list", "--json", str(self.scenario), "--filter", "causal"],
                                 capture_output=True, text=True, check=True)
        keys = [c["key"] for c in json.loads(listing.stdout)["scenarios"][0]["cases"]]
        self.assertEqual([r["case_key"] for r in document["records"]], keys)
        self.assertEqual(document["scenarios"][0]["case_count"], len(SCENARIO["cases"]))

    def test_the_output_is_written_as_attnbench_run_writes_it(self):
        output = self.directory / "new" / "dir" / "torch.json"
        run = self.run_peer(self.scenario, "-o", output)
        self.assertEqual(run.returncode, 4, run.stderr)
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(output.stat().st_mode & 0o777, 0o644 & ~umask, "readable as attnbench's files are")
        self.assertEqual(run.stdout, "")
        self.assertIn("nothing can run here: PyTorch is not installed. Every record is skipped", run.stderr)
        self.assertIn(f"records in {output})", run.stderr)

        written = output.read_text()
        again = self.run_peer(self.scenario, "-o", output)
        self.assertEqual(again.returncode, 2, again.stderr)
        self.assertIn("exists; --overwrite replaces it", again.stderr)
        self.assertEqual(output.read_text(), written, "an existing file is kept")
        self.assertEqual(self.run_peer(self.scenario, "-o", output, "--overwrite").returncode, 4)

        (self.directory / "plain").write_text("a file")
        under_a_file = self.run_peer(self.scenario, "-o", self.directory / "plain" / "torch.json")
        self.assertEqual(under_a_file.returncode, 2, under_a_file.stderr)
        self.assertIn("-o: cannot create or write into the directory", under_a_file.stderr)

    def test_bad_input_exits_2_and_writes_nothing(self):
        output = self.directory / "torch.json"
        typo = attnbench_testing.write_scenario(
            self.directory / "typo.json", dict(SCENARIO, defaults=dict(SCENARIO["defaults"], hed_dim=8)))
        cases = [
            ([typo], "defaults.hed_dim: unknown key"),
            ([self.directory / "missing.json"], "missing.json"),
            ([self.scenario, "--backends", "flash,tensorrt"], 'unknown backend "tensorrt"'),
            ([self.scenario, "--filter", "no-such-case"], "matches no case"),
            ([self.scenario, "--device", "-1"], "--device"),
            ([self.scenario, "--no-such-option"], "--no-such-option"),
            # Checked before PyTorch is: without it, a typo would otherwise read as "PyTorch is not installed".
            ([self.scenario, "--callable", "no_such_kernels:attention"],
             "no module no_such_kernels on the Python path"),
        ]
        for arguments, message in cases:
            with self.subTest(arguments=arguments):
                run = self.run_peer(*arguments, "-o", output)
                self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
                self.assertIn(message, run.stderr)
                self.assertFalse(output.exists())
        run = subprocess.run([sys.executable, str(ARGS.source_dir / "scripts" / "torch_peer.py"), str(self.scenario),
                              "--attnbench", str(self.directory / "nothing"), "-o", str(output)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 2)
        self.assertIn("does not exist", run.stderr)
        self.assertFalse(output.exists())

    def test_merge_and_report_put_both_in_one_table(self):
        # The test's scenario, and a shipped one with comments and measure settings of its own:
        # merge accepts the peer's file only if it records the scenario exactly as attnbench does.
        for scenario in (self.scenario, ARGS.source_dir / "scenarios" / "quick.json"):
            with self.subTest(scenario=scenario.name):
                self.check_merge_and_report(scenario)

    def check_merge_and_report(self, scenario):
        ours, theirs, merged = (self.directory / f"{scenario.stem}.{n}.json" for n in ("attnbench", "torch", "merged"))
        run = subprocess.run([str(ARGS.binary), "run", str(scenario), "--impl", "cpu.flash", "-o", str(ours)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(self.run_peer(scenario, "-o", theirs).returncode, 4)
        merge = subprocess.run([str(ARGS.binary), "merge", str(ours), str(theirs), "-o", str(merged)],
                               capture_output=True, text=True)
        self.assertEqual(merge.returncode, 0, merge.stderr)
        document = self.validate(merged)
        self.assertEqual(document["scenarios"][0]["implementations"], ["cpu.flash", *BACKENDS])
        cases = len(attnbench_testing.listed_scenario(ARGS.binary, scenario)["cases"])
        self.assertEqual(len(document["records"]), cases * (1 + len(BACKENDS)))
        for sources in ([merged], [ours, theirs]):
            report = subprocess.run([str(ARGS.binary), "report", *map(str, sources), "--table", "seqlen",
                                     "--format", "json"], capture_output=True, text=True)
            self.assertEqual(report.returncode, 0, report.stderr)
            table = json.loads(report.stdout)
            implementations = {c.get("implementation") for c in table["columns"]} - {None}
            self.assertEqual(implementations, {"cpu.flash", *BACKENDS})
            markers = [cell for group in table["groups"] for row in group["rows"] for cell in row
                       if isinstance(cell, dict) and "marker" in cell]
            self.assertTrue(markers)
            self.assertTrue(all(m["reason"] == "PyTorch is not installed" for m in markers))
            self.assertEqual(sum(len(g["rows"]) for g in table["groups"]), cases)

    # ---- the parts that mirror attnbench, checked against it ----

    def test_inputs_and_reference_match_attnbench(self):
        dump, results = self.directory / "dump", self.directory / "reference.json"
        run = subprocess.run([str(ARGS.binary), "run", str(self.scenario), "--impl", "cpu.reference",
                              "-o", str(results), "--dump", str(dump)], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        index = json.loads((dump / "index.json").read_text())["arrays"]
        listed = attnbench_testing.listed_scenario(ARGS.binary, self.scenario)
        for case in listed["cases"]:
            problem = case["problem"]
            arrays = {a["tensor"]: a for a in index if a["case_index"] == case["index"]}
            inputs = {}
            with self.subTest(case=case["key"]):
                for name in ("Q", "K", "V", "dO"):
                    if name not in arrays:
                        continue
                    stored = np.load(dump / arrays[name]["file"])
                    bits = stored.view(np.uint16) if stored.dtype != np.uint16 else stored
                    expected = self.peer.host_input(problem, name).reshape(self.peer.logical_shape(problem, name))
                    if problem["layout"] == "bhsd":
                        expected = expected.transpose(0, 2, 1, 3)
                    np.testing.assert_array_equal(bits, expected, err_msg=f"{name} differs from the harness's")
                    logical = bits.transpose(0, 2, 1, 3) if problem["layout"] == "bhsd" else bits
                    inputs[name] = self.peer.storage_to_float64(np.ascontiguousarray(logical), problem["dtype"])
                if problem["dropout"]["p"] == 0:
                    self.check_reference(problem, inputs, dump, arrays)

    def test_signed_integers_give_the_same_inputs(self):
        """The device generator runs on torch int64 (wrapping multiply, arithmetic shift); numpy
        int64 has the same semantics, so this is the device path's arithmetic on the host."""
        peer = self.peer

        class SignedOps(peer.NumpyOps):
            @staticmethod
            def arange(start, stop):
                return np.arange(start, stop, dtype=np.int64)

            full = staticmethod(lambda like, value: np.full(like.shape, value, dtype=np.int64))

        for distribution in ({"distribution": "normal", "mean": 0.5, "std": 2.0, "seed": 2**63 + 12345},
                             {"distribution": "uniform", "low": -3.0, "high": 1.0, "seed": 7}):
            with np.errstate(over="ignore"):
                signed = peer.input_values(SignedOps, distribution["seed"], "V", 2**33 - 100, 4096, distribution)
            unsigned = peer.input_values(peer.NumpyOps, distribution["seed"], "V", 2**33 - 100, 4096, distribution)
            np.testing.assert_array_equal(signed, unsigned)

    def check_reference(self, problem, inputs, dump, arrays):
        """reference_unit over every (batch, kv head) against cpu.reference's fp64 outputs."""
        group = problem["heads"] // problem["kv_heads"]
        d_out = inputs.get("dO")
        if d_out is not None and problem["padding"]["kind"] != "none":
            d_out = d_out.copy()
            for b, length in enumerate(problem["padding"]["lengths_q"]):
                d_out[b, length:] = 0  # what the peer feeds SDPA
        oracle = {name: np.load(dump / a["file"]) for name, a in arrays.items() if a["implementation"] == "cpu.reference"}
        for name in ("O", "dQ", "dK", "dV"):
            if name in oracle and problem["layout"] == "bhsd":
                oracle[name] = oracle[name].transpose(0, 2, 1, 3)
        checked = 0
        for b in range(problem["batch"]):
            valid = self.peer.valid_rows(problem, b)
            for kv_head in range(problem["kv_heads"]):
                heads = slice(kv_head * group, (kv_head + 1) * group)
                result = self.peer.reference_unit(
                    inputs["Q"][b, :, heads].transpose(1, 0, 2), inputs["K"][b, :, kv_head], inputs["V"][b, :, kv_head],
                    None if d_out is None else d_out[b, :, heads].transpose(1, 0, 2),
                    self.peer.visible_matrix(problem, b), problem["scale"], key_side=True)
                for name in ("O", "dQ"):
                    if name in oracle:
                        expected = oracle[name][b, :valid, heads].transpose(1, 0, 2)
                        np.testing.assert_allclose(result[name][:, :valid], expected, rtol=0, atol=1e-10,
                                                   err_msg=name)
                        checked += 1
                if "LSE" in oracle:
                    expected = oracle["LSE"][b, heads, :valid]
                    np.testing.assert_allclose(result["LSE"][:, :valid], expected, rtol=1e-6, atol=1e-6)
                for name in ("dK", "dV"):
                    if name in oracle:
                        np.testing.assert_allclose(result[name], oracle[name][b, :, kv_head], rtol=0, atol=1e-10,
                                                   err_msg=name)
                        checked += 1
        self.assertGreater(checked, 0)

    def test_statistics_match_the_harness(self):
        results = self.directory / "results.json"
        attnbench_testing.run_scenario(ARGS.binary, self.scenario, results)
        for record in json.loads(results.read_text())["records"]:
            ours = self.peer.summarize(record["timing"]["samples_seconds"])
            for key, value in record["timing"]["statistics"].items():
                if isinstance(value, bool) or not isinstance(value, float):
                    self.assertEqual(ours[key], value, key)
                else:
                    self.assertTrue(math.isclose(ours[key], value, rel_tol=1e-12), (key, ours[key], value))
        for n in (1, 5, 6, 9, 17, 100, 1001):
            low, high = self.peer.median_confidence_ranks(n, 0.95)
            self.assertTrue(low == 0 or low + high == n + 1)
        self.assertEqual(self.peer.median_confidence_ranks(5, 0.95), (0, 0))
        self.assertEqual(self.peer.median_confidence_ranks(6, 0.95), (1, 6))

    def test_measure_stops_as_the_harness_does(self):
        settings = dict(self.peer.MEASURE_DEFAULTS, warmup_min_iterations=3, warmup_min_seconds=0, warmup_window=0,
                        min_samples=10,
                        min_seconds=0, max_samples=50, max_seconds=100)
        calls, flushes = [], []
        result = self.peer.measure(settings, lambda call: (call(), 1e-3)[1], lambda: flushes.append(1),
                                   lambda: calls.append(1))
        self.assertEqual(result["warmup_iterations"], 3)
        self.assertEqual(result["stop_reason"], "converged")
        self.assertEqual(len(result["samples_seconds"]), 10)
        self.assertEqual(len(calls), 13)
        self.assertEqual(len(flushes), 13)
        noisy = iter([1e-3 * (1 + (i % 7)) for i in range(1000)])
        result = self.peer.measure(dict(settings, max_samples=20), lambda call: next(noisy), lambda: None,
                                   lambda: None)
        self.assertEqual((result["stop_reason"], result["converged"], len(result["samples_seconds"])),
                         ("max_samples", False, 20))
        # The time limit never leaves fewer than min_samples: a clock that jumps 1 s a call.
        ticks = iter(range(1000))
        result = self.peer.measure(dict(settings, max_seconds=0.5), lambda call: next(noisy), lambda: None,
                                   lambda: None, clock=lambda: float(next(ticks)))
        self.assertEqual((result["stop_reason"], len(result["samples_seconds"])), ("max_seconds", 10))

    def test_accuracy_sample_stays_within_the_budget(self):
        listed = attnbench_testing.listed_scenario(ARGS.binary, self.scenario)
        problem = dict(listed["cases"][1]["problem"], batch=64, seqlen_q=4096, seqlen_k=4096)
        settings = dict(self.peer.ACCURACY_DEFAULTS, max_oracle_macs=1e8)
        plan = self.peer.plan_sample(problem, settings)
        self.assertFalse(plan["complete"])
        self.assertLessEqual(plan["macs"], 1e8)
        self.assertIn(0, plan["rows"])
        self.assertIn(4095, plan["rows"])
        self.assertFalse(plan["key_side"])
        small = self.peer.plan_sample(listed["cases"][1]["problem"], settings)
        self.assertTrue(small["complete"] and small["key_side"])
        self.assertEqual(len(small["units"]), 2 * 2)


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench binary", source_dir="the checkout")
    attnbench_testing.run_unittests(rest)
