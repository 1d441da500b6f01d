#!/usr/bin/env python3
r"""Line and branch coverage of the CUDA kernels, run on the simulator (docs/cudasim.md).

Builds the project in its own directory (build-coverage/ by default; CUDA off,
the simulator needs no toolkit) with -DATTNBENCH_KERNEL_COVERAGE=ON, which
compiles the simulated kernels with gcov's counters (atomic updates, no
optimisation) beside the simulator's thread-sanitizer instrumentation; runs the
tests as scripts/test.sh does (every test but the cudasim_matrix label; --matrix
adds it); and reports, per kernel file, the lines and branches that ran:

    scripts/kernel_coverage.py                  # the everyday suite
    scripts/kernel_coverage.py --matrix         # with the whole correctness matrix
    scripts/kernel_coverage.py --tests 'cudasim:|CliCudasim' \
        --target test_cudasim_correctness --target test_cli_cudasim   # the tests that run the kernels

A line counts as covered when any template instance of it ran. Branches are
gcov's arcs out of a line's blocks, merged over the template instances by
position; the arcs of exceptions (a throw, a block only an exception reaches,
the failing side of a CUDA or cuBLAS status check, which only throws) are left
out, and so are lines only an exception reaches. Every line
that did not run is listed with its source, and so is every branch direction
that never went its way. --json FILE writes the figures and the lists.

Exit status: 0 when the counts were gathered, 1 when --fail-under is given and
a file's line coverage is below it, 2 on a failed configure, build or gcov
(test failures are reported and do not stop the count).
"""
import argparse
import collections
import glob
import json
import os
import shutil
import subprocess
import sys

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The kernel files: the code of the CUDA build namespace (kernels/cuda/cuda_build.hpp),
# which no host translation unit shares. The geometry and mask headers are pure
# C++ shared with host code (a host copy may be the one linked); their tests run
# them exhaustively on the host (tests/test_flash_*geometry.cpp).
KERNEL_FILES = [
    "kernels/cuda/flash_forward.cu",
    "kernels/cuda/flash_backward.cu",
    "kernels/cuda/flash_simple.cu",
    "kernels/cuda/flash_attention.cu",
    "kernels/cuda/flash_sm90_forward.cu",
    "kernels/cuda/flash_sm90_backward.cu",
    "kernels/cuda/flash_sm90_attention.cu",
    "kernels/cuda/backward_rows.hpp",
    "kernels/cuda/fragment_softmax.hpp",
    "kernels/cuda/hopper_primitives.hpp",
    "kernels/cuda/hopper_pipeline.hpp",
    "kernels/cuda/hopper_epilogue.hpp",
    "baselines/cuda/softmax_kernel.cu",
    "baselines/cuda/softmax_row.hpp",
    "baselines/cuda/score_gradient_row.hpp",
    "baselines/cuda/cublas_attention.cu",
    "kernels/cuda/tile_copy.hpp",
    "kernels/cuda/warp_primitives.hpp",
    "kernels/cuda/kernel_launch.hpp",
    "kernels/cuda/grid_stride.hpp",
    "kernels/cuda/element_conversion.hpp",
    "kernels/cuda/tensor_map.hpp",
    "kernels/cuda/device_lengths.hpp",
    "kernels/cuda/sm90a_device.hpp",
]
KERNEL_OBJECTS = "harness/cudasim/CMakeFiles/attnbench_cudasim_kernels.dir"
# A status check's failing side only builds the message it throws.
STATUS_CHECKS = ("ATTNBENCH_CUDA_CHECK", "ATTNBENCH_CUBLAS_CHECK")


def run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, **kwargs)


def configure_and_build(build, jobs, targets):
    launcher = []
    if shutil.which("ccache"):
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    python = shutil.which("python3")
    configure = ["cmake", "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DATTNBENCH_CUDA=OFF",
                 "-DATTNBENCH_FUZZ=OFF", "-DATTNBENCH_KERNEL_COVERAGE=ON", *launcher]
    if python:
        configure.append(f"-DPython3_EXECUTABLE={python}")
    if run(configure).returncode != 0:
        return False
    target_options = [option for target in targets for option in ("--target", target)]
    return run(["cmake", "--build", build, "-j", str(jobs), *target_options]).returncode == 0


