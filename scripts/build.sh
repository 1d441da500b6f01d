#!/usr/bin/env bash
# Configures and builds attnbench in build/ (Release). Extra arguments go to
# CMake's configure step, e.g. -DATTNBENCH_CUDA=OFF or -DCMAKE_CUDA_ARCHITECTURES=90.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(command -v python3 || true)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${python:+-DPython3_EXECUTABLE="$python"} "$@"
cmake --build build -j "$(nproc)"
