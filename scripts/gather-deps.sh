#!/usr/bin/env bash
# Gathers the headers, static libraries and CMake package files attnbench builds
# against (nlohmann/json, CLI11, GoogleTest, Google Benchmark, Boost.Context,
# OpenBLAS's OpenMP build with the Fortran runtime it loads) into .deps/usr,
# laid out as under /usr so their CMake config files resolve inside it. The GPU
# machine has nvcc, CMake and ninja but no Debian -dev packages and no network:
# .deps travels there with the check (device tool: carry [".deps"]) and
# scripts/device-check.sh builds with -DCMAKE_PREFIX_PATH=.deps/usr.
#
# It also builds, here, for sm_90 (build-carry/, a few minutes on two cores)
# what the GPU check runs: attnbench and the GPU-labelled test executables,
# stripped, with the libraries they load that a CUDA image may lack (all that
# the loader finds here outside glibc, the C++ runtime and the CUDA toolkit),
# a wrapper per program that points the loader at those libraries, and the
# hash of the sources they were built from (scripts/sources-revision.sh), into .deps/prebuilt.tar.xz (about 20 MB). On
# a GPU where they load, device-check.sh runs from them and builds nothing, so
# every second of the lease goes to the GPU; carried alone
# (carry [".deps/prebuilt.tar.xz"]), the tree travels well under the 64 MiB
# limit. --no-binary skips that.
#
#   scripts/gather-deps.sh [--no-binary]
set -euo pipefail
cd "$(dirname "$0")/.."
build_binary=1
case ${1:-} in
  "") ;;
  --no-binary) build_binary=0 ;;
  *) echo "usage: scripts/gather-deps.sh [--no-binary]" >&2; exit 2 ;;
esac
scripts/setup.sh
multiarch=$(gcc -print-multiarch)
paths=(
  /usr/include/nlohmann /usr/share/cmake/nlohmann_json
  /usr/include/CLI /usr/share/cmake/CLI11
  /usr/include/gtest /usr/include/gmock "/usr/lib/$multiarch/cmake/GTest"
  /usr/include/benchmark "/usr/lib/$multiarch/cmake/benchmark"
  /usr/include/re2
  "/usr/include/$multiarch/openblas-openmp"
)
for file in "/usr/lib/$multiarch"/openblas-openmp/libopenblas*.so* "/usr/lib/$multiarch"/lib{gfortran,quadmath}.so.*; do
  paths+=("$file")
done
for library in libgtest.a libgtest_main.a libgmock.a libgmock_main.a libbenchmark_main.a libbenchmark.so libre2.so; do
  paths+=("/usr/lib/$multiarch/$library")
done
# The shared Google Benchmark and RE2 libraries and the names they are linked and loaded by.
for file in "/usr/lib/$multiarch"/libbenchmark.so.* "/usr/lib/$multiarch"/libre2.so.*; do paths+=("$file"); done
# Boost.Context (the cudasim fibers): its library, CMake files, and only the
# Boost headers its fiber header really includes (all of Boost would not fit).
for file in "/usr/lib/$multiarch"/libboost_context.so* "/usr/lib/$multiarch"/libboost_context.a; do paths+=("$file"); done
for dir in "/usr/lib/$multiarch"/cmake/{Boost,boost_context,boost_headers}-*; do paths+=("$dir"); done
paths+=("/usr/lib/$multiarch"/cmake/BoostDetectToolset-*.cmake)
while read -r header; do paths+=("$header"); done < <(
  echo '#include <boost/context/fiber.hpp>' | g++ -std=c++20 -x c++ -M - | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u)

rm -rf .deps
mkdir -p .deps
destination=$PWD/.deps
for path in "${paths[@]}"; do
  [[ -e $path ]] || { echo "gather-deps: $path is missing (run scripts/setup.sh)" >&2; exit 4; }
  # Relative to /: coreutils 9.1's cp --parents fails to copy the parents'
  # attributes of an absolute source path.
  (cd / && cp -a --parents "${path#/}" "$destination/")
done
if (( build_binary )); then
  programs=(harness/attnbench tests/test_cuda_correctness tests/test_cuda_differential tests/test_cuda_hopper_gemm)
  cmake -S . -B build-carry -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DATTNBENCH_CUDA=ON > /dev/null
  cmake --build build-carry -j "$(nproc)" --target "${programs[@]##*/}" > /dev/null
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/prebuilt/bin" "$stage/prebuilt/libexec" "$stage/prebuilt/lib"
  for program in "${programs[@]}"; do
    name=${program##*/}
    strip -o "$stage/prebuilt/libexec/$name" "build-carry/$program"
    printf '#!/bin/sh\nhere=$(dirname "$0")/..\nLD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64" exec "$here/libexec/%s" "$@"\n' \
      "$name" > "$stage/prebuilt/bin/$name"
    chmod +x "$stage/prebuilt/bin/$name"
  done
  ldd "${programs[@]/#/build-carry/}" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so|^/usr/local/cuda' |
    while read -r library; do cp -L "$library" "$stage/prebuilt/lib/"; done
  scripts/sources-revision.sh > "$stage/prebuilt/sources"
  rm -rf .deps/prebuilt
  tar -I 'xz -T0' -cf .deps/prebuilt.tar.xz -C "$stage" prebuilt
  echo "gather-deps: .deps/prebuilt.tar.xz for sm_90, sources $(cat "$stage/prebuilt/sources"):" \
       "$(ls "$stage/prebuilt/lib" | tr '\n' ' ')$(du -h .deps/prebuilt.tar.xz | cut -f1)"
fi
du -sh .deps | sed 's/^/gather-deps: /'
