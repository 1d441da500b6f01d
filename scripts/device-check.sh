#!/usr/bin/env bash
# The prepared GPU check: on a machine with a GPU, build
# for the GPU present (dependencies from .deps, see scripts/gather-deps.sh);
# on a Hopper, time cuda.flash.sm90 on the FlashAttention-3 forward grid and
# the paper's ablation, then its backward grid and the backward's
# deterministic ablation, first (the figures only a GPU gives, each section under
# its own time limit; before the build, with the sm_90 binary gather-deps.sh
# built, where that one runs here); run the differential check (the
# instruction probes on the GPU against the simulator, differential.log);
# record attnbench doctor's GPU checks; run
# the GPU-labelled tests (the correctness matrix of
# every CUDA implementation, forward and gradients, and the Hopper GEMM), show
# the Hopper GEMM's SASS and its own run and cuda.flash.sm90's SASS, run a
# short forward and forward+backward benchmark
# (with the CUPTI profiling pass: measured DRAM bytes beside the models),
# cross-check one case's DRAM bytes with ncu, run compute-sanitizer's memcheck,
# racecheck and synccheck on one small padded, causal case with dropout for
# every CUDA kernel, reproduce Table 21 with --memory-only (memory measured
# where a case fits), run PyTorch's SDPA backends (and flash-attn, FlashInfer
# where installed) on the N 4k forward cases,
# build and run the CUDA plug-in example (and its variants that break the
# plug-in rules, which the harness must catch), and write every log and results
# file into OUTDIR. Prints
# short tables last. Not yet timed on a GPU: give it up to 10 minutes with a
# fresh build; a rerun on the same machine reuses build-gpu/.
#
# The device tool brings back at most 8 files of at most 16 MiB each from $OUT,
# and this check writes some forty: given BUNDLEDIR, every step also refreshes
# BUNDLEDIR/device-check.tar.gz (all of OUTDIR, gzipped; the SASS listings left
# out should it pass 15 MiB) and BUNDLEDIR/steps.log, so a run the call's time
# limit cuts short still returns everything it finished.
#
#   scripts/gather-deps.sh                              # here, once: .deps for the GPU machine
#   scripts/device-check.sh /tmp/device-check "$OUT"    # there (device tool: carry [".deps"])
set -uo pipefail
out=${1:?usage: scripts/device-check.sh OUTDIR [BUNDLEDIR]}
bundle=${2:-}
mkdir -p "$out" ${bundle:+"$bundle"}
out=$(cd "$out" && pwd)
[[ -n $bundle ]] && bundle=$(cd "$bundle" && pwd)
cd "$(dirname "$0")/.."
started=$SECONDS
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

nvidia-smi > "$out/nvidia-smi.txt" 2>&1
capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
prefix=()
if [[ -d .deps/usr ]]; then
  prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
  # OpenBLAS's own dependencies (libgfortran) are found through the loader's path.
  export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/$(gcc -print-multiarch)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# The Hopper forward's figures first, the ones nothing but a GPU gives:
