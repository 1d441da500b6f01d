#!/usr/bin/env bash
# The prepared GPU check. It runs attnbench and the GPU-labelled tests from
# .deps/prebuilt.tar.xz (built here for sm_90 by scripts/gather-deps.sh) where
# that bundle is from the tree's revision and loads there, and otherwise builds
# for the GPU present from the tree and .deps/usr. Its sections, most valuable
# first, each under its own time limit:
#   - the differential check (the instruction probes on the GPU against the
#     simulator, differential.log, among them the wgmma base-offset reading);
#   - the GPU-labelled tests (the correctness matrix of every CUDA
#     implementation, forward and gradients, and the Hopper GEMM), and the
#     Hopper GEMM's SASS;
#   - on a Hopper, cuda.flash.sm90 beside cuda.flash and cuda.cublas on the
#     FlashAttention-3 forward grid and its backward grid, then the short
#     forward and forward+backward benchmark (with the CUPTI profiling pass:
#     measured DRAM bytes beside the models), the three timing methods side by
#     side, the backward's deterministic mode against the unordered one,
#     attnbench doctor's NVML checks, the FlashAttention-3 ablation;
#   - cuda.flash.sm90's SASS, compute-sanitizer's memcheck, racecheck and
#     synccheck on one small padded, causal case with dropout for every CUDA
#     kernel, one case's DRAM bytes cross-checked with ncu, Table 21 with
#     --memory-only, PyTorch's SDPA backends (and flash-attn, FlashInfer where
#     installed) on the N 4k forward cases, the CUDA plug-in example and its
#     variants that break the plug-in rules (which the harness must catch).
# Every log and results file goes into OUTDIR; short tables are printed last.
#
# DEVICE_CHECK_SECONDS (default: no limit) is the time the whole check may
# take: a section whose time limit would pass it is cut to what is left, and
# skipped where less than its useful minimum is left, saying so in steps.log.
# DEVICE_CHECK_SKIP names sections to leave out (space-separated: differential
# gpu-tests fa3-grid fa3-grid-bwd benchmark timing-methods bwd-deterministic
# doctor fa3-ablation sm90-sass sanitizer ncu table21 torch-peer plugin), for a second call that runs what the first did not.
#
# The device tool brings back at most 8 files of at most 16 MiB each from $OUT,
# and this check writes some forty: given BUNDLEDIR, every step also refreshes
# BUNDLEDIR/device-check.tar.gz (all of OUTDIR, gzipped; the SASS listings left
# out should it pass 15 MiB) and BUNDLEDIR/steps.log, so a run the call's time
# limit cuts short still returns everything it finished.
#
#   scripts/gather-deps.sh                              # here, once: .deps for the GPU machine
#   scripts/device-check.sh /tmp/device-check "$OUT"    # there (device tool: carry [".deps/prebuilt.tar.xz"])
set -uo pipefail
out=${1:?usage: scripts/device-check.sh OUTDIR [BUNDLEDIR]}
bundle=${2:-}
mkdir -p "$out" ${bundle:+"$bundle"}
out=$(cd "$out" && pwd)
[[ -n $bundle ]] && bundle=$(cd "$bundle" && pwd)
cd "$(dirname "$0")/.."
started=$SECONDS
budget=${DEVICE_CHECK_SECONDS:-0}
skip=" ${DEVICE_CHECK_SKIP:-} "
# A kernel that never ends fails its case after a minute and the run goes on
# without that implementation's later cases (harness/cuda/device_wait.hpp):
# no call here takes longer than the 20 s the
# --memory-only runs allow themselves. Each time limit below sends SIGTERM
# (attnbench saves what it finished) and SIGKILL 10 s later.
export ATTNBENCH_DEVICE_WAIT_LIMIT=${ATTNBENCH_DEVICE_WAIT_LIMIT:-60}
refresh_bundle() {
  [[ -n $bundle ]] || return 0
  tar -czf "$bundle/device-check.tar.gz.part" -C "$(dirname "$out")" "$(basename "$out")" 2> /dev/null
  if (( $(stat -c %s "$bundle/device-check.tar.gz.part") > 15 * 1024 * 1024 )); then
    tar -czf "$bundle/device-check.tar.gz.part" --exclude='*.sass' -C "$(dirname "$out")" "$(basename "$out")" 2> /dev/null
  fi
  mv "$bundle/device-check.tar.gz.part" "$bundle/device-check.tar.gz"
  cp "$out/steps.log" "$bundle/steps.log"
}
step() {
  printf '[device-check %4ds] %s\n' $((SECONDS - started)) "$*" | tee -a "$out/steps.log"
  refresh_bundle
}
# section NAME LIMIT MINIMUM: whether the section NAME runs, with its time limit
# in $limit: LIMIT seconds, cut to what is left of DEVICE_CHECK_SECONDS; not
# where DEVICE_CHECK_SKIP names it or less than MINIMUM seconds are left.
limit=0
section() {
  local left=$(( budget > 0 ? budget - (SECONDS - started) : $2 ))
  if [[ $skip == *" $1 "* ]]; then
    step "$1: skipped (DEVICE_CHECK_SKIP)"; return 1
  elif (( left < $3 )); then
    step "$1: skipped, ${left} s left of the ${budget} s budget"; return 1
  fi
  limit=$(( left < $2 ? left : $2 ))
}

