#!/usr/bin/env python3
"""Shows that the simulator catches broken kernels (docs/cudasim.md).

Copies the working tree into a scratch directory, builds the simulator's tests
there once (CUDA off: the simulator needs no toolkit), checks that the chosen
tests pass on the unchanged kernels, then applies one known mutation at a time
to the copy, rebuilds, runs the tests, and reports whether they failed
("caught") and with what. A mutation with a gtest filter runs the cudasim tests
it names; one without (and every mutation with --suite) runs the everyday suite
as scripts/test.sh does (`ctest -LE cudasim_matrix`, everything built; the fuzz
targets are left out), and is caught when a test that passed on the unchanged
tree fails and fails again when rerun (the run stops at that first failure; a
test that only failed under load does not count). Not part of CI: a full run
rebuilds a kernel per mutation (about 2 minutes each on 2 cores), and a mutation
on the suite runs until its first failure (the whole suite, 3 minutes or more,
when none fails).

    scripts/check_cudasim_mutations.py            # every mutation
    scripts/check_cudasim_mutations.py --only dq_atomic_store --keep
    scripts/check_cudasim_mutations.py --suite --scratch build-mutations

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

# (name, what it breaks, file, text, replacement, gtest filter of the tests that exercise it or None for the
# everyday suite[, test target])
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
     "kernels/cuda/fragment_softmax.hpp",
     "__shfl_xor_sync(kQuadFullWarp, philox_word(draw, sent), 1);",
     "__shfl_xor_sync(kQuadFullWarp, philox_word(draw, sent), 3);",
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
# The Hopper GEMM (kernels/cuda/hopper_gemm.cu) under the simulator's Hopper rules, and the building blocks
# it shares with cuda.flash.sm90 (the pipeline, the epilogue, the descriptors) as the GEMM uses them.
HOPPER_GEMM = "Sizes/HopperGemm.*"
GEMM = "kernels/cuda/hopper_gemm.cu"
PIPELINE = "kernels/cuda/hopper_pipeline.hpp"
EPILOGUE = "kernels/cuda/hopper_epilogue.hpp"
MUTATIONS += [
    ("proxy_fence_removed", "the epilogue's fence.proxy.async before the TMA store removed (the GEMM's tests)",
     EPILOGUE, "  fence_proxy_async();\n  named_barrier_sync(barrier, 128);", "  named_barrier_sync(barrier, 128);",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("full_wait_wrong_parity", "the consumers wait on the wrong parity of a stage's full mbarrier", PIPELINE,
     "mbarrier_wait_parity(full(part, state.stage()), state.phase());",
     "mbarrier_wait_parity(full(part, state.stage()), state.phase() ^ 1u);",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("expect_tx_short", "the producer's expect_tx announces 16 bytes fewer than a stage's copies deliver", GEMM,
     "ring.producer_arm(state, T::kStageBytes);", "ring.producer_arm(state, T::kStageBytes - 16);",
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("wgmma_wait_leaves_group", "the last wgmma.wait_group leaves the accumulators' group in flight", GEMM,
     "  wgmma_wait_group<0>();\n", "  wgmma_wait_group<1>();\n", HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("descriptor_stride_wrong", "the K-major operands' stride byte offset (8-row groups) halved in the matrix "
     "descriptor", "kernels/cuda/matrix_descriptor.hpp", "first_row * 128 + 32 * (step % 4)), 16, 1024,",
     "first_row * 128 + 32 * (step % 4)), 16, 512,", HOPPER_GEMM, "test_cudasim_hopper_gemm"),
    ("tma_swizzle_mismatch", "A's tensor map loads unswizzled while its descriptor reads 128-byte swizzle", GEMM,
     'T::kBlockM, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "A")', 'T::kBlockM, bf16, CU_TENSOR_MAP_SWIZZLE_NONE, "A")',
     HOPPER_GEMM, "test_cudasim_hopper_gemm"),
]
# cuda.flash.sm90 (kernels/cuda/flash_sm90_forward.cu): its pipeline and wgmma waits.
SM90_SHAPES = "Shapes/FlashSm90.*"
SM90 = "kernels/cuda/flash_sm90_forward.cu"
SM90_BWD = "kernels/cuda/flash_sm90_backward.cu"
SM90_BWD_TESTS = "*FlashSm90Backward*"
MUTATIONS += [
    ("sm90_empty_arrival_dropped", "a consumer never returns a K/V stage to the producer (empty arrival dropped)",
     SM90, "    if (thread == 0) kv.consumer_release(stage);  // both products reading it are done", "", SM90_SHAPES,
     "test_cudasim_flash_sm90"),
    ("sm90_parity_not_flipped", "the consumers wait on parity 0 of a stage's K barrier on every use", SM90,
     "kv.consumer_wait(stage, T::kKeys);", "kv.consumer_wait(State{stage.stage()}, T::kKeys);", SM90_SHAPES,
     "test_cudasim_flash_sm90"),
    ("sm90_softmax_reads_unfinished_s", "the wgmma wait before the overlapped softmax leaves the S group in flight",
     SM90, "    wgmma_wait_group<1>();\n    wgmma_fence_operand(scores);",
     "    wgmma_wait_group<2>();\n    wgmma_fence_operand(scores);", SM90_SHAPES, "test_cudasim_flash_sm90"),
    ("sm90_expect_tx_short", "the producer's expect_tx for a V tile announces 16 bytes fewer than its copies deliver",
     SM90, "kv.producer_arm(state, T::kKeyTileBytes, T::kValues);",
     "kv.producer_arm(state, T::kKeyTileBytes - 16, T::kValues);", SM90_SHAPES, "test_cudasim_flash_sm90"),
    ("sm90_turn_not_awaited", "a consumer issues its GEMMs without waiting for its ping-pong turn", SM90,
     "if (schedule.pingpong) named_barrier_sync(", "if (false) named_barrier_sync(",
     SM90_SHAPES + ":FlashSm90Schedule.*", "test_cudasim_flash_sm90"),
    ("sm90_turn_not_passed", "a consumer never passes the ping-pong turn on", SM90,
     "if (schedule.pingpong) named_barrier_arrive(", "if (false) named_barrier_arrive(",
     SM90_SHAPES + ":FlashSm90Schedule.*", "test_cudasim_flash_sm90"),
    ("sm90_proxy_fence_removed", "the fence.proxy.async between the epilogue's stmatrix and its TMA store removed "
     "(cuda.flash.sm90's tests)", EPILOGUE, "  fence_proxy_async();\n  named_barrier_sync(barrier, 128);",
     "  named_barrier_sync(barrier, 128);", SM90_SHAPES, "test_cudasim_flash_sm90"),
    ("sm90_single_try_wait", "mbarrier_wait_parity takes one try_wait as the wait (a time-out passes it)",
     "kernels/cuda/hopper_primitives.hpp",
     "  while (!mbarrier_try_wait_parity(barrier, parity)) {\n  }",
     "  static_cast<void>(mbarrier_try_wait_parity(barrier, parity));", SM90_SHAPES, "test_cudasim_flash_sm90"),
]
DEFAULT_TARGET = "test_cudasim_matrix"  # the whole matrix: a filter must find its cases


def target_of(mutation):
    return mutation[6] if len(mutation) > 6 else DEFAULT_TARGET
# The simulator's own deadlock detector: too strict reports a legal kernel, too lax hangs on a real deadlock.
MUTATIONS += [
    ("deadlock_never_reported", "the simulator times out mbarrier waits for ever, however fruitless",
     "harness/cudasim/execution.cpp",
     "  } else if (++fruitless_time_outs_ >= kFruitlessTimeOuts) {\n    return false;\n  }\n", "  }\n",
     "Hopper.AThreadThatPollsThenCompletesThePhaseItselfIsNoDeadlock:Hopper.TmaLoadMisusesAreReported",
     "test_cudasim_hopper"),
    ("deadlock_on_first_retry", "the simulator calls a deadlock at the first time-out after which nothing moved",
     "harness/cudasim/cta.hpp", "inline constexpr int kFruitlessTimeOuts = 1000;",
     "inline constexpr int kFruitlessTimeOuts = 1;",
     "Hopper.AThreadThatPollsThenCompletesThePhaseItselfIsNoDeadlock", "test_cudasim_hopper"),
]
# The global reductions, their race rule and the CTA order (harness/cudasim/global_order.cpp, execution.cpp,
# instructions.cpp, tensor_copy.cpp), held by tests/test_cudasim_reductions.cpp.
REDUCTIONS = "test_cudasim_reductions"
GLOBAL_ORDER = "harness/cudasim/global_order.cpp"
MUTATIONS += [
    ("reduction_race_never_reported", "a plain access after an unordered reduction to its word is not reported",
     GLOBAL_ORDER, "if (!race.found && !ordered_before(reduction, thread)) race = Race{reduction, word, true};",
     "if (false) race = Race{reduction, word, true};",
     "MixedAccesses.AReadNoRelease*:MixedAccesses.AnAcquireOrders*:Reductions.ABulkReduction*", REDUCTIONS),
    ("store_race_never_reported", "a reduction after an unordered plain store to its word is not reported",
     GLOBAL_ORDER, "if (!race.found && state.written && !ordered_before(state.write, thread))",
     "if (false && state.written && !ordered_before(state.write, thread))",
     "MixedAccesses.AnAddAfterAnUnorderedStoreIsARace", REDUCTIONS),
    ("acquire_learns_nothing", "an ld.acquire.gpu that reads a release learns nothing of it", GLOBAL_ORDER,
     "  cta.acquired().push_back(AcquireRecord{", "  if (false) cta.acquired().push_back(AcquireRecord{",
     "MixedAccesses.AReadOrdered*", REDUCTIONS),
    ("acquire_orders_whole_cta", "what one thread acquired counts for every thread of its CTA, barrier or not",
     GLOBAL_ORDER, "    if (record.at > mine[record.thread]) continue;\n", "",
     "MixedAccesses.AnAcquireOrders*", REDUCTIONS),
    ("red_vector_alignment_unchecked", "red.global.add.v2/.v4 checked for 4-byte alignment only",
     "harness/cudasim/instructions.cpp", "check_global_access(t, address, bytes, bytes, name, pc);",
     "check_global_access(t, address, bytes, 4, name, pc);", "Reductions.VectorRed*", REDUCTIONS),
    ("bulk_reduce_size_unchecked", "cp.reduce.async.bulk accepts a size that is no multiple of 16",
     "harness/cudasim/tensor_copy.cpp", "if (bytes == 0 || bytes % 16 != 0) {", "if (bytes == 0) {",
     "Reductions.BulkReduceMisusesAreReported", REDUCTIONS),
    ("cta_order_ignored", "the CTA-order switch leaves the CTAs in grid order", "harness/cudasim/execution.cpp",
     "return order_.empty() ? next : order_[static_cast<std::size_t>(next)];", "return next;",
     "AccumulationOrder.AnUnordered*", REDUCTIONS),
    ("waiting_cta_never_resumed", "a CTA set aside for a spin on global memory is never run on",
     "harness/cudasim/execution.cpp", "    return t.state == ThreadState::at_global_poll &&\n",
     "    return false && t.state == ThreadState::at_global_poll &&\n",
     "AccumulationOrder.ASemaphore*:AccumulationOrder.ACtaWaits*", REDUCTIONS),
]
# Mutations the everyday suite must catch as scripts/test.sh runs it (no filter):
# kinds a kernel engineer could write that the fixed matrix's shapes and grids
# never show, caught by the generated shapes and the lowered grid-stride cap.
MUTATIONS += [
    ("warp_key_tiles_short", "the forward's warp bounds its key tiles by its first 15 rows",
     "kernels/cuda/flash_forward.cu",
     "flash_key_tiles(params.mask, warp_row, warp_row + Traits::kWarpRows, len_q, len_k, kBlockN)",
     "flash_key_tiles(params.mask, warp_row, warp_row + Traits::kWarpRows - 1, len_q, len_k, kBlockN)",
     None),
    ("cta_key_tiles_short", "the forward's CTA bounds its key tiles by its first 63 rows",
     "kernels/cuda/flash_forward.cu",
     "flash_key_tiles(params.mask, cta_row, cta_row + kBlockM, len_q, len_k, kBlockN)",
     "flash_key_tiles(params.mask, cta_row, cta_row + kBlockM - 1, len_q, len_k, kBlockN)",
     None),
    ("warp_query_tiles_short", "the backward's warp bounds its query tiles by its first 15 keys",
     "kernels/cuda/flash_backward.cu",
     "flash_backward_query_tiles(params.mask, warp_key, warp_key + Traits::kWarpKeys, len_q, len_k, kBlockM)",
     "flash_backward_query_tiles(params.mask, warp_key, warp_key + Traits::kWarpKeys - 1, len_q, len_k, kBlockM)",
     None),
    ("sm90_cta_key_tiles_short", "cuda.flash.sm90's CTA bounds its key tiles by its first 127 rows", SM90,
     "flash_key_tiles(params.mask, cta_row, cta_row + T::kBlockM, len_q, len_k, T::kBlockN)",
     "flash_key_tiles(params.mask, cta_row, cta_row + T::kBlockM - 1, len_q, len_k, T::kBlockN)",
     None),
    ("sm90_consumer_full_tile_short", "cuda.flash.sm90's consumer skips the mask predicates on a tile all but its "
     "last row see whole", SM90,
     "tile_fully_visible(params.mask, consumer_row, consumer_row + T::kConsumerRows, first_key,",
     "tile_fully_visible(params.mask, consumer_row, consumer_row + T::kConsumerRows - 1, first_key,",
     None),
    # cuda.flash.sm90's backward (kernels/cuda/flash_sm90_backward.cu), caught by its own tests.
    ("sm90_bwd_dq_reduction_skips_a_key_tile", "the backward's key tile 1 never adds its dQ parts", SM90_BWD,
     "      if (thread == 0) {\n        bulk_reduce_add_global(",
     "      if (thread == 0 && blockIdx.x != 1) {\n        bulk_reduce_add_global(", SM90_BWD_TESTS,
     "test_cudasim_flash_sm90"),
    ("sm90_bwd_cta_query_tiles_short", "the backward's CTA bounds its query tiles by its first 127 keys", SM90_BWD,
     "flash_backward_query_tiles(params.mask, first_key, first_key + T::kBlockN, len_q, len_k, T::kBlockM)",
     "flash_backward_query_tiles(params.mask, first_key, first_key + T::kBlockN - 1, len_q, len_k, T::kBlockM)",
     SM90_BWD_TESTS, "test_cudasim_flash_sm90"),
    ("sm90_bwd_delta_of_another_row", "dS computed with D of the row 8 queries on", SM90_BWD,
     "load_shared_float2(cta.delta_rows(stage) + column);", "load_shared_float2(cta.delta_rows(stage) + (column ^ 32u));",
     SM90_BWD_TESTS, "test_cudasim_flash_sm90"),
    ("sm90_bwd_query_stage_not_released", "the MMA warpgroups never release a Q/dO stage to the producer", SM90_BWD,
     "    if (thread == 0) ring.consumer_release(state);", "", SM90_BWD_TESTS, "test_cudasim_flash_sm90"),
    ("sm90_bwd_deterministic_wait_skipped", "the deterministic mode adds its dQ parts without waiting for its turn",
     SM90_BWD, "          while (ld_acquire_gpu(semaphore) < T::kConsumers * turn) {\n          }\n", "",
     SM90_BWD_TESTS, "test_cudasim_flash_sm90"),
    ("sm90_bwd_register_dq_skips_a_key_tile", "the dQ parts added from registers (head dim 256, and the deterministic "
     "mode) leave out key tile 1's", SM90_BWD,
     "        red_add_global_v2(part + row * T::kDqColumns",
     "        if (blockIdx.x != 1) red_add_global_v2(part + row * T::kDqColumns", SM90_BWD_TESTS,
     "test_cudasim_flash_sm90"),
    ("sm90_bwd_gqa_head_missed", "the backward's CTA leaves out the last query head of its group", SM90_BWD,
     "int steps() const { return group * tiles.count(); }",
     "int steps() const { return (group - (group > 1 ? 1 : 0)) * tiles.count(); }", SM90_BWD_TESTS,
     "test_cudasim_flash_sm90"),
    ("softmax_row_barrier_removed", "the softmax's barrier before the next row of a block reuses the shared slots",
     "baselines/cuda/softmax_kernel.cu",
     "  __syncthreads();  // the next row reuses the shared slots\n  return row;",
     "  return row;",
     None),
    ("gradient_row_barrier_removed", "the score gradient's barrier before the next row reuses the shared slot",
     "baselines/cuda/softmax_kernel.cu",
     "  __syncthreads();  // the next row reuses the shared slots\n  return sum;",
     "  return sum;",
     None),
]


def run(command, cwd, log, timeout=None):
    """The command's exit status, its output in `log`; a command still running after `timeout` seconds is
    killed, and that counts as a failure (a hang: a deadlock the simulator no longer reports)."""
    with open(log, "w") as out:
        try:
            return subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            out.write(f"\nFailure: still running after {timeout} s (a hang), killed\n")
            return 124


def tracked_files():
    listing = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=SOURCE,
                             capture_output=True, check=True).stdout
    return [name for name in listing.decode().split("\0") if name]


def failed_tests(log):
    """The names ctest lists under "The following tests FAILED:" in its log."""
    names, listing = [], False
    for line in open(log, errors="replace").read().splitlines():
        if line.startswith("The following tests"):
            listing = line.startswith("The following tests FAILED")
        elif listing and " - " in line and line.lstrip()[:1].isdigit():
            names.append(line.split(" - ", 1)[1].rsplit(" (", 1)[0])
    return names


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
    parser.add_argument("--suite", action="store_true",
                        help="run every mutation against the everyday suite, as scripts/test.sh does")
    parser.add_argument("--test-timeout", type=float, default=600,
                        help="seconds a mutation's tests may run before they count as hung (caught)")
    parser.add_argument("--scratch", help="build in this directory (kept) instead of a temporary one; under "
                        "ccache's base directory the build reuses its cache")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m[0] in args.only]
    if args.only and len(chosen) != len(args.only):
        known = ", ".join(m[0] for m in MUTATIONS)
        print(f"check_cudasim_mutations: unknown mutation in {args.only}; known: {known}", file=sys.stderr)
        return 2

    if args.scratch:
        scratch = os.path.abspath(args.scratch)
        shutil.rmtree(os.path.join(scratch, "tree"), ignore_errors=True)
        os.makedirs(scratch, exist_ok=True)
    else:
        scratch = tempfile.mkdtemp(prefix="attnbench-mutations-")
    tree = os.path.join(scratch, "tree")
    build = os.path.join(tree, "build")
    on_suite = [m for m in chosen if args.suite or m[5] is None]
    on_filter = [m for m in chosen if not (args.suite or m[5] is None)]
    try:
        for name in tracked_files():
            destination = os.path.join(tree, name)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if os.path.isfile(os.path.join(SOURCE, name)):
                shutil.copy2(os.path.join(SOURCE, name), destination)
        print(f"building the simulator's tests in {tree} ...", flush=True)
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        if run(["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DATTNBENCH_CUDA=OFF",
                "-DATTNBENCH_FUZZ=OFF", *launcher], tree, os.path.join(scratch, "configure.log")) != 0:
            print(f"configure failed: {scratch}/configure.log", file=sys.stderr)
            return 2
        targets = [] if on_suite else ["--target", *sorted({target_of(m) for m in on_filter})]
        build_command = ["cmake", "--build", build, "-j", str(args.jobs), *targets]
        suite_command = ["ctest", "--test-dir", build, "-j", str(args.jobs), "-LE", "cudasim_matrix"]

        def test(mutation, log):
            binary = os.path.join(build, "tests", target_of(mutation))
            return run([binary, f"--gtest_filter={mutation[5]}", "--gtest_fail_fast"], tree, log,
                       timeout=args.test_timeout)

        if run(build_command, tree, os.path.join(scratch, "build.log")) != 0:
            print(f"the unchanged tree does not build: {scratch}/build.log", file=sys.stderr)
            return 2
        unchanged_failures = set()
        if on_suite:
            log = os.path.join(scratch, "unchanged-suite.log")
            print("running the everyday suite on the unchanged tree ...", flush=True)
            if run(suite_command, tree, log) != 0:
                unchanged_failures = set(failed_tests(log))
                print(f"the unchanged tree fails {len(unchanged_failures)} everyday test(s), which do not count as "
                      f"catching a mutation: {', '.join(sorted(unchanged_failures))}", flush=True)
        for mutation in on_filter:
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
                if mutation in on_suite:
                    log = os.path.join(scratch, f"{name}.suite.log")
                    # On a tree that passes, the first failure settles it; stopping there spares the rest.
                    # A failure counts once it repeats: a test that only fails under load is no catch.
                    run(suite_command + ([] if unchanged_failures else ["--stop-on-failure"]), tree, log)
                    newly_failed = [t for t in failed_tests(log) if t not in unchanged_failures]
                    if newly_failed:
                        rerun_log = os.path.join(scratch, f"{name}.rerun.log")
                        run(suite_command + ["--rerun-failed"], tree, rerun_log)
                        newly_failed = [t for t in newly_failed if t in failed_tests(rerun_log)]
                        if not newly_failed and not unchanged_failures:
                            run(suite_command, tree, log)
                            newly_failed = [t for t in failed_tests(log) if t not in unchanged_failures]
                    caught = bool(newly_failed)
                    how = (f"{len(newly_failed)} everyday test(s) failed, e.g. " + ", ".join(newly_failed[:3])
                           if caught else "every everyday test passed")
                else:
                    caught = test(mutation, log) != 0
                    how = first_failure(log) if caught else "every test passed"
                results.append((name, what, "caught" if caught else "MISSED", how, time.time() - started))
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
        if args.keep or args.scratch:
            print(f"scratch tree kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
