#!/usr/bin/env python3
"""Plug-ins end to end: the CPU example built with the one compiler command the
docs give (outside attnbench's build, as a user builds it) and run through
`attnbench run`, `bench`, `list`, `info`, `validate` and `attnbench-gbench`:
it matches the oracle under the fused-versus-baseline rule, its memory is
accounted (peak = inputs + outputs + the workspace it asked for), its records
carry the library's path, SHA-256 and version, and the deliberately wrong build
fails the accuracy check. Bad plug-ins exit 2 naming the file and write
nothing; a callback's error fails only its record; a callback that crashes the
process is recorded as failed by --resume; --resume and merge refuse records of
another build of a plug-in, and the pull-request gate of docs/plugins.md
compares two builds.
"""
import hashlib
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

import attnbench_testing

jsonschema = attnbench_testing.require_module("jsonschema")
ARGS = None

# The command docs/plugins.md and the example's opening comment give.
CPU_COMMAND = ("cc -std=c11 -O2 -fPIC -shared -fopenmp -I include examples/plugins/cpu_attention.c "
               "-o libcpu_attention.so -lm")

CUDA_COMMAND = ("nvcc -O2 -shared -Xcompiler -fPIC -cudart shared -I include "
                "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                "examples/plugins/cuda_attention.cu -o libcuda_attention.so")

SCENARIO = {
    "name": "plugin",
    "description": "small cases for the plug-in tests",
    "defaults": {"batch": 2, "heads": 4, "kv_heads": 2, "head_dim": 16, "seqlen_q": 24, "seqlen_k": 40},
    "cases": [
        {"direction": "fwd"},
        {"causal": True, "direction": "fwd+bwd", "dtype": "bf16"},
        {"window": [8, 0], "align": "top_left", "direction": "bwd", "layout": "bhsd"},
        {"seqlen": 32, "padding": {"shortfall": [0, 20], "seed": 3}, "causal": True, "direction": "fwd+bwd"},
        {"seqlen": 32, "dropout": 0.1, "direction": "fwd"},
    ],
    "implementations": ["cpu.standard"],
    "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
                "max_samples": 5, "min_seconds": 0, "max_seconds": 0.02},
}
THREADS = 2


def build_example(directory, name="libcpu_attention.so", extra=(), documented=CPU_COMMAND, compiler=None):
    """The documented command (run by `compiler` when given), run from the checkout, writing DIRECTORY/NAME."""
    command = shlex.split(documented)
    if compiler:
        command[0] = compiler
    command[command.index("-o") + 1] = str(directory / name)
    command += list(extra)
    subprocess.run(command, cwd=ARGS.source_dir, check=True)
    return directory / name


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


