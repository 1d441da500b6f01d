#include "harness/measure/calibration.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "harness/blas.hpp"
#include "harness/measure/openmp_threads.hpp"

namespace attnbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

// Copies `from` into `to` in one chunk per thread.
void parallel_copy(const char* from, char* to, std::size_t bytes, int threads) {
#pragma omp parallel num_threads(threads)
  {
    const std::size_t parts = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t part = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t begin = bytes * part / parts, end = bytes * (part + 1) / parts;
    std::memcpy(to + begin, from + begin, end - begin);
  }
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

}  // namespace

// As the CPU implementations call the BLAS: each of `threads` threads of one
// parallel region multiplies its own block of A's rows on its own thread
// (blas::sgemm), rather than the library sharing one product out between its
// threads, whose hand-offs a busy machine slows far more than it slows them.
const GemmKernel& blas_gemm() {
  static const GemmKernel kernel{
      blas::library().identity() + " sgemm", [](int m, int n, int k, const float* a, const float* b, float* c,
                                                int threads) {
#pragma omp parallel num_threads(threads)
        {
          const std::int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
          const std::int64_t begin = m * part / parts, end = m * (part + 1) / parts;
          if (end > begin) {
            blas::sgemm(blas::Op::none, blas::Op::none, end - begin, n, k, 1.0f, a + begin * k, k, b, n, 0.0f,
                        c + begin * n, n);
          }
        }
      }};
  return kernel;
}

nlohmann::ordered_json HostCalibration::to_json() const {
  return {{"threads", threads},
          {"gemm", {{"kernel", gemm_kernel}, {"m", gemm_size}, {"n", gemm_size}, {"k", gemm_size},
                    {"flops_per_second", gemm_flops_per_second}}},
          {"copy", {{"bytes", copy_bytes}, {"bytes_per_second", copy_bytes_per_second}}},
          {"tries", tries},
          {"seconds", seconds},
          {"recalibrated", recalibrated}};
}

bool HostCalibration::outrun_by(const nlohmann::ordered_json& records) const {
  return std::any_of(records.begin(), records.end(), [&](const nlohmann::ordered_json& record) {
    const auto timing = record.find("timing");
    return record.value("device", "") == "cpu" && record.value("status", "") == "ok" && timing != record.end() &&
           timing->is_object() && timing->value("tflops", 0.0) * 1e12 > gemm_flops_per_second;
  });
}

void HostCalibration::keep_faster(const HostCalibration& again) {
  gemm_flops_per_second = std::max(gemm_flops_per_second, again.gemm_flops_per_second);
  copy_bytes_per_second = std::max(copy_bytes_per_second, again.copy_bytes_per_second);
  seconds += again.seconds;
  recalibrated = true;
}

HostCalibration calibrate_host(int threads, std::size_t last_level_cache_bytes, const CalibrationSettings& settings,
                               const GemmKernel& gemm) {
  const Clock::time_point start = Clock::now();
  HostCalibration result;
  result.threads = threads;
  result.gemm_kernel = gemm.name;
  result.gemm_size = settings.gemm_size;
  release_idle_openmp_threads();

  // The product: fresh non-zero operands and one untimed product; the copy:
  // buffers twice the last-level cache, written once before (so that their
  // pages exist). Then per try the fastest of the products that fit in
  // gemm_seconds (at least three) and of a few copies; the fastest of all tries.
  const int size = settings.gemm_size;
  const std::size_t elements = static_cast<std::size_t>(size) * size;
  std::vector<float> a(elements), b(elements), c(elements);
  for (std::size_t e = 0; e < elements; ++e) {
    a[e] = 1.0f + static_cast<float>(e % 7) * 0.125f;
    b[e] = 0.5f - static_cast<float>(e % 5) * 0.0625f;
  }
  gemm.multiply(size, size, size, a.data(), b.data(), c.data(), threads);
  const std::size_t bytes =
      settings.copy_bytes > 0 ? settings.copy_bytes
                              : std::clamp<std::size_t>(2 * last_level_cache_bytes, 16 * kMiB, 256 * kMiB);
  std::vector<char> from(bytes), to(bytes);
  std::memset(from.data(), 1, bytes);
  parallel_copy(from.data(), to.data(), bytes, threads);

  double fastest_product = 0, fastest_copy = 0;
  const auto keep_fastest = [](double& fastest, double seconds) {
    if (fastest == 0 || seconds < fastest) fastest = seconds;
  };
  result.tries = std::max(settings.tries, 1);
  for (int attempt = 0; attempt < result.tries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::duration<double>(settings.pause_seconds));
    const Clock::time_point gemm_start = Clock::now();
    for (int repetition = 0; repetition < 3 || seconds_between(gemm_start, Clock::now()) < settings.gemm_seconds;
         ++repetition) {
      const Clock::time_point before = Clock::now();
      gemm.multiply(size, size, size, a.data(), b.data(), c.data(), threads);
      keep_fastest(fastest_product, seconds_between(before, Clock::now()));
    }
    for (int repetition = 0; repetition < settings.copy_repetitions; ++repetition) {
      const Clock::time_point before = Clock::now();
      parallel_copy(from.data(), to.data(), bytes, threads);
      keep_fastest(fastest_copy, seconds_between(before, Clock::now()));
    }
  }
  result.gemm_flops_per_second =
      fastest_product > 0 ? 2.0 * static_cast<double>(size) * size * size / fastest_product : 0;
  result.copy_bytes = bytes;
  result.copy_bytes_per_second = fastest_copy > 0 ? 2.0 * static_cast<double>(bytes) / fastest_copy : 0;
  release_idle_openmp_threads();
  result.seconds = seconds_between(start, Clock::now());
  return result;
}

}  // namespace attnbench
