#!/usr/bin/env bash
# The pull-request gate (docs/ci-gate.md; docs/compare.md has the rules):
# measures one scenario with the base build and the head build on this machine
# in R interleaved rounds, merges each side's rounds and compares them with the
# head's `attnbench compare`.
#
#   scripts/ci_gate.sh BASE_BIN HEAD_BIN SCENARIO OUTDIR [R]
#
# Each round runs the whole scenario with both builds, the base first in odd
# rounds and the head first in even ones (A B B A …), so a slow drift of the
# machine falls on both sides alike, and a neighbour's burst lands in one round
# instead of one side. Each side's rounds are joined with `merge --rounds`
# (OUTDIR/base.json, OUTDIR/head.json), so that compare can ask whether an
# effect holds in every round, and compared into OUTDIR/summary.md,
# OUTDIR/junit.xml and OUTDIR/compare.json. R defaults to 4.
#
# Exit status: compare's — 0 pass or improvement, 1 regression or accuracy failure,
# 3 not comparable (a cell that ran in the base is missing from the head, say) or
# inconclusive (noisy cells, rounds that disagree: rerun or inspect), 2 bad input
# (COMPARE_ARGS with --allow-missing too). A run or merge that fails in another
# way ends the gate early with its own status, its log shown.
# Environment: RUN_ARGS (more `attnbench run` options for both sides; --threads 1
# unless it sets --threads: see docs/ci-gate.md), COMPARE_ARGS (more `attnbench compare`
# options, e.g. "--config gate.json").
set -euo pipefail

if [[ $# -ne 4 && $# -ne 5 ]] || [[ ! ${5:-4} =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 BASE_BIN HEAD_BIN SCENARIO OUTDIR [R]" >&2
  exit 2
fi
declare -A binary=([base]=$1 [head]=$2)
scenario=$3
outdir=$4
rounds=${5:-4}
for side in base head; do
  if [[ ! -x ${binary[$side]} ]]; then
    echo "ci_gate: the $side binary ${binary[$side]} is not an executable file" >&2
    exit 2
  fi
done
read -r -a run_args <<< "${RUN_ARGS:-}"
# One thread unless told otherwise: on a shared runner a parallel region waits a
# scheduler tick for every descheduled thread (docs/ci-gate.md).
if [[ " ${run_args[*]} " != *" --threads "* && " ${run_args[*]} " != *" --threads="* ]]; then
  run_args=(--threads 1 "${run_args[@]}")
fi
read -r -a compare_args <<< "${COMPARE_ARGS:-}"
for argument in "${compare_args[@]}"; do
  if [[ $argument == --allow-missing* ]]; then
    echo "ci_gate: COMPARE_ARGS may not hold --allow-missing: a gate never passes an unfinished run or a lost cell" >&2
    exit 2
  fi
done

# Runs round K with one side's build, output and log in OUTDIR/SIDE/. Exit 1
# (a record failed, e.g. accuracy) still leaves a complete round for compare to
# judge; an unfinished one is caught by merge --require-complete.
run_round() {
  local side=$1 k=$2 status=0
  local part="$outdir/$side/round-$k.json" log="$outdir/$side/round-$k.log"
  echo "ci_gate: round $k/$rounds: $side"
  "${binary[$side]}" run "$scenario" "${run_args[@]}" -o "$part" > "$log" 2>&1 || status=$?
  if [[ $status -ne 0 && $status -ne 1 ]]; then
    tail -n 20 "$log" >&2
    echo "ci_gate: the $side build failed in round $k/$rounds (exit $status); log: $log" >&2
    exit "$status"
  fi
}

for side in base head; do
  mkdir -p "$outdir/$side"
  for ((k = 1; k <= rounds; k++)); do rm -f "$outdir/$side/round-$k.json" "$outdir/$side/round-$k.json.journal"; done
done
for ((k = 1; k <= rounds; k++)); do
  if ((k % 2)); then order=(base head); else order=(head base); fi
  for side in "${order[@]}"; do run_round "$side" "$k"; done
done

for side in base head; do
  parts=()
  for ((k = 1; k <= rounds; k++)); do parts+=("$outdir/$side/round-$k.json"); done
  "${binary[head]}" merge --rounds "${parts[@]}" --require-complete -o "$outdir/$side.json"
done

status=0
"${binary[head]}" compare "$outdir/base.json" "$outdir/head.json" "${compare_args[@]}" \
  --markdown "$outdir/summary.md" --junit "$outdir/junit.xml" --json "$outdir/compare.json" || status=$?
echo "ci_gate: compare exited $status; summary: $outdir/summary.md"
exit "$status"