nvidia-smi > "$out/nvidia-smi.txt" 2>&1
capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')

# The programs: from the carried bundle where it was built from this tree's
# sources and loads here with the GPU in sight, else from a build of the tree.
tree_sources=$(scripts/sources-revision.sh 2> /dev/null)
bin=
tests_bin=
carried=
if [[ -f .deps/prebuilt.tar.xz ]]; then
  carried=$(mktemp -d)
  tar -xJf .deps/prebuilt.tar.xz -C "$carried"
  carried_sources=$(cat "$carried/prebuilt/sources")
  if [[ -n $tree_sources && $tree_sources != "$carried_sources" ]]; then
    step "the carried programs are from sources $carried_sources, the tree's are $tree_sources: building"
  elif "$carried/prebuilt/bin/attnbench" info --json > "$out/info.json" 2> "$out/info-carried.log" &&
       python3 -c 'import json, sys; sys.exit(not any(d["device"] == "cuda" and d["available"]
                   for d in json.load(open(sys.argv[1]))["devices"]))' "$out/info.json" 2>> "$out/info-carried.log"; then
    bin=$carried/prebuilt/bin
    tests_bin=$bin
    step "running the carried programs (sources $carried_sources; libraries: $(ls "$carried/prebuilt/lib" | tr '\n' ' '))"
  else
    step "the carried programs do not run here or see no GPU (info-carried.log): building"
  fi
fi

