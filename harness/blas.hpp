// The one door to the BLAS: the single-precision GEMM of the CPU
// implementations and of the host's reference rate, and what the results file
// says about the library.
//
// The library is OpenBLAS's OpenMP build, chosen explicitly at configure time
// (CMakeLists.txt). Its worker threads are the OpenMP runtime's own, so the
// harness's thread count and its release of idle workers between measurements
// (measure/openmp_threads.hpp) cover them too. The CPU implementations call
// `sgemm` from their own parallel regions, where it runs on the calling thread:
// a result never depends on how many threads the run has, bit for bit.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace attnbench::blas {

enum class Op { none, transpose };

// C (m x n) = alpha * op(A) * op(B) + beta * C, row-major fp32; op(A) is m x k,
// op(B) k x n, and lda, ldb, ldc are the row strides of A, B and C as stored.
// Runs on the calling thread. With beta == 0, C may hold anything (NaN too).
void sgemm(Op a_op, Op b_op, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

struct Library {
  std::string name;        // "OpenBLAS"
  std::string version;     // "0.3.21", as the loaded library reports it
  std::string core;        // the kernels it chose for this CPU at run time ("Haswell", "SkylakeX", ...)
  std::string threading;   // "openmp", "pthreads" or "none"
  std::string configuration;  // the library's own one-line build description
  // "OpenBLAS 0.3.21": what a build's identity compares.
  std::string identity() const { return name + " " + version; }
};

// The library this process loaded.
const Library& library();

// The results file's tool.blas: {"name", "version", "core", "threading", "configuration"}.
nlohmann::ordered_json library_json();

// What the CPU implementations report as memory outside the arena
// (Implementation::memory_outside_arena): the library's packing buffers, whose
// size OpenBLAS does not report.
nlohmann::ordered_json buffers_outside_arena();

// Empty when calls from the harness's parallel regions run on the calling
// thread, as `sgemm` promises; otherwise why not (a build of the library with
// its own thread pool).
std::string threading_problem();

}  // namespace attnbench::blas
