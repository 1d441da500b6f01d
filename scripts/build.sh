#!/usr/bin/env bash
# Configures and builds attnbench in build/ (Release).
#
#   scripts/build.sh [--target NAME]... [CMAKE_CONFIGURE_ARGUMENTS...]
#
# --target builds only that target (repeatable; default: everything). The other
# arguments go to CMake's configure step, e.g. -DATTNBENCH_CUDA=OFF or
# -DCMAKE_CUDA_ARCHITECTURES=90.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [[ $# -gt 0 && $1 == --target ]]; do
  [[ $# -ge 2 ]] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
  targets+=(--target "$2")
  shift 2
done
python=$(command -v python3 || true)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${python:+-DPython3_EXECUTABLE="$python"} "$@"
cmake --build build -j "$(nproc)" ${targets[@]+"${targets[@]}"}