def gcov_text(build):
    """gcov's text report, with every block and branch count, of each kernel
    object's counters."""
    objects = os.path.join(build, KERNEL_OBJECTS)
    gcda = sorted(glob.glob(os.path.join(objects, "**", "*.gcda"), recursive=True))
    if not gcda:
        raise RuntimeError(f"no counters under {objects}: did the tests run a simulated kernel?")
    texts = []
    for path in gcda:
        result = subprocess.run(["gcov", "--all-blocks", "--branch-probabilities", "--branch-counts", "--stdout",
                                 path], cwd=os.path.dirname(path), capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"gcov failed on {path}: {result.stderr.strip()}")
        texts.append(result.stdout)
    return texts


def relative_source(path, build):
    for base in (SOURCE, build):
        candidate = os.path.normpath(os.path.join(base, path))
        if candidate.startswith(SOURCE + os.sep) and os.path.exists(candidate):
            return os.path.relpath(candidate, SOURCE)
    return os.path.normpath(path)


def merge(texts, build):
    """file -> line -> {"count": runs, "branches": [[taken, excluded], ...]} from
    gcov's text reports. A line's count is the sum gcov gives over every
    instance (template instances, inlined copies) in every translation unit. A
    line whose every block is exceptional (gcov's $$$$$) is left out. Branch i
    of a line is taken when it was in any instance of the line's function; it
    is excluded when it sits in an exceptional block in every instance, or
    when gcov calls it a throw in any instance (gcov labels an arc a throw
    only where its block ran: in an instance that never reaches the block,
    e.g. a branch on a template parameter, the same arc is unlabelled)."""
    counts = collections.defaultdict(lambda: collections.defaultdict(int))
    normal_blocks = collections.defaultdict(set)
    exceptional_blocks = collections.defaultdict(set)
    # file -> line -> i -> [taken, exceptional in every instance, a throw in some instance]
    branches = collections.defaultdict(lambda: collections.defaultdict(dict))
    for text in texts:
        name, number, exceptional_block, in_instance, previous = None, 0, False, False, ""
        for raw in text.splitlines():
            if raw.startswith("------------------"):
                in_instance = False
                previous = raw
                continue
            if previous.startswith("------------------") and raw.endswith(":") and " " not in raw:
                in_instance = True  # an instance's section: its lines repeat the merged ones
                previous = raw
                continue
            previous = raw
            if raw.startswith(("branch", "call", "function", "unconditional")):
                if name in KERNEL_FILES and raw.startswith("branch"):
                    words = raw.split()
                    index = int(words[1])
                    taken = words[2] == "taken" and int(words[3]) > 0
                    entry = branches[name][number].setdefault(index, [False, True, False])
                    entry[0] = entry[0] or taken
                    entry[1] = entry[1] and exceptional_block
                    entry[2] = entry[2] or "(throw)" in raw
                continue
            fields = raw.split(":", 2)  # "count:line:source", or "count:line-block n"
            if len(fields) < 2:
                continue
            count, where = fields[0].strip(), fields[1].strip()
            if where == "0" and len(fields) == 3 and fields[2].startswith("Source:"):
                name = relative_source(fields[2][len("Source:"):], build)
            elif name not in KERNEL_FILES:
                continue
            elif "-block" in where:
                number = int(where.split("-")[0])
                exceptional_block = count == "$$$$$"
                (exceptional_blocks if exceptional_block else normal_blocks)[name].add(number)
            elif where.isdigit():
                number = int(where)
                exceptional_block = False
                if not in_instance and count != "-":
                    counts[name][number] += 0 if count in ("#####", "=====") else int(count.rstrip("*"))
    files = {}
    for name, lines in counts.items():
        files[name] = {}
        for number, count in lines.items():
            if count == 0 and number in exceptional_blocks[name] and number not in normal_blocks[name]:
                continue
            outcomes = branches[name][number]
            files[name][number] = {"count": count,
                                   "branches": [[outcomes[i][0], outcomes[i][1] or outcomes[i][2]]
                                                for i in sorted(outcomes)]}
    return files


