#!/usr/bin/env bash
# Prints a short hash of the sources the programs are built from (the tracked
# files under CMakeLists.txt, cmake/, include/, harness/, kernels/, baselines/
# and tests/, with any uncommitted change to them), or nothing outside a git
# checkout. scripts/gather-deps.sh stamps .deps/prebuilt.tar.xz with it and
# scripts/device-check.sh runs the carried programs only where it still matches:
# a change to the scripts, docs or scenarios keeps them usable.
set -euo pipefail
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree > /dev/null 2>&1 || exit 0
paths=(CMakeLists.txt cmake include harness kernels baselines tests)
{ git ls-files -s -- "${paths[@]}"; git diff HEAD -- "${paths[@]}"; } | sha256sum | cut -c 1-16
