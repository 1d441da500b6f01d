#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the quick
# scenario (CPU implementations without a GPU, CUDA ones with one). Prints a
# results table and writes results/quick-<time>.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/harness/attnbench run scenarios/quick.json "$@"