# cuda.flash.sm90 beside cuda.flash and cuda.cublas on the FlashAttention-3
# forward grid (the longest sequences first), then the paper's ablation (each
# of the kernel's two overlaps off by its run-time flag). Each under its own
# time limit, so a slow section cannot take the rest of the lease; a section
# cut short keeps the cases it finished (the results file is written as the
# run goes). Only on a Hopper.
fa3_status=skipped
ablation_status=skipped
fa3_bwd_status=skipped
deterministic_status=skipped
fa3_ran_with=none
fa3_sections() {  # "$@": the attnbench command
  step "FlashAttention-3 forward grid (scenarios/fa3_grid_fwd.json, at most 240 s)"
  timeout -k 10 240 "$@" run scenarios/fa3_grid_fwd.json --overwrite -o "$out/fa3_grid.json" > "$out/fa3_grid.log" 2>&1
  fa3_status=$?
  "$@" report "$out/fa3_grid.json" --table seqlen > "$out/report-fa3-grid.md" 2>> "$out/fa3_grid.log"
  step "FlashAttention-3 grid: exit $fa3_status (report-fa3-grid.md)"
  step "FlashAttention-3 ablation (scenarios/fa3_ablation.json, at most 60 s)"
  timeout -k 10 60 "$@" run scenarios/fa3_ablation.json --overwrite -o "$out/fa3_ablation.json" > "$out/fa3_ablation.log" 2>&1
  ablation_status=$?
  "$@" report "$out/fa3_ablation.json" --table seqlen > "$out/report-fa3-ablation.md" 2>> "$out/fa3_ablation.log"
  step "FlashAttention-3 ablation: exit $ablation_status (report-fa3-ablation.md)"
  step "FlashAttention-3 backward grid (scenarios/fa3_grid_bwd.json, at most 240 s)"
  timeout -k 10 240 "$@" run scenarios/fa3_grid_bwd.json --overwrite -o "$out/fa3_grid_bwd.json" > "$out/fa3_grid_bwd.log" 2>&1
  fa3_bwd_status=$?
  "$@" report "$out/fa3_grid_bwd.json" --table seqlen > "$out/report-fa3-grid-bwd.md" 2>> "$out/fa3_grid_bwd.log"
  step "FlashAttention-3 backward grid: exit $fa3_bwd_status (report-fa3-grid-bwd.md)"
  step "deterministic backward ablation (scenarios/fa3_bwd_deterministic.json, at most 60 s)"
  timeout -k 10 60 "$@" run scenarios/fa3_bwd_deterministic.json --overwrite -o "$out/fa3_bwd_deterministic.json" \
    > "$out/fa3_bwd_deterministic.log" 2>&1
  deterministic_status=$?
  "$@" report "$out/fa3_bwd_deterministic.json" --table seqlen > "$out/report-fa3-bwd-deterministic.md" \
    2>> "$out/fa3_bwd_deterministic.log"
  step "deterministic backward ablation: exit $deterministic_status (report-fa3-bwd-deterministic.md)"
}

# The attnbench that scripts/gather-deps.sh built for sm_90 on the development
# machine (.deps/prebuilt), its libraries from .deps and the CUDA toolkit: where
# it loads here and finds the GPU, the two sections above run with it before
# this script's own build; where it does not (another system image), or where
# git can tell that it was built from another revision than the tree's, they
# run after the build.
carried_revision=$(cat .deps/prebuilt/revision 2> /dev/null)
tree_revision=$(git describe --always --dirty --abbrev=12 2> /dev/null)
if [[ -x .deps/prebuilt/attnbench && -n $tree_revision && $tree_revision != "$carried_revision" ]]; then
  step "the carried attnbench is from $carried_revision, the tree at $tree_revision: the FA3 sections after the build"
elif [[ ${capability:-90} == 90 && -x .deps/prebuilt/attnbench ]]; then
  # The loader's path already holds .deps's libraries (above); OpenBLAS's own
  # folder and the toolkit's stand in for the paths the binary was linked with.
  carried=(env LD_LIBRARY_PATH="$PWD/.deps/usr/lib/$(gcc -print-multiarch)/openblas-openmp:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
           .deps/prebuilt/attnbench)
  if "${carried[@]}" info --json > "$out/info-carried.json" 2> "$out/info-carried.log" &&
     python3 -c 'import json, sys; sys.exit(not any(d["device"] == "cuda" and d["available"]
                 for d in json.load(open(sys.argv[1]))["devices"]))' "$out/info-carried.json" 2>> "$out/info-carried.log"; then
    fa3_ran_with="the carried attnbench ($carried_revision)"
    step "$fa3_ran_with runs here and sees the GPU"
    fa3_sections "${carried[@]}"
  else
    step "the carried attnbench does not run here or sees no GPU (info-carried.log): the FA3 sections after the build"
  fi
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
"$bin/attnbench" info --json > "$out/info.json" 2>&1

