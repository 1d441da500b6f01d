#!/usr/bin/env bash
# Is the first case of a process measured warm? Runs one case first and last in
# the same process (two one-case scenarios around scenarios/quick.json's
# cases), PROCESSES times with the stable warm-up (the default) and PROCESSES
# times with it off (--warmup-window 0: the one-iteration warm-up of
# quick.json alone), and prints, for each, the ratio of the first
# measurement's median to the last's: 1 means no first-case effect.
#
#   scripts/first_case_effect.sh ATTNBENCH OUTDIR [PROCESSES] [IMPLEMENTATION]
#
# PROCESSES defaults to 20, IMPLEMENTATION to cpu.standard. Every run uses
# --threads 1 and quick.json's measure settings. LOAD=N runs N busy loops,
# pinned to the CPUs in turn, for the whole measurement.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 4 ]]; then
  echo "usage: $0 ATTNBENCH OUTDIR [PROCESSES] [IMPLEMENTATION]" >&2
  exit 2
fi
binary=$1
outdir=$2
processes=${3:-20}
implementation=${4:-cpu.standard}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$outdir"

python3 - "$source_dir/scenarios/quick.json" "$outdir" "$implementation" <<'EOF'
import json, re, sys
quick_path, outdir, implementation = sys.argv[1:]
text = re.sub(r"^\s*//.*$", "", open(quick_path).read(), flags=re.M)
quick = json.loads(text)
quick.pop("$schema", None)
for name in ("first", "last"):
    case = dict(quick, name=name, description=f"the same case, {name} in the process",
                cases=[{"seqlen": 256, "direction": "fwd"}], implementations=[implementation])
    json.dump(case, open(f"{outdir}/{name}.json", "w"))
json.dump(dict(quick, implementations=[implementation]), open(f"{outdir}/middle.json", "w"))
EOF

busy_pids=()
trap 'if ((${#busy_pids[@]})); then kill "${busy_pids[@]}" 2> /dev/null || true; fi' EXIT
for ((i = 0; i < ${LOAD:-0}; i++)); do
  taskset -c $((i % $(nproc))) bash -c 'while :; do :; done' &
  busy_pids+=($!)
done

for mode in stable off; do
  flags=()
  [[ $mode == off ]] && flags=(--warmup-window 0)
  for ((p = 1; p <= processes; p++)); do
    "$binary" run "$outdir/first.json" "$outdir/middle.json" "$outdir/last.json" --threads 1 "${flags[@]}" \
      -o "$outdir/$mode-$p.json" --overwrite > "$outdir/$mode-$p.log" 2>&1
  done
done

python3 - "$outdir" "$processes" <<'EOF'
import json, statistics, sys
outdir, processes = sys.argv[1], int(sys.argv[2])
print("| warm-up | processes | median of first/last | min | max |")
print("|---|---|---|---|---|")
for mode, label in (("off", "one iteration (--warmup-window 0)"), ("stable", "until stable (default)")):
    ratios = []
    for p in range(1, processes + 1):
        records = json.load(open(f"{outdir}/{mode}-{p}.json"))["records"]
        medians = {r["scenario"]: r["timing"]["statistics"]["p50"] for r in records if r["scenario"] in ("first", "last")}
        ratios.append(medians["first"] / medians["last"])
    print(f"| {label} | {processes} | {statistics.median(ratios):.3f} | {min(ratios):.3f} | {max(ratios):.3f} |")
EOF
