#!/usr/bin/env python3
"""attnbench's CPU implementations beside NumPy's float32 attention, in one run.

For each shape it measures, on the same machine and with the same thread count:

- NumPy's materializing attention in float32 (q @ k^T, a max-subtracted
  softmax, @ v; batched over (batch, head)), with NumPy's own BLAS;
- `attnbench bench` with cpu.standard and cpu.flash (fp16 inputs, forward, the
  harness's own timing protocol);
- the reference rate: SGEMM at 2048^3 through the very library attnbench is
  linked against (found with ldd, called through ctypes), with that thread count.

Throughputs use attnbench's FLOP convention (4 d per visible (query, key) pair
for the forward). A shared machine's speed drifts by tens of percent within
minutes, so the whole set is measured in rounds (--rounds): each round times
the SGEMM, then every shape's NumPy and attnbench side by side, and a ratio is
taken within a round, where both sides met the same machine. Each cell is the
median over the rounds (of per-round medians), followed by the range of the
per-round ratios. It prints NumPy's and both BLAS versions and the load average
before and after.

    scripts/cpu_vs_numpy.py                       # N 1024 2048 4096, d 64 128, 3 rounds
    scripts/cpu_vs_numpy.py --seqlen 2048 --head-dim 64 --threads 2 --rounds 5

Exit codes: 0 done, 2 bad usage, 4 the binary or its BLAS cannot be found or run.
"""
import argparse
import ctypes
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE_DIR = pathlib.Path(__file__).resolve().parent.parent
EXIT_BAD_USAGE, EXIT_CANNOT_RUN = 2, 4


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(SOURCE_DIR / "build" / "harness" / "attnbench"),
                        help="the attnbench binary (default: build/harness/attnbench)")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="threads for NumPy's BLAS, attnbench and the SGEMM (default: the CPUs this process may use)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seqlen", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--head-dim", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--repeats", type=int, default=7, help="timed NumPy calls per shape and round (median taken)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="times the whole set is measured, interleaved (default 3; ratios are paired within a round)")
    arguments = parser.parse_args()
    for name in ("threads", "batch", "heads", "repeats", "rounds"):
        if getattr(arguments, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(arguments.seqlen) < 1 or min(arguments.head_dim) < 1:
        parser.error("--seqlen and --head-dim must be at least 1")
    return arguments


def load_average():
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def linked_blas(binary):
    """The path of the BLAS the attnbench binary loads."""
    try:
        listing = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"cpu_vs_numpy: cannot list the libraries of {binary}: {error}")
    for line in listing.splitlines():
        found = re.search(r"(libopenblas\S*)\s+=>\s+(\S+)", line)
        if found:
            return found.group(2)
    print(f"cpu_vs_numpy: {binary} is not linked against OpenBLAS", file=sys.stderr)
    sys.exit(EXIT_CANNOT_RUN)


class Sgemm:
    """cblas_sgemm of one shared library, on a given number of its threads."""

    def __init__(self, path, threads):
        self.library = ctypes.CDLL(path)
        self.library.openblas_get_config.restype = ctypes.c_char_p
        self.library.openblas_get_corename.restype = ctypes.c_char_p
        self.library.openblas_set_num_threads(threads)
        self.description = (self.library.openblas_get_config().decode() + ", kernels "
                            + self.library.openblas_get_corename().decode())

    def rate(self, numpy, size=2048, repeats=5):
        """Median GFLOP/s of a row-major size^3 product."""
        a = numpy.random.default_rng(1).standard_normal((size, size), dtype=numpy.float32)
        b = numpy.random.default_rng(2).standard_normal((size, size), dtype=numpy.float32)
        c = numpy.empty((size, size), dtype=numpy.float32)
        pointer = ctypes.POINTER(ctypes.c_float)
        arguments = [101, 111, 111, size, size, size, ctypes.c_float(1.0), a.ctypes.data_as(pointer), size,
                     b.ctypes.data_as(pointer), size, ctypes.c_float(0.0), c.ctypes.data_as(pointer), size]
        return median_rate(lambda: self.library.cblas_sgemm(*arguments), 2.0 * size**3, repeats)


def median_rate(call, flops, repeats):
    call()  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return flops / statistics.median(seconds) / 1e9


def numpy_attention(numpy, q, k, v, scale):
    scores = numpy.matmul(q, k.swapaxes(-1, -2))
    scores *= scale
    scores -= scores.max(axis=-1, keepdims=True)
    numpy.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return numpy.matmul(scores, v)