# The first correctness section: the differential check (tests/test_differential.cpp,
# docs/cudasim.md "The differential check"), every instruction probe on this GPU
# and on the simulator from the same inputs, one line per form in
# differential.log (the gtest run around them in differential-run.log),
# among them the line that says which reading of the wgmma base offset the
# hardware has. ctest -L gpu below leaves it out.
differential_status=skipped
differential_binary=build-gpu/tests/test_cuda_differential
if [[ -x $differential_binary ]]; then
  step "differential check (test_cuda_differential, at most 240 s)"
  timeout -k 10 240 "$differential_binary" --gtest_filter='Differential.EveryFormOnBothSides' \
    > "$out/differential-run.log" 2>&1
  differential_status=$?
  grep -E '^differential check: | elements  ' "$out/differential-run.log" > "$out/differential.log"
  step "differential check: exit $differential_status, $(grep -c ' elements  identical' "$out/differential.log") identical,\
 $(grep -c ' elements  differs' "$out/differential.log") differing, $(grep -c ' elements  failed' "$out/differential.log") failed;\
 base offset: $(grep -o 'decided: .*\|neither .*' "$out/differential.log" | head -n 1) (differential.log)"
fi

if [[ ${capability:-90} == 90 && $fa3_ran_with == none ]]; then
  fa3_sections "$bin/attnbench"
  fa3_ran_with="this build"
fi

# attnbench doctor on the GPU machine: the NVML checks (other processes,
# persistence, power limit, ECC, clocks, throttle reasons) read from a real device.
timeout -k 5 30 "$bin/attnbench" doctor --json > "$out/doctor.json" 2> "$out/doctor.log"
doctor_status=$?
step "doctor: exit $doctor_status, $(grep -c '"gpu' "$out/doctor.json") GPU finding(s) (doctor.json)"

step "GPU tests (ctest -L gpu, at most 240 s)"
timeout -k 10 240 ctest --test-dir build-gpu -L gpu -E '^cuda:Differential[.]' --output-on-failure --timeout 120 -j 4 \
  > "$out/gpu-tests.log" 2>&1
tests_status=$?
step "GPU tests: $(grep -E 'tests passed|tests failed' "$out/gpu-tests.log" | tail -n 1)"

# The Hopper GEMM (kernels/cuda/hopper_gemm.cu), written against the simulator
# before any GPU ran it: its SASS should show wgmma (HGMMA), TMA (UTMALDG,
# UTMASTG), stmatrix (STSM) and setmaxnreg (USETMAXREG); its run against a host
# product on an sm_90 GPU confirms the simulator's Hopper semantics (it skips,
# saying why, on another GPU).
hopper_status=skipped
hopper_binary=build-gpu/tests/test_cuda_hopper_gemm
if [[ -x $hopper_binary ]]; then
  step "Hopper GEMM (test_cuda_hopper_gemm): SASS and run"
  cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  if [[ -x $cuobjdump ]]; then
    "$cuobjdump" -sass "$hopper_binary" > "$out/hopper-gemm.sass" 2>&1
    step "Hopper GEMM SASS: $(grep -c HGMMA "$out/hopper-gemm.sass") HGMMA, $(grep -cE 'UTMALDG|UTMASTG' \
      "$out/hopper-gemm.sass") UTMA, $(grep -c STSM "$out/hopper-gemm.sass") STSM, $(grep -c USETMAXREG \
      "$out/hopper-gemm.sass") USETMAXREG (hopper-gemm.sass)"
  fi
  timeout -k 10 120 "$hopper_binary" > "$out/hopper-gemm.log" 2>&1
  hopper_status=$?
  step "Hopper GEMM: $(grep -E 'PASSED|FAILED|SKIPPED' "$out/hopper-gemm.log" | tail -n 1)"
fi

