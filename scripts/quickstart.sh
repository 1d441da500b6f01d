#!/usr/bin/env bash
# The README's first command: install what is missing, build the attnbench
# binary (only that: the tests are scripts/test.sh's), and run the quick
# scenario (CPU implementations without a GPU, CUDA ones with one; the binary
# holds both, so the result is right either way). Prints a results table and
# writes results/quick-<time>.json. Arguments go to `attnbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --target attnbench
build/harness/attnbench run scenarios/quick.json "$@"