def attnbench_rates(arguments, seqlen, head_dim):
    """GFLOP/s (median) of cpu.standard and cpu.flash, and the run's tool record."""
    with tempfile.TemporaryDirectory() as directory:
        output = pathlib.Path(directory) / "results.json"
        command = [arguments.binary, "bench", "--batch", str(arguments.batch), "--heads", str(arguments.heads),
                   "--seqlen", str(seqlen), "--head-dim", str(head_dim), "--dtype", "fp16", "--direction", "fwd",
                   "--impl", "cpu.standard,cpu.flash", "--threads", str(arguments.threads), "-o", str(output)]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"cpu_vs_numpy: {' '.join(command)} exited {run.returncode}:\n{run.stdout}{run.stderr}",
                  file=sys.stderr)
            sys.exit(EXIT_CANNOT_RUN)
        document = json.loads(output.read_text())
    rates = {}
    for record in document["records"]:
        median = record["timing"]["statistics"]["p50"]
        rates[record["implementation"]] = record["flops"]["total"] / median / 1e9
    return rates, document["tool"]


def measure_round(arguments, numpy, sgemm):
    """One round: the SGEMM reference, then NumPy and attnbench on every shape.

    Returns (reference GFLOP/s, {(seqlen, head_dim): {name: GFLOP/s}}, the tool record)."""
    reference = sgemm.rate(numpy)
    rates, tool = {}, None
    for head_dim in arguments.head_dim:
        for seqlen in arguments.seqlen:
            generator = numpy.random.default_rng(seqlen * 1000 + head_dim)
            shape = (arguments.batch, arguments.heads, seqlen, head_dim)
            q, k, v = (generator.standard_normal(shape, dtype=numpy.float32) for _ in range(3))
            flops = 4.0 * head_dim * seqlen * seqlen * arguments.batch * arguments.heads
            numpy_rate = median_rate(lambda: numpy_attention(numpy, q, k, v, head_dim**-0.5), flops, arguments.repeats)
            del q, k, v
            rates[seqlen, head_dim], tool = attnbench_rates(arguments, seqlen, head_dim)
            rates[seqlen, head_dim]["numpy"] = numpy_rate
    return reference, rates, tool


def ratio_cell(rounds, shape, name, denominator):
    """'median x [lowest-highest]' of the per-round ratios name / denominator."""
    ratios = [rates[shape][name] / rates[shape][denominator] for _, rates, _ in rounds]
    return f"{statistics.median(ratios):4.2f}x [{min(ratios):4.2f}-{max(ratios):4.2f}]"


def main():
    arguments = parse_arguments()
    if not os.access(arguments.binary, os.X_OK):
        print(f"cpu_vs_numpy: no attnbench binary at {arguments.binary} (build it, or give --binary)",
              file=sys.stderr)
        return EXIT_CANNOT_RUN
    # NumPy's BLAS reads its thread count when it loads.
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(arguments.threads)
    import numpy

    start_load = load_average()
    sgemm = Sgemm(linked_blas(arguments.binary), arguments.threads)
    numpy_blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
    print(f"numpy {numpy.__version__}, its BLAS: {numpy_blas.get('name')} {numpy_blas.get('version')}")
    print(f"attnbench's BLAS: {sgemm.description}")
    print(f"threads: {arguments.threads}; rounds: {arguments.rounds}; load average at the start: {start_load}")
    rounds = []
    for index in range(arguments.rounds):
        rounds.append(measure_round(arguments, numpy, sgemm))
        print(f"round {index + 1} of {arguments.rounds} done; load average {load_average()}", flush=True)
    references = [reference for reference, _, _ in rounds]
    reference = statistics.median(references)
    print(f"reference: SGEMM 2048^3 through attnbench's BLAS: {reference:.1f} GFLOP/s "
          f"(rounds {min(references):.1f}-{max(references):.1f})")
    print()
    header = ("shape", "numpy", "cpu.standard", "cpu.flash", "flash/standard")
    print(f"{header[0]:<20} {header[1]:>10} {header[2]:>35} {header[3]:>35} {header[4]:>22}")
    for head_dim in arguments.head_dim:
        for seqlen in arguments.seqlen:
            shape = (seqlen, head_dim)
            median = {name: statistics.median(rates[shape][name] for _, rates, _ in rounds)
                      for name in ("numpy", "cpu.standard", "cpu.flash")}
            cells = [f"{median[name]:6.1f} {100 * median[name] / reference:3.0f}% "
                     f"{ratio_cell(rounds, shape, name, 'numpy')}" for name in ("cpu.standard", "cpu.flash")]
            label = f"b{arguments.batch} h{arguments.heads} N{seqlen} d{head_dim}"
            print(f"{label:<20} {median['numpy']:10.1f} {cells[0]:>35} {cells[1]:>35} "
                  f"{ratio_cell(rounds, shape, 'cpu.flash', 'cpu.standard'):>22}")
    print()
    print("GFLOP/s of the forward: the median over the rounds of each round's median; P%: of the SGEMM reference;")
    print("Nx [a-b]: the median and range over the rounds of the ratio to NumPy (or to cpu.standard) within a round")
    tool = rounds[-1][2]
    print(f"attnbench {tool['version']} (git {tool['git_revision']}); load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
