#!/usr/bin/env bash
# Does the documented pull-request gate (scripts/ci_gate.sh) cry wolf, and does
# it still catch a real slowdown? Runs the gate on one scenario GATES times in
# each of three conditions and prints a table (docs/ci-gate.md shows one):
#
#   idle A/A      the same build on both sides, nothing else running
#   loaded A/A    the same, with LOAD busy loops pinned to the machine's CPUs for
#                 the whole gate (default: one per available CPU)
#   loaded slower the head's cpu.example plug-in built with
#                 -DATTNBENCH_EXAMPLE_SLOWER (every fourth unit of work done
#                 twice: 25% more work, 29-30% more time on an idle 2-core
#                 VM), under the same load
#
#   scripts/gate_aa_benchmark.sh ATTNBENCH OUTDIR [GATES] [SCENARIO]
#
# GATES defaults to 10, SCENARIO to scenarios/quick.json. Both sides load the
# example plug-in (examples/plugins/cpu_attention.c, built here with cc), so
# the A/A gates judge cpu.example too. Targets (issue 33): no gate exits 1 and no
# cell is a regression in the A/A conditions; the slowdown exits 1 in at least
# 9 of 10 loaded gates and never passes. Each gate's directory under OUTDIR
# keeps its summary.md and compare.json; OUTDIR/table.md is the table.
# CONDITIONS (default "idle loaded slow") picks the conditions to run.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 4 ]]; then
  echo "usage: $0 ATTNBENCH OUTDIR [GATES] [SCENARIO]" >&2
  exit 2
fi
binary=$(realpath "$1")
outdir=$2
gates=${3:-10}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
scenario=${4:-$source_dir/scenarios/quick.json}
cpus=$(nproc)
load=${LOAD:-$cpus}
read -r -a conditions <<< "${CONDITIONS:-idle loaded slow}"
mkdir -p "$outdir"
outdir=$(realpath "$outdir")

# The two builds of the plug-in and one wrapper per build of "attnbench".
for variant in plain slower; do
  flags=()
  [[ $variant == slower ]] && flags=(-DATTNBENCH_EXAMPLE_SLOWER)
  cc -std=c11 -O2 -fPIC -shared -fopenmp "${flags[@]}" -I "$source_dir/include" \
    "$source_dir/examples/plugins/cpu_attention.c" -o "$outdir/libexample-$variant.so" -lm
  printf '#!/usr/bin/env bash\nATTNBENCH_PLUGINS=%q exec %q "$@"\n' "$outdir/libexample-$variant.so" "$binary" \
    > "$outdir/attnbench-$variant"
  chmod +x "$outdir/attnbench-$variant"
done

busy_pids=()
start_load() {
  for ((i = 0; i < load; i++)); do
    taskset -c $((i % cpus)) bash -c 'while :; do :; done' &
    busy_pids+=($!)
  done
}
stop_load() {
  if ((${#busy_pids[@]})); then kill "${busy_pids[@]}" 2> /dev/null || true; fi
  busy_pids=()
}
trap stop_load EXIT

# One gate: its exit status, its regressions, and (slowdown) whether a
# cpu.example cell was a regression.
declare -A exits1 exits3 passes regressions caught example_cells seconds
for condition in "${conditions[@]}"; do
  exits1[$condition]=0 exits3[$condition]=0 passes[$condition]=0 regressions[$condition]=0 caught[$condition]=0
  example_cells[$condition]="0 0 0"
  start=$(date +%s)
  for ((g = 1; g <= gates; g++)); do
    head=plain
    [[ $condition == slow ]] && head=slower
    [[ $condition != idle ]] && start_load
    status=0
    "$source_dir/scripts/ci_gate.sh" "$outdir/attnbench-plain" "$outdir/attnbench-$head" "$scenario" \
      "$outdir/$condition-$g" > "$outdir/$condition-$g.log" 2>&1 || status=$?
    stop_load
    counts=$(python3 - "$outdir/$condition-$g/compare.json" <<'EOF'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except OSError:
    print(0, 0, 0, 0, 0)
    sys.exit()
cells = report["cells"]
regressed = [c for c in cells if c["verdict"] == "regression"]
# cpu.example's timed cells (not skipped) by their time verdict.
example = [c["metrics"]["time"]["verdict"] for c in cells
           if c["implementation"] == "cpu.example" and "time" in c["metrics"]]
print(len(regressed), sum(1 for c in regressed if c["implementation"] == "cpu.example"),
      example.count("regression"), example.count("inconclusive"), example.count("pass") + example.count("improvement"))
EOF
)
    read -r regressed slowed example_regressed example_inconclusive example_passed <<< "$counts"
    read -r a b c <<< "${example_cells[$condition]}"
    example_cells[$condition]="$((a + example_regressed)) $((b + example_inconclusive)) $((c + example_passed))"
    echo "$condition gate $g: exit $status, $regressed regression(s), $slowed of cpu.example"
    case $status in
      0) passes[$condition]=$((passes[$condition] + 1)) ;;
      1) exits1[$condition]=$((exits1[$condition] + 1)) ;;
      3) exits3[$condition]=$((exits3[$condition] + 1)) ;;
      *) echo "gate_aa_benchmark: the gate could not run (exit $status): $outdir/$condition-$g.log" >&2; exit "$status" ;;
    esac
    regressions[$condition]=$((regressions[$condition] + regressed))
    ((slowed > 0)) && caught[$condition]=$((caught[$condition] + 1))
  done
  seconds[$condition]=$(($(date +%s) - start))
done

{
  echo "| condition | gates | exit 0 | exit 1 | exit 3 | cells reported as regressions | gates that flagged cpu.example | cpu.example cells: regression / inconclusive / pass | minutes per gate |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for condition in "${conditions[@]}"; do
    case $condition in
      idle) name="idle A/A" ;;
      loaded) name="loaded A/A ($load busy loops)" ;;
      slow) name="loaded, head's cpu.example 25% more work ($load busy loops)" ;;
    esac
    echo "| $name | $gates | ${passes[$condition]} | ${exits1[$condition]} | ${exits3[$condition]} |" \
         "${regressions[$condition]} | ${caught[$condition]} | ${example_cells[$condition]// / \/ } |" \
         "$(python3 -c "print(f'{${seconds[$condition]} / 60 / $gates:.1f}')") |"
  done
} | tee "$outdir/table.md"
