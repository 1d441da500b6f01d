#!/usr/bin/env python3
"""Shows that the simulator catches broken kernels (docs/cudasim.md).

Copies the working tree into a scratch directory, builds the simulator's tests
there once (CUDA off: the simulator needs no toolkit), checks that the chosen
tests pass on the unchanged kernels, then applies one known mutation at a time
to the copy, rebuilds, runs the cudasim tests that exercise it, and reports
whether they failed ("caught") and with what. Not part of CI: a full run
rebuilds a kernel per mutation (about 2 minutes each on 2 cores).

    scripts/check_cudasim_mutations.py            # every mutation
    scripts/check_cudasim_mutations.py --only dq_atomic_store --keep

Exit status: 0 when every mutation was caught, 1 when one was not, 2 when a
mutation no longer applies to the source or the unchanged tree fails.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, what it breaks, file, text, replacement, gtest filter of the tests that exercise it[, test target])
FORWARD_PLAIN = "Matrix/*/fwd_fp16_d64_none_q200_k200:Matrix/*/fwd_bf16_d128_causal_top_left_q129_k257"
MUTATIONS = [
    ("stage_barrier_removed", "the __syncthreads between the forward's K/V stages removed",
     "kernels/cuda/flash_forward.cu",
     "    __syncthreads();  // every warp is done with this stage before it is refilled\n", "",
     FORWARD_PLAIN),
    ("wait_group_too_short", "cp.async.wait_group 1 turned into 2 in the forward's loop",
     "kernels/cuda/flash_forward.cu",
     "copy_async_wait<1>();  // everything but the tile just requested has landed",
     "copy_async_wait<2>();  // everything but the tile just requested has landed",
     FORWARD_PLAIN),
    ("k_lane_row_off_by_one", "the K tile's ldmatrix lane address one row off",
     "kernels/cuda/flash_forward.cu",
     "swizzled_lane_bytes(k_position.row, k_position.column / 8, kRowBytes)",
     "swizzled_lane_bytes(k_position.row + 1, k_position.column / 8, kRowBytes)",
     FORWARD_PLAIN),
    ("dropout_word_wrong_lane", "the forward's dropout words taken from lane ^ 3 instead of the partner lane ^ 1",
     "kernels/cuda/flash_forward.cu",
     "__shfl_xor_sync(kFullWarp, philox_word(draw, sent), 1);",
     "__shfl_xor_sync(kFullWarp, philox_word(draw, sent), 3);",
     "Matrix/*/fwd_fp16_d64_none_dropout_q200_k200:Matrix/*/fwd_bf16_d64_padding_causal_dropout_q129_k257"),
    ("v_load_not_transposed", ".trans dropped from the forward's V load",
     "kernels/cuda/flash_forward.cu",
     "load_matrix_x4_transposed(v_fragments,", "load_matrix_x4(v_fragments,",
     FORWARD_PLAIN),
    ("dq_atomic_store", "the backward's dQ atomic add replaced by a plain store",
     "kernels/cuda/flash_backward.cu",
     "add_pair_to_global(dq_rows + 8 * n, dq[n][0], dq[n][1]);",
     "dq_rows[8 * n] = dq[n][0];\n      dq_rows[8 * n + 1] = dq[n][1];",
     "Matrix/*/fwdbwd_fp16_d64_none_q200_k200:Matrix/*/fwdbwd_bf16_d128_causal_bottom_right_q257_k129"),
]
# The Hopper GEMM (kernels/cuda/hopper_gemm.cu) under the simulator's Hopper rules.
HOPPER_GEMM = "Sizes/HopperGemm.*"
GEMM = "kernels/cuda/hopper_gemm.cu"
MUTATIONS += [
    ("proxy_fence_removed", "the GEMM epilogue's fence.proxy.async before the TMA store removed", GEMM,
     "  fence_proxy_async();\n  named_barrier_sync(1 + consumer, 128);", "  named_barrier_sync(1 + consumer, 128);",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("full_wait_wrong_parity", "the consumers wait on the wrong parity of a stage's full mbarrier", GEMM,
     "mbarrier_wait_parity(full(s), static_cast<std::uint32_t>(kt / T::kStages) & 1u);",
     "mbarrier_wait_parity(full(s), (static_cast<std::uint32_t>(kt / T::kStages) & 1u) ^ 1u);",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("expect_tx_short", "the producer's expect_tx announces 16 bytes fewer than a stage's copies deliver", GEMM,
     "mbarrier_arrive_expect_tx(full(s), T::kStageBytes);", "mbarrier_arrive_expect_tx(full(s), T::kStageBytes - 16);",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("wgmma_wait_leaves_group", "the last wgmma.wait_group leaves the accumulators' group in flight", GEMM,
     "  wgmma_wait_group<0>();\n", "  wgmma_wait_group<1>();\n", HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("descriptor_stride_wrong", "the operands' stride byte offset (8-row groups) halved in the matrix descriptor",
     GEMM, "8 * GemmTraits::kRowBytes, MatrixSwizzle::bytes128", "4 * GemmTraits::kRowBytes, MatrixSwizzle::bytes128",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("tma_swizzle_mismatch", "A's tensor map loads unswizzled while its descriptor reads 128-byte swizzle", GEMM,
     'T::kBlockM, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "A")', 'T::kBlockM, bf16, CU_TENSOR_MAP_SWIZZLE_NONE, "A")',
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
]
# cuda.flash.sm90 (kernels/cuda/flash_sm90_forward.cu): its pipeline and wgmma waits.
SM90_SHAPES = "Shapes/FlashSm90.*"
SM90 = "kernels/cuda/flash_sm90_forward.cu"
MUTATIONS += [
    ("sm90_empty_arrival_dropped", "a consumer never returns a K/V stage to the producer (empty arrival dropped)",
     SM90, "    if (thread == 0) mbarrier_arrive(empty((tile - tiles.first) % T::kStages));", "", SM90_SHAPES,
     "test_cudasim_flash_sm90"),
    ("sm90_parity_not_flipped", "the consumers wait on parity 0 of a stage's K barrier on every use", SM90,
     "mbarrier_wait_parity(k_full(s), static_cast<std::uint32_t>(use / T::kStages) & 1u);",
     "mbarrier_wait_parity(k_full(s), 0u);", SM90_SHAPES,
     "test_cudasim_flash_sm90"),
    ("sm90_softmax_reads_unfinished_s", "the wgmma wait before the overlapped softmax leaves the S group in flight",
     SM90, "    wgmma_wait_group<1>();\n    wgmma_fence_operand(scores);",
     "    wgmma_wait_group<2>();\n    wgmma_fence_operand(scores);", SM90_SHAPES, "test_cudasim_flash_sm90"),
    ("sm90_expect_tx_short", "the producer's expect_tx for a V tile announces 16 bytes fewer than its copies deliver",
     SM90, "mbarrier_arrive_expect_tx(v_full(s), T::kKeyTileBytes);",
     "mbarrier_arrive_expect_tx(v_full(s), T::kKeyTileBytes - 16);", SM90_SHAPES, "test_cudasim_flash_sm90"),
]
DEFAULT_TARGET = "test_cudasim_matrix"  # the whole matrix: a filter must find its cases


def target_of(mutation):
    return mutation[6] if len(mutation) > 6 else DEFAULT_TARGET


def run(command, cwd, log):
    with open(log, "w") as out:
        return subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode


def tracked_files():
    listing = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=SOURCE,
                             capture_output=True, check=True).stdout
    return [name for name in listing.decode().split("\0") if name]


def first_failure(log):
    """The first failing test and the first lines that say why."""
    lines = open(log, errors="replace").read().splitlines()
    for i, line in enumerate(lines):
        if "Failure" in line or "sanitizer:" in line or "failed:" in line:
            excerpt = [l.strip() for l in lines[i:i + 6] if l.strip()]
            return " | ".join(excerpt)[:400]
    failed = [l for l in lines if l.startswith("[  FAILED  ]")]
    return failed[0] if failed else "(no failure found in the log)"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", help="run only this mutation (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch tree and say where it is")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m[0] in args.only]
    if args.only and len(chosen) != len(args.only):
        known = ", ".join(m[0] for m in MUTATIONS)
        print(f"check_cudasim_mutations: unknown mutation in {args.only}; known: {known}", file=sys.stderr)
        return 2

    scratch = tempfile.mkdtemp(prefix="attnbench-mutations-")
    tree = os.path.join(scratch, "tree")
    build = os.path.join(tree, "build")
    try:
        for name in tracked_files():
            destination = os.path.join(tree, name)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if os.path.isfile(os.path.join(SOURCE, name)):
                shutil.copy2(os.path.join(SOURCE, name), destination)
        print(f"building the simulator's tests in {tree} ...", flush=True)
        if run(["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DATTNBENCH_CUDA=OFF"], tree,
               os.path.join(scratch, "configure.log")) != 0:
            print(f"configure failed: {scratch}/configure.log", file=sys.stderr)
            return 2
        targets = sorted({target_of(m) for m in chosen})
        build_command = ["cmake", "--build", build, "-j", str(args.jobs), "--target", *targets]

        def test(mutation, log):
            binary = os.path.join(build, "tests", target_of(mutation))
            return run([binary, f"--gtest_filter={mutation[5]}", "--gtest_fail_fast"], tree, log)

        if run(build_command, tree, os.path.join(scratch, "build.log")) != 0:
            print(f"the unchanged tree does not build: {scratch}/build.log", file=sys.stderr)
            return 2
        for mutation in chosen:
            name, filter_ = mutation[0], mutation[5]
            log = os.path.join(scratch, f"unchanged-{name}.log")
            if test(mutation, log) != 0:
                print(f"the unchanged kernels fail {filter_}: {log}", file=sys.stderr)
                return 2
            if "[  PASSED  ] 0 tests" in open(log).read():
                print(f"{name}: the filter {filter_} selects no test", file=sys.stderr)
                return 2

        results = []
        for mutation in chosen:
            name, what, path, text, replacement = mutation[:5]
            source_path = os.path.join(tree, path)
            original = open(source_path).read()
            if original.count(text) != 1:
                print(f"{name}: the text to mutate occurs {original.count(text)} times in {path}; update the "
                      "mutation", file=sys.stderr)
                return 2
            started = time.time()
            open(source_path, "w").write(original.replace(text, replacement))
            log = os.path.join(scratch, f"{name}.log")
            try:
                if run(build_command, tree, log) != 0:
                    results.append((name, what, "caught", "the mutated kernel does not build", time.time() - started))
                    continue
                caught = test(mutation, log) != 0
                results.append((name, what, "caught" if caught else "MISSED",
                                first_failure(log) if caught else "every test passed", time.time() - started))
            finally:
                open(source_path, "w").write(original)
            print(f"  {name}: {results[-1][2]} ({results[-1][4]:.0f} s)", flush=True)

        print()
        print(f"{'mutation':<26} {'result':<7} what broke / how it was caught")
        for name, what, verdict, how, _ in results:
            print(f"{name:<26} {verdict:<7} {what}")
            print(f"{'':<34} {how}")
        missed = [r for r in results if r[2] != "caught"]
        print(f"\n{len(results) - len(missed)} of {len(results)} mutations caught")
        return 1 if missed else 0
    finally:
        if args.keep:
            print(f"scratch tree kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