if [[ -z $bin ]]; then
  prefix=()
  if [[ -d .deps/usr ]]; then
    prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
    # OpenBLAS's own dependencies (libgfortran) are found through the loader's path.
    export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/$(gcc -print-multiarch)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  step "configure for sm_${capability:-90}"
  if ! cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" \
       -DCMAKE_CUDA_ARCHITECTURES="${capability:-90}" -DATTNBENCH_CUDA=ON -DATTNBENCH_PTXAS_VERBOSE=ON \
       > "$out/configure.log" 2>&1; then
    step "configure failed"; tail -n 30 "$out/configure.log"; exit 4
  fi
  step "build"
  if ! cmake --build build-gpu -j "$(nproc)" > "$out/build.log" 2>&1; then
    step "build failed"; grep -E "error" "$out/build.log" | head -n 30; exit 4
  fi
  grep -E "Compiling entry|registers|spill" "$out/build.log" > "$out/ptxas.log" || true
  # Kernels that spill, by entry name; the compile checks of tests/cuda/ never
  # run (hopper_wgmma_compile_check holds every wgmma shape at once and spills).
  spilling=$(awk '/Compiling entry function/ { entry = $0; sub(/.*function .\x27?/, "", entry); sub(/\x27.*/, "", entry) }
                  /bytes spill/ && !/ 0 bytes spill stores, 0 bytes spill loads/ && entry !~ /compile_check/ { print entry }' \
               "$out/ptxas.log" | sort -u)
  step "ptxas: $(grep -c . <<< "$spilling") kernel(s) with spills (ptxas.log)${spilling:+: $(tr '\n' ' ' <<< "$spilling")}"
  bin=build-gpu/harness
  tests_bin=build-gpu/tests
  "$bin/attnbench" info --json > "$out/info.json" 2>&1
fi

# The differential check (tests/test_differential.cpp, docs/cudasim.md "The
# differential check"): every instruction probe on this GPU and on the
# simulator from the same inputs, one line per form in differential.log (the
# gtest run around them in differential-run.log), among them the line that
# says which reading of the wgmma base offset the hardware has.
differential_status=skipped
if [[ -x $tests_bin/test_cuda_differential ]] && section differential 60 20; then
  step "differential check (test_cuda_differential, at most $limit s)"
  timeout -k 10 "$limit" "$tests_bin/test_cuda_differential" --gtest_filter='Differential.EveryFormOnBothSides' \
    > "$out/differential-run.log" 2>&1
  differential_status=$?
  grep -E '^differential check: | elements  ' "$out/differential-run.log" > "$out/differential.log"
  step "differential check: exit $differential_status, $(grep -c ' elements  identical' "$out/differential.log") identical,\
 $(grep -c ' elements  differs' "$out/differential.log") differing, $(grep -c ' elements  failed' "$out/differential.log") failed;\
 base offset: $(grep -o 'decided: .*\|neither .*' "$out/differential.log" | head -n 1) (differential.log)"
fi

# The GPU-labelled tests: the correctness matrix of every CUDA implementation
# in four shards side by side, and the Hopper GEMM (kernels/cuda/hopper_gemm.cu)
# against a host product, which confirms the simulator's Hopper semantics on
# an sm_90 GPU (it skips, saying why, on another); its SASS should show wgmma
# (HGMMA), TMA (UTMALDG, UTMASTG), stmatrix (STSM) and setmaxnreg (USETMAXREG).
tests_status=skipped
hopper_status=skipped
if section gpu-tests 150 40; then
  step "GPU tests (test_cuda_correctness in 4 shards, test_cuda_hopper_gemm; at most $limit s)"
  shards=()
  for shard in 0 1 2 3; do
    OMP_NUM_THREADS=4 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$shard timeout -k 10 "$limit" "$tests_bin/test_cuda_correctness" \
      > "$out/gpu-tests-$shard.log" 2>&1 &
    shards+=($!)
  done
  timeout -k 10 "$limit" "$tests_bin/test_cuda_hopper_gemm" > "$out/hopper-gemm.log" 2>&1
  hopper_status=$?
  tests_status=0
  for shard in "${shards[@]}"; do wait "$shard" || tests_status=$?; done
  cat "$out"/gpu-tests-[0-3].log > "$out/gpu-tests.log"
  # Counted per test, so that shards cut short by the limit still count what they ran.
  step "GPU tests: exit $tests_status, $(grep -c '^\[       OK \] .*([0-9]* ms)$' "$out/gpu-tests.log") passed,\
 $(grep -c '^\[  FAILED  \] .*([0-9]* ms)$' "$out/gpu-tests.log") failed,\
 $(grep -c '^\[  SKIPPED \] .*([0-9]* ms)$' "$out/gpu-tests.log") skipped;\
 Hopper GEMM: $(grep -E 'PASSED|FAILED|SKIPPED' "$out/hopper-gemm.log" | tail -n 1)"
  cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  hopper_elf=$tests_bin/test_cuda_hopper_gemm
  [[ -x $carried/prebuilt/libexec/test_cuda_hopper_gemm && $tests_bin == "$bin" ]] && hopper_elf=$carried/prebuilt/libexec/test_cuda_hopper_gemm
  if [[ -x $cuobjdump ]]; then
    "$cuobjdump" -sass "$hopper_elf" > "$out/hopper-gemm.sass" 2>&1
    step "Hopper GEMM SASS: $(grep -c HGMMA "$out/hopper-gemm.sass") HGMMA, $(grep -cE 'UTMALDG|UTMASTG' \
      "$out/hopper-gemm.sass") UTMA, $(grep -c STSM "$out/hopper-gemm.sass") STSM, $(grep -c USETMAXREG \
      "$out/hopper-gemm.sass") USETMAXREG (hopper-gemm.sass)"
  fi
fi

# The Hopper forward's figures, the ones nothing but a GPU gives:
# cuda.flash.sm90 beside cuda.flash and cuda.cublas on the FlashAttention-3
# forward grid (d 128 first, the longest sequences first), timings only (the
# CUPTI pass is the benchmark's); a section cut short keeps the cases it
# finished (the results file is written as the run goes).
fa3_status=skipped
if [[ ${capability:-90} == 90 ]] && section fa3-grid 120 45; then
  step "FlashAttention-3 forward grid (scenarios/fa3_grid_fwd.json, at most $limit s)"
  timeout -k 10 "$limit" "$bin/attnbench" run scenarios/fa3_grid_fwd.json --no-profile --overwrite -o "$out/fa3_grid.json" > "$out/fa3_grid.log" 2>&1
  fa3_status=$?
  "$bin/attnbench" report "$out/fa3_grid.json" --table seqlen > "$out/report-fa3-grid.md" 2>> "$out/fa3_grid.log"
  step "FlashAttention-3 grid: exit $fa3_status (report-fa3-grid.md)"
fi

# The Hopper backward beside cuda.flash's and cuda.cublas's on the
# FlashAttention-3 backward grid (d 128 first), timings only.
fa3_bwd_status=skipped
if [[ ${capability:-90} == 90 ]] && section fa3-grid-bwd 150 45; then
  step "FlashAttention-3 backward grid (scenarios/fa3_grid_bwd.json, at most $limit s)"
  timeout -k 10 "$limit" "$bin/attnbench" run scenarios/fa3_grid_bwd.json --no-profile --overwrite -o "$out/fa3_grid_bwd.json" \
    > "$out/fa3_grid_bwd.log" 2>&1
  fa3_bwd_status=$?
  "$bin/attnbench" report "$out/fa3_grid_bwd.json" --table seqlen > "$out/report-fa3-grid-bwd.md" 2>> "$out/fa3_grid_bwd.log"
  step "FlashAttention-3 backward grid: exit $fa3_bwd_status (report-fa3-grid-bwd.md)"
fi

bench_status=skipped
if section benchmark 120 40; then
  step "benchmark (scenarios/device_check.json, at most $limit s)"
  timeout -k 10 "$limit" "$bin/attnbench" run scenarios/device_check.json --overwrite -o "$out/results.json" > "$out/benchmark.log" 2>&1
  bench_status=$?
  for table in seqlen memory accuracy roofline io; do
    "$bin/attnbench" report "$out/results.json" --table "$table" > "$out/report-$table.md" 2>> "$out/benchmark.log"
  done
  step "benchmark: exit $bench_status (report-seqlen.md)"
fi

# The timing methods side by side (docs/design.md §4.1): scenarios/timing_methods.json
# once per --timing method, cold and hot, then scripts/compare_timing_methods.py:
# on N 8k cupti and graph within 2% of each other, on N 512 hot the events time
# above both by the launch overhead (timing-methods.txt).
timing_status=skipped
if section timing-methods 150 60; then
  step "timing methods (scenarios/timing_methods.json: events, cupti, graph, cold and hot; at most $limit s)"
  timing_status=0
  for cache in cold hot; do
    for method in events cupti graph; do
      timeout -k 10 $(( limit / 6 )) "$bin/attnbench" run scenarios/timing_methods.json --timing "$method" --"$cache" \
        --no-profile --overwrite -o "$out/timing-$method-$cache.json" > "$out/timing-$method-$cache.log" 2>&1 ||
        timing_status=$?
    done
  done
  python3 scripts/compare_timing_methods.py "$out"/timing-*-*.json > "$out/timing-methods.txt" 2>&1 || timing_status=$?
  step "timing methods: exit $timing_status, $(tail -n 1 "$out/timing-methods.txt") (timing-methods.txt)"
fi

# The backward's deterministic mode (dQ added in key-tile order) against the
# unordered one, on the same cases.
deterministic_status=skipped
if [[ ${capability:-90} == 90 ]] && section bwd-deterministic 60 25; then
  step "deterministic backward ablation (scenarios/fa3_bwd_deterministic.json, at most $limit s)"
  timeout -k 10 "$limit" "$bin/attnbench" run scenarios/fa3_bwd_deterministic.json --no-profile --overwrite \
    -o "$out/fa3_bwd_deterministic.json" > "$out/fa3_bwd_deterministic.log" 2>&1
  deterministic_status=$?
  "$bin/attnbench" report "$out/fa3_bwd_deterministic.json" --table seqlen > "$out/report-fa3-bwd-deterministic.md" \
    2>> "$out/fa3_bwd_deterministic.log"
  step "deterministic backward ablation: exit $deterministic_status (report-fa3-bwd-deterministic.md)"
fi

# attnbench doctor on the GPU machine: the NVML checks (other processes,
# persistence, power limit, ECC, clocks, throttle reasons) read from a real device.
doctor_status=skipped
if section doctor 20 10; then
  timeout -k 5 "$limit" "$bin/attnbench" doctor --json > "$out/doctor.json" 2> "$out/doctor.log"
  doctor_status=$?
  step "doctor: exit $doctor_status, $(grep -c '"gpu' "$out/doctor.json") GPU finding(s) (doctor.json)"
fi

# The paper's ablation: each of the Hopper forward's two overlaps off by its run-time flag.
ablation_status=skipped
if [[ ${capability:-90} == 90 ]] && section fa3-ablation 45 25; then
  step "FlashAttention-3 ablation (scenarios/fa3_ablation.json, at most $limit s)"
  timeout -k 10 "$limit" "$bin/attnbench" run scenarios/fa3_ablation.json --no-profile --overwrite -o "$out/fa3_ablation.json" > "$out/fa3_ablation.log" 2>&1
  ablation_status=$?
  "$bin/attnbench" report "$out/fa3_ablation.json" --table seqlen > "$out/report-fa3-ablation.md" 2>> "$out/fa3_ablation.log"
  step "FlashAttention-3 ablation: exit $ablation_status (report-fa3-ablation.md)"
fi

# cuda.flash.sm90's structure in the SASS this machine's build made: wgmma,
# setmaxnreg, TMA and mbarriers in every instance, no local memory (the
# carried programs' SASS is the development machine's build, which its own
# test suite checks: sm90_sass_structure).
sm90_status=skipped
if [[ $bin == build-gpu/harness ]] && section sm90-sass 60 10; then
  timeout -k 5 "$limit" python3 scripts/check_sm90_sass.py "$bin/attnbench" > "$out/sm90-sass.log" 2>&1
  sm90_status=$?
  step "cuda.flash.sm90 SASS: $(grep -c '^ok' "$out/sm90-sass.log") kernel(s) ok, $(grep -c '^FAIL' "$out/sm90-sass.log") failing (sm90-sass.log)"
fi

# compute-sanitizer on every kernel of cuda.flash (forward and backward),
# cuda.flash.simple, cuda.flash.sm90 (forward and backward, and the backward's
# deterministic mode) and cuda.cublas: one small case, padded, causal, with
# dropout, forward and forward+backward (and forward+backward at head dim 256,
# the Hopper backward's other tiling); the in-process profiler off.
sanitizer_status=skipped
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ -x $sanitizer ]] && section sanitizer 180 60; then
  cat > "$out/sanitizer_case.json" <<'JSON'
{"name": "sanitizer_check", "description": "one small padded, causal case with dropout for compute-sanitizer",
 "defaults": {"batch": 2, "heads": 4, "kv_heads": 2, "seqlen": 100, "head_dim": 64, "dtype": "fp16",
              "causal": true, "align": "bottom_right", "padding": {"lengths": [100, 63]}, "dropout": 0.1},
 "cases": [{"direction": "fwd"}, {"direction": "fwd+bwd"}, {"direction": "fwd+bwd", "head_dim": 256}],
 "implementations": ["cuda.flash", "cuda.flash.simple", "cuda.flash.sm90", "cuda.flash.sm90.deterministic", "cuda.cublas"],
 "measure": {"cache": "hot", "warmup_min_iterations": 0, "warmup_min_seconds": 0, "min_samples": 1,
             "max_samples": 1, "min_seconds": 0, "max_seconds": 0.001}}