# cuda.flash.sm90's structure in the SASS the build made for this machine:
# wgmma, setmaxnreg, TMA and mbarriers in every instance, no local memory.
sm90_status=skipped
if [[ -x $bin/attnbench ]]; then
  python3 scripts/check_sm90_sass.py "$bin/attnbench" > "$out/sm90-sass.log" 2>&1
  sm90_status=$?
  step "cuda.flash.sm90 SASS: $(grep -c '^ok' "$out/sm90-sass.log") kernel(s) ok, $(grep -c '^FAIL' "$out/sm90-sass.log") failing (sm90-sass.log)"
fi

step "benchmark (scenarios/device_check.json, at most 180 s)"
timeout -k 10 180 "$bin/attnbench" run scenarios/device_check.json --overwrite -o "$out/results.json" > "$out/benchmark.log" 2>&1
bench_status=$?
for table in seqlen memory accuracy roofline; do
  "$bin/attnbench" report "$out/results.json" --table "$table" > "$out/report-$table.md" 2>> "$out/benchmark.log"
done
"$bin/attnbench" report "$out/results.json" --table io > "$out/report-io.md" 2>> "$out/benchmark.log"

# Table 21 with --memory-only: each case called once where it fits on this GPU
# (memory measured), planned where not; beside the published numbers in
# report-table21.md (the planned amounts are what a machine without a GPU shows).
step "Table 21 (scenarios/paper/table21_memory.json --memory-only)"
timeout -k 10 180 "$bin/attnbench" run scenarios/paper/table21_memory.json --memory-only --overwrite \
  -o "$out/table21.json" > "$out/table21.log" 2>&1
table21_status=$?
"$bin/attnbench" report "$out/table21.json" --table memory > "$out/report-table21.md" 2>> "$out/table21.log"

# ncu cross-check: the N 4k, d 64 forward case (device_check.json
# case 1) once more under ncu, in-process profiler off (--no-profile: two
# profilers cannot share CUPTI), timing and accuracy cut to the minimum; ncu
# profiles only the checked call (NVTX range case/implementation/check).
ncu_status=skipped
if command -v ncu > /dev/null; then
  step "ncu cross-check (dram__bytes_read.sum, dram__bytes_write.sum)"
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
    timeout -k 10 60 ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
      --nvtx --nvtx-include "attnbench@case ncu_cross_check#0/$impl/check/" --csv --print-units base --log-file "$out/ncu-$impl.csv" \
      "$bin/attnbench" run "$out/ncu_case.json" --impl "$impl" --no-profile --overwrite -o "$out/ncu-run-$impl.json" \
      > "$out/ncu-run-$impl.log" 2>&1 || ncu_status=$?
  done
fi
# compute-sanitizer on every kernel of cuda.flash (forward and backward),
# cuda.flash.simple, cuda.flash.sm90 (forward) and cuda.cublas: one small case, padded, causal, with
# dropout, forward and forward+backward; the in-process profiler off.
sanitizer_status=skipped
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ -x $sanitizer ]]; then
  cat > "$out/sanitizer_case.json" <<'JSON'
{"name": "sanitizer_check", "description": "one small padded, causal case with dropout for compute-sanitizer",
 "defaults": {"batch": 2, "heads": 4, "kv_heads": 2, "seqlen": 100, "head_dim": 64, "dtype": "fp16",
              "causal": true, "align": "bottom_right", "padding": {"lengths": [100, 63]}, "dropout": 0.1},
 "cases": [{"direction": "fwd"}, {"direction": "fwd+bwd"}],
 "implementations": ["cuda.flash", "cuda.flash.simple", "cuda.flash.sm90", "cuda.cublas"],
 "measure": {"cache": "hot", "warmup_min_iterations": 0, "warmup_min_seconds": 0, "min_samples": 1,
             "max_samples": 1, "min_seconds": 0, "max_seconds": 0.001}}
