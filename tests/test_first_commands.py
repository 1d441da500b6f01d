#!/usr/bin/env python3
"""The README's two commands build what they need: scripts/quickstart.sh only the
attnbench binary it runs, scripts/test.sh everything before running ctest.

The scripts run in a copy of scripts/ with cmake, ctest, dpkg-query and python3
replaced by stand-ins on PATH that log their arguments (and, for a build, leave
a build/harness/attnbench that logs how it was run), so nothing is installed or
compiled.
"""
import os
import pathlib
import shutil
import stat
import subprocess

import attnbench_testing

ARGS = None

STAND_IN = """#!/usr/bin/env bash
echo "{name} $*" >> "$COMMAND_LOG"
{extra}
"""
# A build leaves a binary that logs its own arguments.
CMAKE_EXTRA = """if [[ " $* " == *" --build "* ]]; then
  mkdir -p build/harness
  printf '#!/usr/bin/env bash\\necho "attnbench $*" >> "$COMMAND_LOG"\\n' > build/harness/attnbench
  chmod +x build/harness/attnbench
fi"""
DPKG_EXTRA = 'echo "install ok installed"'


class FirstCommands(attnbench_testing.TemporaryDirectoryTestCase):
    prefix = "attnbench_first_commands_"

    def setUp(self):
        super().setUp()
        self.checkout = self.directory / "checkout"
        shutil.copytree(ARGS.source_dir / "scripts", self.checkout / "scripts",
                        ignore=shutil.ignore_patterns("__pycache__"))
        tools = self.directory / "tools"
        tools.mkdir()
        for name, extra in (("cmake", CMAKE_EXTRA), ("ctest", ""), ("dpkg-query", DPKG_EXTRA), ("python3", "")):
            tool = tools / name
            tool.write_text(STAND_IN.format(name=name, extra=extra))
            tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
        self.log = self.directory / "commands.log"
        self.environment = dict(os.environ, PATH=f"{tools}:{os.environ['PATH']}", COMMAND_LOG=str(self.log))

    def run_script(self, name, *arguments):
        completed = subprocess.run(["bash", str(self.checkout / "scripts" / name), *arguments],
                                   env=self.environment, capture_output=True, text=True)
        self.assertEqual(completed.returncode, 0, completed.stdout + completed.stderr)
        return [line for line in self.log.read_text().splitlines() if not line.startswith(("python3", "dpkg"))]

    def test_quickstart_builds_only_the_binary_it_runs(self):
        commands = self.run_script("quickstart.sh", "--hot")
        self.assertEqual(len(commands), 3, commands)
        configure, build, run = commands
        self.assertTrue(configure.startswith("cmake -S . -B build -DCMAKE_BUILD_TYPE=Release"), configure)
        self.assertTrue(build.startswith("cmake --build build"), build)
        self.assertTrue(build.endswith("--target attnbench"), build)
        self.assertEqual(run, "attnbench run scenarios/quick.json --hot")

    def test_the_test_command_builds_everything_then_runs_ctest(self):
        commands = self.run_script("test.sh", "-L", "cpu")
        self.assertEqual(len(commands), 3, commands)
        configure, build, test = commands
        self.assertTrue(configure.startswith("cmake -S . -B build"), configure)
        self.assertTrue(build.startswith("cmake --build build"), build)
        self.assertNotIn("--target", build)
        self.assertTrue(test.startswith("ctest --test-dir build"), test)
        self.assertTrue(test.endswith("-L cpu"), test)

    def test_build_passes_configure_arguments_and_targets(self):
        commands = self.run_script("build.sh", "--target", "attnbench", "--target", "attnbench-gbench",
                                   "-DATTNBENCH_CUDA=OFF")
        configure, build = commands
        self.assertTrue(configure.endswith("-DATTNBENCH_CUDA=OFF"), configure)
        self.assertTrue(build.endswith("--target attnbench --target attnbench-gbench"), build)


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(source_dir="the checkout")
    attnbench_testing.run_unittests(rest)