JSON
  sanitizer_status=0
  sanitizer_limit=$(( limit / 3 ))
  for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer --tool $tool (at most $sanitizer_limit s)"
    timeout -k 10 "$sanitizer_limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
      "$bin/attnbench" run "$out/sanitizer_case.json" --no-profile --overwrite -o "$out/sanitizer-$tool.json" \
      > "$out/sanitizer-$tool.log" 2>&1 || sanitizer_status=$?
    step "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.log" | tail -n 1)"
  done
fi

# ncu cross-check: the N 4k, d 64 forward case (device_check.json
# case 1) once more under ncu, in-process profiler off (--no-profile: two
# profilers cannot share CUPTI), timing and accuracy cut to the minimum; ncu
# profiles only the checked call (NVTX range case/implementation/check).
ncu_status=skipped
if command -v ncu > /dev/null && section ncu 80 40; then
  step "ncu cross-check (dram__bytes_read.sum, dram__bytes_write.sum; at most $limit s)"
  cat > "$out/ncu_case.json" <<'JSON'
{"name": "ncu_cross_check", "description": "device_check.json case 1 for the ncu cross-check",
 "defaults": {"tokens": 16384, "hidden": 2048, "dtype": "fp16", "direction": "fwd"},
 "cases": [{"head_dim": 64, "seqlen": 4096}],
 "implementations": ["cuda.cublas", "cuda.flash"],
 "measure": {"cache": "cold", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 1,
             "max_samples": 2, "min_seconds": 0, "max_seconds": 0.01},
 "accuracy": {"check": false}}