JSON
  sanitizer_status=0
  for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer --tool $tool"
    timeout -k 10 150 "$sanitizer" --tool "$tool" --error-exitcode 99 \
      "$bin/attnbench" run "$out/sanitizer_case.json" --no-profile --overwrite -o "$out/sanitizer-$tool.json" \
      > "$out/sanitizer-$tool.log" 2>&1 || sanitizer_status=$?
    step "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.log" | tail -n 1)"
  done
fi
# PyTorch's SDPA backends beside ours on the device_check cases at
# N 4k, forward, merged into one table with ours; and flash-attn 2 and 3 and
# FlashInfer through their adapters where they are installed (their records
# are skipped, saying so, where not).
step "PyTorch peer (scripts/torch_peer.py, N 4k forward cases)"
peer_status=0
timeout -k 10 120 python3 scripts/torch_peer.py scenarios/device_check.json --attnbench "$bin/attnbench" \
  --backends flash,cudnn,efficient,math --callable fa2 --callable fa3 --callable flashinfer \
  --filter 'q4096-.*-fwd-' --overwrite -o "$out/torch_peer.json" > "$out/torch_peer.log" 2>&1 || peer_status=$?
if [[ -f $out/torch_peer.json ]]; then
  "$bin/attnbench" merge "$out/results.json" "$out/torch_peer.json" --allow-mixed-devices -o "$out/merged.json" \
    >> "$out/torch_peer.log" 2>&1 &&
    "$bin/attnbench" report "$out/merged.json" --table seqlen > "$out/report-peers.md" 2>> "$out/torch_peer.log"
fi
# The CUDA plug-in example (examples/plugins/cuda_attention.cu), built with the
# command docs/plugins.md gives for this GPU's architecture, against the oracle
# and cuda.cublas; and its two variants that break the rules, which the stream
# check must fail and the device-memory check must flag.
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
  "$bin/attnbench" run "$out/plugin_case.json" --overwrite -o "$out/plugin.json" --plugin "$out/libcuda_attention.so" \
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
step "done: FA3 sections with $fa3_ran_with; differential $differential_status, doctor exit $doctor_status, tests exit $tests_status, Hopper GEMM $hopper_status, sm90 SASS $sm90_status, FA3 grid $fa3_status, FA3 ablation $ablation_status, FA3 backward grid $fa3_bwd_status, deterministic backward $deterministic_status, benchmark exit $bench_status, ncu $ncu_status, compute-sanitizer $sanitizer_status, torch peer $peer_status, plug-in $plugin_status, Table 21 $table21_status"

echo
echo "== failing GPU tests =="
grep -E "\*\*\*Failed|Exception" "$out/gpu-tests.log" | head -n 20 || true
echo "== compute-sanitizer =="
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|Program hit|Invalid|Race reported" "$out"/sanitizer-*.log 2>/dev/null | head -n 20 || true
for section in fa3-grid fa3-ablation; do
  if [[ -f $out/report-$section.md ]]; then
    echo "== cuda.flash.sm90: $section (median ms and TFLOP/s) =="
    cat "$out/report-$section.md"
  fi
done
echo "== benchmark (median ms and TFLOP/s) =="
cat "$out/report-seqlen.md"
if [[ -f $out/report-peers.md ]]; then
  echo "== with PyTorch's backends (N 4k, forward) =="
  cat "$out/report-peers.md"
fi
echo "== Table 21: peak memory, measured on this GPU where it fits (p: planned) =="
cat "$out/report-table21.md" 2>/dev/null || echo "(not written; see table21.log)"
echo "== the CUDA plug-in example and its rule-breaking variants =="
cat "$out/plugin-summary.txt" 2>/dev/null || echo "(not run; see plugin.log)"
echo "== HBM traffic: measured (CUPTI) against modelled, and the ncu cross-check =="
python3 - "$out" <<'PY' || echo "(python3 failed; see results.json and ncu-*.csv)"
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
exit $(( tests_status != 0 || bench_status != 0 || plugin_status != 0 ))
