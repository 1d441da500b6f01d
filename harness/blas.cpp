#include "harness/blas.hpp"

#include <cblas.h>

#include <sstream>

namespace attnbench::blas {
namespace {

CBLAS_TRANSPOSE cblas_op(Op op) { return op == Op::transpose ? CblasTrans : CblasNoTrans; }

// OpenBLAS's OpenMP build runs a call on the calling thread inside an active
// parallel region, and otherwise on as many threads as its own setting says:
// the setting stays 1, so a one-thread team of the harness gets no nested team
// and every call runs on its caller's thread. Set once at start-up, on the
// main thread, before any parallel region.
const bool kOneThreadOutsideParallelRegions = [] {
  openblas_set_num_threads(1);
  return true;
}();

int blas_int(std::int64_t value) { return static_cast<int>(value); }

Library read_library() {
  Library library;
  library.name = "OpenBLAS";
  library.configuration = openblas_get_config();
  std::istringstream words(library.configuration);
  std::string first;
  words >> first >> library.version;  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  library.core = openblas_get_corename();
  switch (openblas_get_parallel()) {
    case 0:
      library.threading = "none";
      break;
    case 1:
      library.threading = "pthreads";
      break;
    default:
      library.threading = "openmp";
      break;
  }
  return library;
}

}  // namespace

void sgemm(Op a_op, Op b_op, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, cblas_op(a_op), cblas_op(b_op), blas_int(m), blas_int(n), blas_int(k), alpha, a,
              blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
}

const Library& library() {
  static const Library loaded = read_library();
  return loaded;
}

nlohmann::ordered_json library_json() {
  const Library& l = library();
  return {{"name", l.name},
          {"version", l.version},
          {"core", l.core},
          {"threading", l.threading},
          {"configuration", l.configuration}};
}

nlohmann::ordered_json buffers_outside_arena() {
  return {{"library", library().identity()},
          {"bytes", nullptr},
          {"reason", "the library packs GEMM operands into buffers of its own, one per calling thread, mapped on "
                     "first use and kept until the process ends; OpenBLAS does not report their size"}};
}

std::string threading_problem() {
  const Library& l = library();
  if (l.threading == "openmp" || l.threading == "none") return {};
  return l.identity() + " was built with its own " + l.threading +
         " thread pool, so its calls from the harness's threads would start more threads than --threads "
         "allows: build attnbench against OpenBLAS's OpenMP build (libopenblas-openmp-dev)";
}

}  // namespace attnbench::blas