def summarize(files):
    summary = {}
    for name in KERNEL_FILES:
        if not os.path.exists(os.path.join(SOURCE, name)):
            continue
        lines = files.get(name, {})
        source = open(os.path.join(SOURCE, name)).read().splitlines()
        uncovered_lines = [n for n, line in sorted(lines.items()) if line["count"] == 0]
        branches = [(n, i, taken) for n, line in sorted(lines.items())
                    for i, (taken, excluded) in enumerate(line["branches"])
                    if not excluded and not any(check in source[n - 1] for check in STATUS_CHECKS)]
        uncovered_branches = [(n, i) for n, i, taken in branches if taken == 0]
        summary[name] = {
            "lines": len(lines),
            "lines_covered": len(lines) - len(uncovered_lines),
            "branches": len(branches),
            "branches_covered": len(branches) - len(uncovered_branches),
            "uncovered_lines": [{"line": n, "source": source[n - 1].strip()} for n in uncovered_lines],
            "uncovered_branches": [{"line": n, "branch": i, "source": source[n - 1].strip()}
                                   for n, i in uncovered_branches],
        }
    return summary


def percent(part, whole):
    return "-" if whole == 0 else f"{100.0 * part / whole:.1f}%"


def print_summary(summary):
    width = max(len(name) for name in summary)
    print(f"\n{'kernel file':<{width}}  {'lines':>15}  {'branches':>15}")
    totals = [0, 0, 0, 0]
    for name, s in summary.items():
        print(f"{name:<{width}}  {s['lines_covered']:>5}/{s['lines']:<5}{percent(s['lines_covered'], s['lines']):>6}"
              f"  {s['branches_covered']:>5}/{s['branches']:<5}"
              f"{percent(s['branches_covered'], s['branches']):>6}")
        totals = [a + b for a, b in zip(totals, (s["lines_covered"], s["lines"], s["branches_covered"],
                                                 s["branches"]))]
    print(f"{'all':<{width}}  {totals[0]:>5}/{totals[1]:<5}{percent(totals[0], totals[1]):>6}"
          f"  {totals[2]:>5}/{totals[3]:<5}{percent(totals[2], totals[3]):>6}")
    for name, s in summary.items():
        for line in s["uncovered_lines"]:
            print(f"not run: {name}:{line['line']}: {line['source']}")
        for branch in s["uncovered_branches"]:
            print(f"branch never taken: {name}:{branch['line']} (#{branch['branch']}): {branch['source']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(SOURCE, "build-coverage"))
    parser.add_argument("--matrix", action="store_true", help="also run the cudasim_matrix label")
    parser.add_argument("--tests", help="run only the tests matching this ctest regex")
    parser.add_argument("--target", action="append", default=[],
                        help="build only this target (repeatable; default: everything)")
    parser.add_argument("--no-build", action="store_true", help="use the coverage build as it is")
    parser.add_argument("--report-only", action="store_true",
                        help="neither build nor run: report the counters the last run left")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json", help="write the figures and the lists here")
    parser.add_argument("--fail-under", type=float, help="exit 1 when a file's line coverage is below this percentage")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)

    if not (args.no_build or args.report_only) and not configure_and_build(build, args.jobs, args.target):
        print("kernel_coverage: the coverage build failed", file=sys.stderr)
        return 2
    failed, ctest = [], []
    if not args.report_only:
        for stale in glob.glob(os.path.join(build, KERNEL_OBJECTS, "**", "*.gcda"), recursive=True):
            os.remove(stale)
        ctest = ["ctest", "--test-dir", build, "-j", str(args.jobs)]
        if not args.matrix:
            ctest += ["-LE", "cudasim_matrix"]
        if args.tests:
            ctest += ["-R", args.tests]
        tests = run(ctest, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        failed = [line.strip() for line in tests.stdout.splitlines()
                  if "***Failed" in line or "***Timeout" in line or "***Exception" in line]
        print(tests.stdout.splitlines()[-1] if tests.stdout else "(no test output)")
        for line in failed:
            print(f"test failed: {line}")

    try:
        summary = summarize(merge(gcov_text(build), build))
    except RuntimeError as error:
        print(f"kernel_coverage: {error}", file=sys.stderr)
        return 2
    print_summary(summary)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"tests": " ".join(ctest), "failed_tests": failed, "files": summary}, out, indent=1)
    if args.fail_under is not None:
        low = [name for name, s in summary.items() if s["lines"] and 100.0 * s["lines_covered"] / s["lines"] <
               args.fail_under]
        if low:
            print(f"kernel_coverage: line coverage below {args.fail_under}% in {', '.join(low)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