JSON
  ncu_status=0
  for impl in cuda.cublas cuda.flash; do
    timeout -k 10 $(( limit / 2 )) ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
      --nvtx --nvtx-include "attnbench@case ncu_cross_check#0/$impl/check/" --csv --print-units base --log-file "$out/ncu-$impl.csv" \
      "$bin/attnbench" run "$out/ncu_case.json" --impl "$impl" --no-profile --overwrite -o "$out/ncu-run-$impl.json" \
      > "$out/ncu-run-$impl.log" 2>&1 || ncu_status=$?
  done
fi

# Table 21 with --memory-only: each case called once where it fits on this GPU
# (memory measured), planned where not; beside the published numbers in
# report-table21.md (the planned amounts are what a machine without a GPU shows).
table21_status=skipped
if section table21 90 40; then
  step "Table 21 (scenarios/paper/table21_memory.json --memory-only, at most $limit s)"
  timeout -k 10 "$limit" "$bin/attnbench" run scenarios/paper/table21_memory.json --memory-only --overwrite \
    -o "$out/table21.json" > "$out/table21.log" 2>&1
  table21_status=$?
  "$bin/attnbench" report "$out/table21.json" --table memory > "$out/report-table21.md" 2>> "$out/table21.log"
fi

# PyTorch's SDPA backends beside ours on the device_check cases at
# N 4k, forward, merged into one table with ours; and flash-attn 2 and 3 and
# FlashInfer through their adapters where they are installed (their records
# are skipped, saying so, where not).
peer_status=skipped
if section torch-peer 90 40; then
  step "PyTorch peer (scripts/torch_peer.py, N 4k forward cases, at most $limit s)"
  peer_status=0
  timeout -k 10 "$limit" python3 scripts/torch_peer.py scenarios/device_check.json --attnbench "$bin/attnbench" \
    --backends flash,cudnn,efficient,math --callable fa2 --callable fa3 --callable flashinfer \
    --filter 'q4096-.*-fwd-' --overwrite -o "$out/torch_peer.json" > "$out/torch_peer.log" 2>&1 || peer_status=$?
  if [[ -f $out/torch_peer.json && -f $out/results.json ]]; then
    "$bin/attnbench" merge "$out/results.json" "$out/torch_peer.json" --allow-mixed-devices -o "$out/merged.json" \
      >> "$out/torch_peer.log" 2>&1 &&
      "$bin/attnbench" report "$out/merged.json" --table seqlen > "$out/report-peers.md" 2>> "$out/torch_peer.log"
  fi
