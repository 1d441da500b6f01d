#!/usr/bin/env bash
# Gathers the headers, static libraries and CMake package files attnbench builds
# against (nlohmann/json, CLI11, GoogleTest, Google Benchmark) into .deps/usr,
# laid out as under /usr so their CMake config files resolve inside it. The GPU
# machine has nvcc, CMake and ninja but no Debian -dev packages and no network:
# .deps travels there with the check (device tool: carry [".deps"]) and
# scripts/device-check.sh builds with -DCMAKE_PREFIX_PATH=.deps/usr.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
multiarch=$(gcc -print-multiarch)
paths=(
  /usr/include/nlohmann /usr/share/cmake/nlohmann_json
  /usr/include/CLI /usr/share/cmake/CLI11
  /usr/include/gtest /usr/include/gmock "/usr/lib/$multiarch/cmake/GTest"
  /usr/include/benchmark "/usr/lib/$multiarch/cmake/benchmark"
  /usr/include/re2
)
for library in libgtest.a libgtest_main.a libgmock.a libgmock_main.a libbenchmark_main.a libbenchmark.so libre2.so; do
  paths+=("/usr/lib/$multiarch/$library")
done
# The shared Google Benchmark and RE2 libraries and the names they are linked and loaded by.
for file in "/usr/lib/$multiarch"/libbenchmark.so.* "/usr/lib/$multiarch"/libre2.so.*; do paths+=("$file"); done

rm -rf .deps
mkdir -p .deps
for path in "${paths[@]}"; do
  [[ -e $path ]] || { echo "gather-deps: $path is missing (run scripts/setup.sh)" >&2; exit 4; }
  cp -a --parents "$path" .deps/
done
du -sh .deps | sed 's/^/gather-deps: /'
