"""Helpers shared by the Python end-to-end tests under tests/.

CTest runs each script as `python3 tests/<script>.py ...`, so Python puts this
directory first on sys.path and `import attnbench_testing` finds this module.
It holds what the scripts would otherwise each repeat: a required package or a
clear message, command-line paths for a unittest script, a temporary directory
per test, writing a scenario file, running the attnbench binary on one, listing
a scenario's cases, loading a script of scripts/ as a module, and the JSON
Schemas in scenarios/.
"""
import argparse
import importlib
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest


def require_module(name):
    """Imports the Python package `name`, or exits saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        sys.exit(f"the Python package {name} is missing: run scripts/setup.sh")


def resolved_path(text):
    return pathlib.Path(text).resolve()


def parse_path_arguments(**options):
    """Parses the required options --<name> PATH (underscores in a name become dashes),
    each resolved to an absolute path; `options` maps each name to its help text
    (or None). Returns the parsed options and the arguments left for unittest."""
    parser = argparse.ArgumentParser()
    for name, help_text in options.items():
        parser.add_argument("--" + name.replace("_", "-"), required=True, type=resolved_path, help=help_text)
    return parser.parse_known_args()


def run_unittests(rest):
    """unittest.main on the calling script's tests, with the arguments parse_path_arguments left."""
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


def make_temporary_directory(prefix):
    return pathlib.Path(tempfile.mkdtemp(prefix=prefix))


class TemporaryDirectoryTestCase(unittest.TestCase):
    """Gives every test `self.directory`, a fresh directory named with `prefix`, removed after the test."""

    prefix = "attnbench_"

    def setUp(self):
        self.directory = make_temporary_directory(self.prefix)
        self.addCleanup(shutil.rmtree, self.directory)


def write_scenario(path, scenario):
    """Writes the scenario (a dict) as JSON to `path` and returns the path."""
    path = pathlib.Path(path)
    path.write_text(json.dumps(scenario))
    return path


class ScenarioTestCase(TemporaryDirectoryTestCase):
    """Also writes the class's `scenario_content` (a dict) to <directory>/<scenario_file> for every
    test; `self.scenario` is that file's path."""

    scenario_content = None
    scenario_file = "scenario.json"

    def setUp(self):
        super().setUp()
        self.scenario = write_scenario(self.directory / self.scenario_file, self.scenario_content)


def environment_without(*names, prefixes=()):
    """This process's environment less the variables `names` and those starting with one of `prefixes`."""
    return {k: v for k, v in os.environ.items()
            if k not in names and not any(k.startswith(prefix) for prefix in prefixes)}


def run_scenario(binary, scenario, output):
    """`attnbench run SCENARIO -o OUTPUT`; fails (AssertionError with its output) unless it exits 0."""
    run = subprocess.run([str(binary), "run", str(scenario), "-o", str(output)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def listed_scenario(binary, scenario):
    """The scenario's entry in `attnbench list --json`: its expanded cases and implementations."""
    listing = subprocess.run([str(binary), "list", "--json", str(scenario)],
                             capture_output=True, text=True, check=True)
    return json.loads(listing.stdout)["scenarios"][0]


def load_script(source_dir, name):
    """scripts/<name>.py of the source tree as a module (scripts/ on sys.path for its own imports)."""
    scripts = str(pathlib.Path(source_dir) / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(scripts) / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_schema(source_dir, name):
    """scenarios/<name> of the source tree, parsed."""
    return json.loads((pathlib.Path(source_dir) / "scenarios" / name).read_text())