fi
# The CUDA plug-in example (examples/plugins/cuda_attention.cu), built with the
# command docs/plugins.md gives for this GPU's architecture, against the oracle
# and cuda.cublas; and its two variants that break the rules, which the stream
# check must fail and the device-memory check must flag.
plugin_status=skipped
if section plugin 90 30; then
  step "CUDA plug-in example (examples/plugins/cuda_attention.cu)"
  plugin_status=0
  for variant in "" DEFAULT_STREAM OWN_ALLOCATION; do
    nvcc -O2 -shared -Xcompiler -fPIC -cudart shared -I include \
      -gencode arch=compute_${capability:-90},code=sm_${capability:-90} ${variant:+-DATTNBENCH_EXAMPLE_$variant} \
      examples/plugins/cuda_attention.cu -o "$out/libcuda_attention${variant:+_$variant}.so" \
      >> "$out/plugin.log" 2>&1 || plugin_status=$?
  done
  cat > "$out/plugin_case.json" <<'JSON'
{"name": "plugin_check", "description": "the CUDA plug-in example and its rule-breaking variants",
 "defaults": {"batch": 2, "heads": 8, "kv_heads": 2, "seqlen": 1024, "head_dim": 128, "dtype": "bf16", "direction": "fwd"},
 "cases": [{}, {"causal": true, "padding": {"lengths": [1024, 700]}}, {"seqlen_q": 300, "window": [128, 0], "layout": "bhsd"}],
 "implementations": ["cuda.cublas", "cuda.example", "cuda.example_default_stream", "cuda.example_own_allocation"],
 "measure": {"cache": "cold", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 10,
             "max_samples": 50, "min_seconds": 0, "max_seconds": 0.5}}