class Plugins(attnbench_testing.ScenarioTestCase):
    prefix, scenario_content, scenario_file = "attnbench_plugins_", SCENARIO, "plugin.json"

    @classmethod
    def setUpClass(cls):
        cls.built = attnbench_testing.make_temporary_directory("attnbench_plugin_builds_")
        cls.example = build_example(cls.built)
        cls.wrong = build_example(cls.built, "libcpu_attention_wrong.so", ["-DATTNBENCH_EXAMPLE_WRONG"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.built)

    def attnbench(self, *arguments, env=None, timeout=None):
        environment = attnbench_testing.environment_without("ATTNBENCH_PLUGINS", "ATTNBENCH_RESTARTS")
        environment.update(env or {})
        return subprocess.run([str(ARGS.binary), *map(str, arguments)], capture_output=True, text=True,
                              env=environment, timeout=timeout)

    def run_plugin(self, output, *arguments):
        return self.attnbench("run", self.scenario, "-o", output, "--threads", THREADS, *arguments)

    def validated(self, path):
        document = json.loads(pathlib.Path(path).read_text())
        schema = attnbench_testing.load_schema(ARGS.source_dir, "results.schema.json")
        jsonschema.Draft202012Validator(schema).validate(document)
        return document

    def test_the_build_commands_are_the_documented_ones(self):
        docs = (ARGS.source_dir / "docs" / "plugins.md").read_text()
        self.assertIn(CPU_COMMAND, docs)
        self.assertIn(CUDA_COMMAND, docs)
        opening = (ARGS.source_dir / "examples" / "plugins" / "cpu_attention.c").read_text()
        self.assertIn(CPU_COMMAND.replace(" -o ", " \\\n *      -o "), opening)
        opening = (ARGS.source_dir / "examples" / "plugins" / "cuda_attention.cu").read_text()
        self.assertIn(CUDA_COMMAND.replace(" -gencode arch=compute_80", " \\\n *        -gencode arch=compute_80")
                      .replace(" examples/", " \\\n *        examples/"), opening)

    def test_the_documented_cxx_and_cuda_commands_build_a_plugin_that_loads(self):
        """docs/plugins.md's C++ and CUDA commands, run as written in an empty directory on a copy of
        the matching example (the C example is valid C++)."""
        docs = (ARGS.source_dir / "docs" / "plugins.md").read_text().splitlines()
        commands = {line.split()[0]: line for line in docs if line.startswith(("c++ ", "nvcc -std=c++17 "))}
        self.assertEqual(set(commands), {"c++", "nvcc"})
        nvcc = os.environ.get("ATTNBENCH_TEST_NVCC")
        for compiler, source, name in (("c++", "cpu_attention.c", "cpu.example"),
                                       ("nvcc", "cuda_attention.cu", "cuda.example")):
            with self.subTest(compiler=compiler):
                if compiler == "nvcc" and not nvcc:
                    self.skipTest("built without CUDA: no nvcc")
                directory = self.directory / compiler.replace("+", "x")
                directory.mkdir()
                command = shlex.split(commands[compiler].replace("$ATTNBENCH", str(ARGS.source_dir)))
                shutil.copy(ARGS.source_dir / "examples" / "plugins" / source, directory / command[-3])
                if compiler == "nvcc":
                    command[0] = nvcc
                subprocess.run(command, cwd=directory, check=True)
                info = self.attnbench("info", "--json", "--plugin", directory / "libmy_attention.so")
                self.assertEqual(info.returncode, 0, info.stderr)
                self.assertIn(name, info.stdout)

    def test_the_cuda_example_builds_and_loads_without_a_gpu(self):
        """Built for sm_80 and sm_90 by the documented command; on a machine without a GPU
        `list` shows why it cannot run and `run` exits 4 (scripts/device-check.sh runs it on one)."""
        nvcc = os.environ.get("ATTNBENCH_TEST_NVCC")
        if not nvcc:
            self.skipTest("built without CUDA: no nvcc")
        library = build_example(self.directory, "libcuda_attention.so", documented=CUDA_COMMAND, compiler=nvcc)
        listing = self.attnbench("list", "--json", self.scenario, "--plugin", library, "--impl", "cuda.example")
        self.assertEqual(listing.returncode, 0, listing.stderr)
        verdicts = [c["implementations"]["cuda.example"] for c in json.loads(listing.stdout)["scenarios"][0]["cases"]]
        info = json.loads(self.attnbench("info", "--json").stdout)
        cuda = next(d for d in info["devices"] if d["device"] == "cuda")
        if cuda["available"]:
            self.skipTest("a GPU is present: scripts/device-check.sh runs the example")
        self.assertTrue(all(not v["available"] and v["reason"] == cuda["reason"] for v in verdicts), verdicts)
        run = self.run_plugin(self.directory / "results.json", "--plugin", library, "--impl", "cuda.example")
        self.assertEqual(run.returncode, 4, run.stdout + run.stderr)
        self.assertIn("cuda.example was requested (--impl) but cannot run on this machine", run.stderr)

    # ---- the example, as a user runs it ----

    def test_example_matches_the_oracle_and_accounts_its_memory(self):
        output = self.directory / "results.json"
        run = self.run_plugin(output, "--plugin", self.example, "--impl", "cpu.standard,cpu.example")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        document = self.validated(output)
        path = str(self.example.resolve())
        self.assertEqual(document["plugins"], [{"path": path, "sha256": sha256(self.example),
                                                "implementations": [{"name": "cpu.example", "version": "1.0.0"}]}])
        records = [r for r in document["records"] if r["implementation"] == "cpu.example"]
        self.assertEqual(len(records), len(SCENARIO["cases"]))
        for record in records:
            with self.subTest(case=record["case_key"]):
                self.assertEqual(record["plugin"], {"path": path, "sha256": sha256(self.example), "version": "1.0.0"})
                problem = record["problem"]
                if problem["dropout"]["p"] > 0:
                    self.assertEqual((record["status"], record["reason"]), ("skipped", "no dropout in this example"))
                    continue
                self.assertEqual(record["status"], "ok", record["reason"])
                self.assertEqual(record["configuration"],
                                 {"algorithm": "fused", "output_dtype": problem["dtype"],
                                  "plugin": "one score row per thread", "threads": THREADS})
                accuracy = record["accuracy"]
                self.assertEqual((accuracy["status"], accuracy["baseline"], accuracy["rule_applied"]),
                                 ("passed", "cpu.standard", True))
                backward = problem["direction"] != "fwd"
                floats = problem["seqlen_k"] + problem["head_dim"] + (
                    2 * problem["seqlen_k"] * problem["head_dim"] if backward else 0)
                workspace = -(-THREADS * floats * 4 // 256) * 256
                memory = record["memory"]
                self.assertEqual(memory["workspace_bytes"], workspace)
                self.assertEqual(memory["peak_bytes"],
                                 memory["input_bytes"] + memory["output_bytes"] + memory["workspace_bytes"])
                self.assertEqual(memory["extra_bytes"], workspace)
                self.assertGreater(record["timing"]["statistics"]["count"], 0)
        report = self.attnbench("report", output, "--table", "seqlen", "--format", "json")
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn("cpu.example", {c.get("implementation") for c in json.loads(report.stdout)["columns"]})

    def test_the_wrong_build_fails_its_accuracy_check(self):
        output = self.directory / "results.json"
        run = self.run_plugin(output, "--plugin", self.example, "--plugin", self.wrong,
                              "--impl", "cpu.standard,cpu.example,cpu.example_wrong", "--filter", "causal")
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        statuses = {(r["case_key"], r["implementation"]): r for r in self.validated(output)["records"]}
        self.assertEqual(len(statuses), 2 * 3)
        for (key, implementation), record in statuses.items():
            if implementation == "cpu.example_wrong":
                self.assertEqual(record["status"], "failed")
                self.assertTrue(record["reason"].startswith("accuracy: "), record["reason"])
            else:
                self.assertEqual(record["status"], "ok", (key, implementation, record["reason"]))

    def test_every_command_takes_plugins_from_the_flag_and_the_environment(self):
        environment = {"ATTNBENCH_PLUGINS": f"{self.built / 'missing-but-unused'}"}
        run = self.attnbench("list", self.scenario, "--impl", "cpu.example", env=environment)
        self.assertEqual(run.returncode, 2)  # a listed plug-in must exist
        self.assertIn("missing-but-unused: no such file", run.stderr)

        environment = {"ATTNBENCH_PLUGINS": f"::{self.example}:"}
        listing = self.attnbench("list", "--json", self.scenario, "--impl", "cpu.example", env=environment)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        verdicts = [c["implementations"]["cpu.example"] for c in json.loads(listing.stdout)["scenarios"][0]["cases"]]
        self.assertEqual([v["runs"] for v in verdicts], [True, True, True, True, False])
        info = self.attnbench("info", "--json", "--plugin", self.example, env=environment)  # the same file, once
        self.assertEqual(info.returncode, 0, info.stderr)
        info = json.loads(info.stdout)
        self.assertEqual([p["path"] for p in info["plugins"]], [str(self.example.resolve())])
        entry = next(i for i in info["implementations"] if i["name"] == "cpu.example")
        self.assertEqual(entry["plugin"]["version"], "1.0.0")

        naming = attnbench_testing.write_scenario(self.directory / "naming.json",
                                                  dict(SCENARIO, implementations=["cpu.example"]))
        self.assertEqual(self.attnbench("validate", naming).returncode, 2)
        self.assertEqual(self.attnbench("validate", naming, "--plugin", self.example).returncode, 0)

        bench = self.attnbench("bench", "--plugin", self.example, "--impl", "cpu.example,cpu.standard", "--batch", "1",
                               "--heads", "2", "--seqlen", "32", "--head-dim", "16", "--causal", "--min-samples", "2",
                               "--max-time", "0.01", "-o", self.directory / "bench.json")
        self.assertEqual(bench.returncode, 0, bench.stdout + bench.stderr)
        self.assertEqual({r["status"] for r in self.validated(self.directory / "bench.json")["records"]}, {"ok"})

        gbench = subprocess.run([str(ARGS.gbench), f"--scenario={self.scenario}", f"--plugin={self.example}",
                                 "--impl=cpu.example", "--benchmark_filter=/cpu.example/.*-fwd-in",
                                 "--benchmark_min_time=0.005", "--benchmark_format=json"],
                                capture_output=True, text=True,
                                env=attnbench_testing.environment_without("ATTNBENCH_PLUGINS"))
        self.assertEqual(gbench.returncode, 0, gbench.stderr)
        benchmarks = json.loads(gbench.stdout)["benchmarks"]
        self.assertEqual(len(benchmarks), 1)
        self.assertNotIn("error_occurred", benchmarks[0])

    # ---- bad plug-ins, failing and crashing callbacks ----

    def test_bad_plugins_exit_2_naming_the_file_and_write_nothing(self):
        text = self.directory / "notes.so"
        text.write_text("not a library\n")
        copy = self.directory / "copy.so"
        shutil.copy(self.example, copy)
        output = self.directory / "results.json"
        cases = [
            ([text], "is not a shared library"),
            ([self.directory / "absent.so"], "no such file"),
            ([ARGS.test_plugins / "libtest_plugin_other_abi.so"], "built for plug-in ABI version 999"),
            ([ARGS.test_plugins / "libtest_plugin_no_register.so"], "exports no attnbench_plugin_register"),
            ([ARGS.test_plugins / "libtest_plugin_builtin_clash.so"], "is already the name of a built-in"),
            ([ARGS.test_plugins / "libtest_plugin_bad_name.so"], "outside the allowed"),
            ([self.example, copy], f"is already the name of an implementation of the plug-in "
                                   f"{self.example.resolve()}"),
        ]
        for number, (plugins, message) in enumerate(cases):
            flags = [argument for plugin in plugins for argument in ("--plugin", plugin)]
            commands = [["run", self.scenario, "-o", output]] + ([["list", self.scenario], ["info"]] if number == 0 else [])
            for command in commands:
                with self.subTest(plugins=[p.name for p in plugins], command=command[0]):
                    run = self.attnbench(*command, *flags)
                    self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
                    self.assertIn(f"attnbench: error: {plugins[-1]}: ", run.stderr)
                    self.assertIn(message, run.stderr)
                    self.assertFalse(output.exists())

    def test_a_plugins_user_data_is_released_once_when_the_command_ends(self):
        plugin = ARGS.test_plugins / "libtest_plugin_releases.so"
        log = self.directory / "release.log"
        output = self.directory / "results.json"
        for command in (["list", self.scenario], ["run", self.scenario, "-o", output, "--impl", "cpu.test_release_a"]):
            with self.subTest(command=command[0]):
                log.unlink(missing_ok=True)
                run = self.attnbench(*command, "--plugin", plugin, env={"ATTNBENCH_TEST_RELEASE_LOG": str(log)})
                self.assertEqual(run.returncode, 0 if command[0] == "list" else 1, run.stdout + run.stderr)
                self.assertEqual(log.read_text().splitlines(),
                                 ["minor 1", "released cpu.test_release_a", "released cpu.test_release_b"])

    def test_impl_replaces_a_scenario_list_that_names_a_plugin_not_loaded(self):
        scenario = attnbench_testing.write_scenario(self.directory / "other.json", dict(
            SCENARIO, implementations=["cpu.standard", "cpu.example"]))
        plugin = ARGS.test_plugins / "libtest_plugin_misbehaving.so"
        output = self.directory / "results.json"
        for command in (["list", scenario], ["run", scenario, "-o", output]):
            with self.subTest(command=command[0]):
                run = self.attnbench(*command, "--plugin", plugin, "--impl", "cpu.standard,cpu.test_error",
                                     "--filter", "q24-k40-d16-fp16-bshd-fwd-in")
                self.assertEqual(run.returncode, 0 if command[0] == "list" else 1, run.stdout + run.stderr)
                self.assertIn("cpu.test_error", run.stdout + run.stderr)
        self.assertEqual({r["implementation"] for r in self.validated(output)["records"]},
                         {"cpu.standard", "cpu.test_error"})
        # Without --impl the scenario's list stands, and an implementation not loaded is bad input.
        refused = self.attnbench("run", scenario, "-o", self.directory / "refused.json", "--plugin", plugin)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn('unknown implementation "cpu.example"', refused.stderr)

    def test_the_torch_peer_expands_a_scenario_naming_a_plugin(self):
        scenario = attnbench_testing.write_scenario(self.directory / "mine.json", dict(
            SCENARIO, implementations=["cpu.standard", "cpu.example"]))
        stub = self.directory / "stub" / "torch"
        stub.mkdir(parents=True)
        (stub / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
        peer = [sys.executable, str(ARGS.source_dir / "scripts" / "torch_peer.py"), "--attnbench", str(ARGS.binary),
                str(scenario), "--backends", "math"]
        environment = dict(attnbench_testing.environment_without("ATTNBENCH_PLUGINS"),
                           PYTHONPATH=str(stub.parent))
        refused = subprocess.run([*peer, "-o", str(self.directory / "refused.json")], capture_output=True,
                                 text=True, env=environment)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn('unknown implementation "cpu.example"', refused.stderr)
        output = self.directory / "torch.json"
        run = subprocess.run([*peer, "--plugin", str(self.example), "-o", str(output)], capture_output=True,
                             text=True, env=environment)
        self.assertEqual(run.returncode, 4, run.stderr)  # no PyTorch here: every record skipped, with the reason
        records = self.validated(output)["records"]
        self.assertEqual(len(records), len(SCENARIO["cases"]))
        self.assertEqual({r["reason"] for r in records}, {"PyTorch is not installed"})

    def test_a_callback_error_fails_its_record_and_the_sweep_goes_on(self):
        plugin = ARGS.test_plugins / "libtest_plugin_misbehaving.so"
        output = self.directory / "results.json"
        run = self.run_plugin(output, "--plugin", plugin, "--impl", "cpu.test_error,cpu.test_supports_error,cpu.standard",
                              "--filter", "q24-k40-d16-fp16-bshd-fwd-in")
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        records = {r["implementation"]: r for r in self.validated(output)["records"]}
        self.assertEqual(records["cpu.test_error"]["reason"],
                         "error: cpu.test_error forward() failed: deliberate failure in forward")
        self.assertEqual(records["cpu.test_supports_error"]["reason"],
                         "error: cpu.test_supports_error supports() failed: supports() broke on purpose")
        self.assertEqual(records["cpu.standard"]["status"], "ok")
        listing = self.attnbench("list", "--json", self.scenario, "--plugin", plugin, "--impl", "cpu.test_supports_error")
        self.assertEqual(listing.returncode, 0, listing.stderr)
        verdict = json.loads(listing.stdout)["scenarios"][0]["cases"][0]["implementations"]["cpu.test_supports_error"]
        self.assertIn("supports() broke on purpose", verdict["reason"])

    def test_writes_outside_the_buffers_fail_the_record_naming_the_buffer_and_the_side(self):
        plugin = ARGS.test_plugins / "libtest_plugin_misbehaving.so"
        output = self.directory / "results.json"
        scribblers = ["cpu.test_past_o", "cpu.test_past_lse", "cpu.test_before_lse", "cpu.test_past_workspace",
                      "cpu.test_into_q"]
        run = self.run_plugin(output, "--plugin", plugin, "--impl", ",".join(["cpu.standard", *scribblers]),
                              "--filter", "q24-k40-d16-fp16-bshd-fwd-in")
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        records = {r["implementation"]: r for r in self.validated(output)["records"]}
        self.assertEqual(records["cpu.standard"]["status"], "ok")  # no false alarm on a built-in
        written = "error: guard check: {}'s checked call wrote where it must not: {}"
        o_bytes = 2 * 4 * 24 * 16 * 2  # batch, heads, Nq, d, fp16
        self.assertEqual(records["cpu.test_past_o"]["reason"], written.format(
            "cpu.test_past_o", "256 bytes written past the end of O (bytes 0 to 255 after its last element, in the "
            "guard zone before LSE)"))
        self.assertEqual(records["cpu.test_past_lse"]["reason"], written.format(
            "cpu.test_past_lse", "256 bytes written past the end of LSE (bytes 0 to 255 after its last element, in "
            "the guard zone before workspace)"))
        self.assertEqual(records["cpu.test_before_lse"]["reason"], written.format(
            "cpu.test_before_lse", "256 bytes written before the start of LSE (the 256 bytes before its first "
            "element, in the guard zone after O)"))
        self.assertEqual(records["cpu.test_past_workspace"]["reason"], written.format(
            "cpu.test_past_workspace", "256 bytes written past the end of workspace (bytes 0 to 255 after its last "
            "element, at the end of the arena)"))
        self.assertEqual(records["cpu.test_into_q"]["reason"], written.format(
            "cpu.test_into_q", "the input Q was written (first at element 3 of " + str(o_bytes // 2) +
            "): inputs are read-only"))

    def test_a_crash_loses_no_record_and_is_recorded_as_failed_on_resume(self):
        plugin = ARGS.test_plugins / "libtest_plugin_misbehaving.so"
        scenario = attnbench_testing.write_scenario(self.directory / "crash.json", dict(
            SCENARIO, cases=[{"head_dim": 8, "direction": "fwd"}, {"head_dim": 16, "direction": "fwd"},
                             {"head_dim": 8, "seqlen": 16, "direction": "fwd"}]))
        output = self.directory / "results.json"
        arguments = ["run", scenario, "-o", output, "--plugin", plugin, "--impl", "cpu.standard,cpu.test_crash"]
        crashed = self.attnbench(*arguments)
        self.assertEqual(crashed.returncode, -6, crashed.stderr)  # SIGABRT, from the plug-in
        journal = [json.loads(line) for line in pathlib.Path(f"{output}.journal").read_text().splitlines()[1:]]
        finished = [entry["record"] for entry in journal if "record" in entry]
        self.assertEqual([r["case_index"] for r in finished], [0, 0])  # the first case, as it finished
        self.assertEqual([entry["crashed"]["signal"] for entry in journal if "crashed" in entry], [6])
        # Before dying, the process says which case and implementation died and how to go on.
        key = next(entry["crashed"]["case_key"] for entry in journal if "crashed" in entry)
        self.assertIn(f"attnbench: cpu.test_crash crashed the process in case plugin/{key} (SIGABRT, an abort). "
                      f"The cases finished before it are saved in {output}.journal; go on with the same command and "
                      f"-o {output} --resume: this case is then recorded as failed and the run continues with the "
                      "next.\n", crashed.stderr)
        resumed = self.attnbench(*arguments, "--resume")
        self.assertEqual(resumed.returncode, 1, resumed.stdout + resumed.stderr)
        self.assertIn("1 implementation crashed the process in a case before and is recorded as failed there, "
                      "not run again", resumed.stderr)
        document = self.validated(output)
        self.assertTrue(document["complete"])
        records = {(r["case_index"], r["implementation"]): r for r in document["records"]}
        self.assertEqual(len(records), 6)
        self.assertEqual([records[0, r["implementation"]] for r in finished], finished)  # kept, not run again
        self.assertEqual(records[1, "cpu.test_crash"]["status"], "failed")
        self.assertIn("the process died in this case of signal 6", records[1, "cpu.test_crash"]["reason"])
        self.assertIn("did not crash", records[2, "cpu.test_crash"]["reason"])
        self.assertEqual({records[c, "cpu.standard"]["status"] for c in range(3)}, {"ok"})

    def test_a_call_that_never_returns_times_out_and_the_run_goes_on(self):
        plugin = ARGS.test_plugins / "libtest_plugin_misbehaving.so"
        scenario = attnbench_testing.write_scenario(self.directory / "hang.json", dict(
            SCENARIO, cases=[{"head_dim": 8, "direction": "fwd"}, {"head_dim": 16, "direction": "fwd"},
                             {"head_dim": 8, "seqlen": 16, "direction": "fwd"}]))
        output = self.directory / "results.json"
        arguments = ["run", scenario, "-o", output, "--plugin", plugin, "--impl", "cpu.standard,cpu.test_hang",
                     "--call-limit", "0.5"]
        run = self.attnbench(*arguments, timeout=120)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn("attnbench: cpu.test_hang's checked call in case plugin#1 did not return within 500.0 ms "
                      "(--call-limit): recorded as a timeout; continuing in a new process (restart 1)", run.stderr)
        self.assertIn("1 implementation did not return from a call within --call-limit in a case before and is "
                      "recorded as failed (timeout) there, not run again", run.stderr)
        document = self.validated(output)
        self.assertTrue(document["complete"])
        records = {(r["case_index"], r["implementation"]): r for r in document["records"]}
        self.assertEqual(len(records), 6)
        self.assertEqual({records[c, "cpu.standard"]["status"] for c in range(3)}, {"ok"})
        self.assertEqual(records[0, "cpu.test_hang"]["reason"],
                         "error: cpu.test_hang forward() failed: did not hang (head dim is not 16)")
        self.assertEqual(records[1, "cpu.test_hang"]["status"], "failed")
        self.assertTrue(records[1, "cpu.test_hang"]["reason"].startswith(
            "timeout: cpu.test_hang did not return from a call of this case within 500.0 ms (--call-limit)"),
            records[1, "cpu.test_hang"]["reason"])
        # Its later cases are not run (each could hang as long), as after a GPU timeout.
        self.assertTrue(records[2, "cpu.test_hang"]["reason"].startswith(
            "timeout: not run: cpu.test_hang's case plugin/"), records[2, "cpu.test_hang"]["reason"])
        # The same command with --resume finds it complete: nothing waits on the case again.
        again = self.attnbench(*arguments, "--resume", timeout=60)
        self.assertEqual(again.returncode, 1, again.stdout + again.stderr)

    # ---- a plug-in's build is part of a run's identity ----

    def test_two_builds_are_named_by_compare_and_stand_side_by_side_in_a_report(self):
        other = build_example(self.directory, "libcpu_attention_o3.so", ["-O3", "-DATTNBENCH_EXAMPLE_O3_BUILD"])
        files = []
        for side, plugin in (("base", self.example), ("head", other)):
            files.append(self.directory / f"{side}.json")
            run = self.run_plugin(files[-1], "--plugin", plugin, "--impl", "cpu.standard,cpu.example",
                                  "--filter", "q24-k40-d16-fp16-bshd-fwd-in")
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        compare = self.attnbench("compare", *files, "--json", self.directory / "compare.json")
        self.assertIn(compare.returncode, (0, 1, 3), compare.stderr)
        self.assertIn(f"plug-in cpu.example: two builds, version 1.0.0, SHA-256 {sha256(self.example)[:12]}… (BASE) "
                      f"and version 1.0.0, SHA-256 {sha256(other)[:12]}… (NEW)", " ".join(compare.stdout.split()))
        document = json.loads((self.directory / "compare.json").read_text())
        self.assertEqual([p["sha256"] for p in document["inputs"]["base"]["plugins"]], [sha256(self.example)])
        self.assertEqual([p["sha256"] for p in document["inputs"]["new"]["plugins"]], [sha256(other)])
        clash = self.attnbench("report", *files, "--table", "seqlen")
        self.assertEqual(clash.returncode, 2, clash.stderr)
        report = self.attnbench("report", *files, "--table", "seqlen", "--format", "json", "--label", "base",
                                "--label", "head", "--baseline", "cpu.standard@base")
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertTrue({"cpu.example@base", "cpu.example@head"} <=
                        {c.get("implementation") for c in json.loads(report.stdout)["columns"]})
        wrong = self.attnbench("report", *files, "--table", "seqlen", "--label", "base")
        self.assertEqual(wrong.returncode, 2, wrong.stderr)
        self.assertIn("--label: 1 labels for 2 results files", wrong.stderr)

    def test_resume_and_merge_refuse_another_build(self):
        plugin = self.directory / "libkernel.so"
        shutil.copy(self.example, plugin)
        first, second = self.directory / "first.json", self.directory / "second.json"
        flags = ["--plugin", plugin, "--impl", "cpu.example", "--filter", "causal", "--min-samples", "6",
                 "--max-samples", "8"]
        self.assertEqual(self.run_plugin(first, *flags, "--shard", "1/2").returncode, 0)
        rebuilt = build_example(self.directory, "libkernel.so", ["-O1"])  # the same path, another build
        self.assertNotEqual(sha256(rebuilt), sha256(self.example))

        resumed = self.run_plugin(first, *flags, "--shard", "1/2", "--resume")
        self.assertEqual(resumed.returncode, 2, resumed.stdout + resumed.stderr)
        self.assertIn("plugins: the run's plug-ins were other builds", resumed.stderr)
        self.assertIn(f"cpu.example came from the plug-in {plugin.resolve()} (sha256 {sha256(self.example)[:12]}",
                      resumed.stderr)

        self.assertEqual(self.run_plugin(second, *flags, "--shard", "2/2").returncode, 0)
        merged = self.directory / "merged.json"
        merge = self.attnbench("merge", first, second, "-o", merged)
        self.assertEqual(merge.returncode, 2, merge.stdout + merge.stderr)
        self.assertIn("records of two builds of a plug-in do not merge", merge.stderr)
        self.assertFalse(merged.exists())
        shutil.copy(self.example, plugin)
        self.assertEqual(self.run_plugin(second, *flags, "--shard", "2/2", "--overwrite").returncode, 0)
        merge = self.attnbench("merge", first, second, "-o", merged)
        self.assertEqual(merge.returncode, 0, merge.stdout + merge.stderr)
        self.assertEqual(len(self.validated(merged)["plugins"]), 1)
        # compare takes two builds: the pull-request gate below

    def test_the_pull_request_gate_of_docs_plugins_md(self):
        """scripts/ci_gate.sh with one attnbench behind two wrappers, each naming one build of
        the plug-in through ATTNBENCH_PLUGINS, as docs/plugins.md shows."""
        for side, extra in (("base", []), ("head", ["-O1"])):
            (self.directory / side).mkdir()
            build_example(self.directory / side, "libmy_attention.so", extra)
            wrapper = self.directory / f"attnbench-{side}"
            wrapper.write_text(f'#!/bin/sh\nATTNBENCH_PLUGINS={self.directory / side / "libmy_attention.so"} '
                               f'exec {ARGS.binary} "$@"\n')
            wrapper.chmod(0o755)
        scenario = attnbench_testing.write_scenario(self.directory / "gate.json",
                                                    dict(SCENARIO, cases=SCENARIO["cases"][:2]))
        out = self.directory / "gate-out"
        gate = subprocess.run([str(ARGS.source_dir / "scripts" / "ci_gate.sh"), str(self.directory / "attnbench-base"),
                               str(self.directory / "attnbench-head"), str(scenario), str(out), "2"],
                              capture_output=True, text=True,
                              env=dict(attnbench_testing.environment_without("ATTNBENCH_PLUGINS"),
                                       RUN_ARGS=f"--impl cpu.example --threads {THREADS}"))
        self.assertIn(gate.returncode, (0, 1, 3), gate.stdout + gate.stderr)
        for side in ("base", "head"):
            document = self.validated(out / f"{side}.json")
            self.assertEqual({r["plugin"]["sha256"] for r in document["records"]},
                             {sha256(self.directory / side / "libmy_attention.so")})
        cells = json.loads((out / "compare.json").read_text())["cells"]
        self.assertEqual([c["implementation"] for c in cells], ["cpu.example"] * 2)


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench binary", gbench="attnbench-gbench",
                                                        test_plugins="the directory of the test plug-ins",
                                                        source_dir="the checkout")
    attnbench_testing.run_unittests(rest)
