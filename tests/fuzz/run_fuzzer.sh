#!/usr/bin/env bash
# Runs one fuzz target for a fixed time, as CTest does (tests/CMakeLists.txt):
#   run_fuzzer.sh FUZZER SECONDS WORK_DIR SEED_DIR...
# The corpus grows in WORK_DIR/corpus (seeded from every SEED_DIR, kept between
# runs); a crashing input is saved as WORK_DIR/crash-* and the run fails. Keep
# such an input as a regression under tests/fuzz/regressions/ (every SEED_DIR is
# replayed first) and as a named test of the reader it broke.
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3
shift 3
mkdir -p "$work/corpus"
for seeds in "$@"; do
  [[ -d $seeds ]] && find "$seeds" -maxdepth 1 -type f -exec cp -n {} "$work/corpus/" \;
done
exec "$fuzzer" "$work/corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" -close_fd_mask=1