JSON
  if [[ $plugin_status == 0 ]]; then
    timeout -k 10 "$limit" "$bin/attnbench" run "$out/plugin_case.json" --overwrite -o "$out/plugin.json" --plugin "$out/libcuda_attention.so" \
      --plugin "$out/libcuda_attention_DEFAULT_STREAM.so" --plugin "$out/libcuda_attention_OWN_ALLOCATION.so" \
      >> "$out/plugin.log" 2>&1
    python3 - "$out/plugin.json" > "$out/plugin-summary.txt" 2>&1 <<'PY' || plugin_status=$?
import json, sys
records = json.load(open(sys.argv[1]))["records"]
wrong = []
for r in records:
    checks = (r.get("plugin") or {}).get("checks") or {}
    stream = (checks.get("stream") or {}).get("status", "-")
    memory = (checks.get("device_memory") or {}).get("status", "-")
    print(f"{r['case_index']} {r['implementation']:<28} {r['status']:<7} stream {stream:<12} memory {memory:<9} "
          f"{r['reason'][:70]}")
    expected = {"cuda.example": ("ok", "passed", "passed"), "cuda.cublas": ("ok", "-", "-"),
                "cuda.example_default_stream": ("failed", "failed", None),
                "cuda.example_own_allocation": (None, None, "allocated")}[r["implementation"]]
    if any(want is not None and got != want for want, got in zip(expected, (r["status"], stream, memory))):
        wrong.append(r["implementation"])
print("plug-in checks:", "as expected" if not wrong else "NOT as expected for " + ", ".join(sorted(set(wrong))))
sys.exit(1 if wrong else 0)
PY
  fi
  step "CUDA plug-in example: $(tail -n 1 "$out/plugin-summary.txt" 2>/dev/null || echo 'not built (plugin.log)')"
  fi
step "done: differential $differential_status, FA3 backward grid $fa3_bwd_status, deterministic backward $deterministic_status, timing methods $timing_status, doctor exit $doctor_status, tests exit $tests_status, Hopper GEMM $hopper_status, sm90 SASS $sm90_status, FA3 grid $fa3_status, FA3 ablation $ablation_status, benchmark exit $bench_status, ncu $ncu_status, compute-sanitizer $sanitizer_status, torch peer $peer_status, plug-in $plugin_status, Table 21 $table21_status"

echo
echo "== failing GPU tests =="
grep -hE '^\[  FAILED  \] [A-Za-z]' "$out/gpu-tests.log" 2> /dev/null | head -n 20 || true
echo "== compute-sanitizer =="
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|Program hit|Invalid|Race reported" "$out"/sanitizer-*.log 2>/dev/null | head -n 20 || true
for table in fa3-grid fa3-grid-bwd fa3-bwd-deterministic fa3-ablation; do
  if [[ -f $out/report-$table.md ]]; then
    echo "== cuda.flash.sm90: $table (median ms and TFLOP/s) =="
    cat "$out/report-$table.md"
  fi
done
echo "== timing methods: events, cupti, graph =="
cat "$out/timing-methods.txt" 2> /dev/null || echo "(not run)"
echo "== benchmark (median ms and TFLOP/s) =="
cat "$out/report-seqlen.md" 2> /dev/null || echo "(not written; see benchmark.log)"
if [[ -f $out/report-peers.md ]]; then
  echo "== with PyTorch's backends (N 4k, forward) =="
  cat "$out/report-peers.md"
fi
echo "== Table 21: peak memory, measured on this GPU where it fits (p: planned) =="
cat "$out/report-table21.md" 2>/dev/null || echo "(not written; see table21.log)"
echo "== the CUDA plug-in example and its rule-breaking variants =="
cat "$out/plugin-summary.txt" 2>/dev/null || echo "(not run; see plugin.log)"
echo "== HBM traffic: measured (CUPTI) against modelled, and the ncu cross-check =="
[[ -f $out/results.json ]] && python3 - "$out" <<'PY' || echo "(no table: see results.json and ncu-*.csv)"
import csv, glob, json, os, sys
out = sys.argv[1]
records = json.load(open(os.path.join(out, "results.json")))["records"]
print(f"{'case':>4} {'implementation':<12} {'measured GB':>11} {'modelled GB':>11} {'ratio':>6}  profiler")
for r in records:
    t = r["traffic"]
    m, model = t.get("measured") or {}, t.get("modelled") or {}
    gb = lambda e: (e["read_bytes"] + e["write_bytes"]) / 1e9 if "read_bytes" in e else None
    fmt = lambda v, spec: format(v, spec) if v is not None else format("-", ">" + spec.split(".")[0])
    ratio = (t.get("ratio_to_modelled") or {}).get("measured") or {}
    print(f"{r['case_index']:>4} {r['implementation']:<12} {fmt(gb(m), '11.3f')} {fmt(gb(model), '11.3f')} "
          f"{fmt(ratio.get('total'), '6.3f')}  {m.get('status', '-')} {m.get('reason', '')[:60]}")
def ncu_bytes(path):
    rows, total = 0, 0.0
    lines = [l for l in open(path) if l.startswith('"')]
    for row in csv.DictReader(lines):
        name = row.get("Kernel Name", "")
        if "fill_words" in name or row.get("Metric Name") not in ("dram__bytes_read.sum", "dram__bytes_write.sum"):
            continue
        unit = row.get("Metric Unit", "byte").lower()
        scale = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}.get(unit, 1)
        total += float(row["Metric Value"].replace(",", "")) * scale
        rows += 1
    return total, rows
for impl in ("cuda.cublas", "cuda.flash"):
    path = os.path.join(out, f"ncu-{impl}.csv")
    harness = [r for r in records if r["case_index"] == 1 and r["implementation"] == impl]
    if not os.path.exists(path) or not harness:
        print(f"ncu {impl}: not run"); continue
    ncu, rows = ncu_bytes(path)
    m = harness[0]["traffic"].get("measured") or {}
    ours = (m["read_bytes"] + m["write_bytes"]) if "read_bytes" in m else None
    ratio = f"{ours / ncu:.4f}" if ours and ncu else "-"
    print(f"ncu {impl}: ncu {ncu / 1e9:.3f} GB over {rows // 2} kernel(s), harness "
          f"{ours / 1e9 if ours else float('nan'):.3f} GB, harness/ncu {ratio}")
PY
refresh_bundle
failed() { [[ $1 != skipped && $1 != 0 ]]; }
failed "$tests_status" || failed "$bench_status" || failed "$plugin_status"
exit $(( $? == 0 ))
