#include "harness/measure/calibration.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "harness/measure/openmp_threads.hpp"

namespace attnbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

// The product in register tiles: kTileRows rows of C by kTileColumns columns
// accumulate in registers over the whole depth, from the tile's rows of A
// packed depth-major and one column strip of B (k x kTileColumns floats, in L1
// for the depths calibrated).
constexpr int kTileRows = 4;
constexpr int kTileColumns = 8;

void multiply_full_tile(int n, int k, const float* a_packed, const float* b, float* c) {
  float accumulator[kTileRows][kTileColumns] = {};
  for (int p = 0; p < k; ++p) {
    const float* b_row = b + static_cast<std::size_t>(p) * n;
    const float* a_column = a_packed + static_cast<std::size_t>(p) * kTileRows;
    for (int r = 0; r < kTileRows; ++r) {
#pragma omp simd
      for (int j = 0; j < kTileColumns; ++j) accumulator[r][j] += a_column[r] * b_row[j];
    }
  }
  for (int r = 0; r < kTileRows; ++r) {
    for (int j = 0; j < kTileColumns; ++j) c[static_cast<std::size_t>(r) * n + j] = accumulator[r][j];
  }
}

// A tile at the matrix's edge (fewer rows or columns), plainly.
void multiply_edge_tile(int rows, int columns, int n, int k, const float* a_packed, const float* b, float* c) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < columns; ++j) {
      float sum = 0.0f;
      for (int p = 0; p < k; ++p) sum += a_packed[static_cast<std::size_t>(p) * kTileRows + r] * b[static_cast<std::size_t>(p) * n + j];
      c[static_cast<std::size_t>(r) * n + j] = sum;
    }
  }
}

void blocked_multiply(int m, int n, int k, const float* a, const float* b, float* c, int threads) {
  const int row_tiles = (m + kTileRows - 1) / kTileRows;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> a_packed(static_cast<std::size_t>(k) * kTileRows, 0.0f);
#pragma omp for schedule(static)
    for (int tile_row = 0; tile_row < row_tiles; ++tile_row) {
      const int i = tile_row * kTileRows, rows = std::min(kTileRows, m - i);
      for (int p = 0; p < k; ++p) {
        for (int r = 0; r < rows; ++r) {
          a_packed[static_cast<std::size_t>(p) * kTileRows + r] = a[static_cast<std::size_t>(i + r) * k + p];
        }
      }
      float* c_rows = c + static_cast<std::size_t>(i) * n;
      for (int j = 0; j < n; j += kTileColumns) {
        const int columns = std::min(kTileColumns, n - j);
        if (rows == kTileRows && columns == kTileColumns) multiply_full_tile(n, k, a_packed.data(), b + j, c_rows + j);
        else multiply_edge_tile(rows, columns, n, k, a_packed.data(), b + j, c_rows + j);
      }
    }
  }
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

const GemmKernel& blocked_gemm() {
  static const GemmKernel kernel{"blocked fp32 loop (OpenMP)", blocked_multiply};
  return kernel;
}

nlohmann::ordered_json HostCalibration::to_json() const {
  return {{"threads", threads},
          {"gemm", {{"kernel", gemm_kernel}, {"m", gemm_size}, {"n", gemm_size}, {"k", gemm_size},
                    {"flops_per_second", gemm_flops_per_second}}},
          {"copy", {{"bytes", copy_bytes}, {"bytes_per_second", copy_bytes_per_second}}},
          {"seconds", seconds}};
}

HostCalibration calibrate_host(int threads, std::size_t last_level_cache_bytes, const CalibrationSettings& settings,
                               const GemmKernel& gemm) {
  const Clock::time_point start = Clock::now();
  HostCalibration result;
  result.threads = threads;
  result.gemm_kernel = gemm.name;
  result.gemm_size = settings.gemm_size;
  release_idle_openmp_threads();

  // The product: fresh non-zero operands, one untimed product, then the
  // fastest of those that fit in gemm_seconds (at least three).
  const int size = settings.gemm_size;
  const std::size_t elements = static_cast<std::size_t>(size) * size;
  std::vector<float> a(elements), b(elements), c(elements);
  for (std::size_t e = 0; e < elements; ++e) {
    a[e] = 1.0f + static_cast<float>(e % 7) * 0.125f;
    b[e] = 0.5f - static_cast<float>(e % 5) * 0.0625f;
  }
  gemm.multiply(size, size, size, a.data(), b.data(), c.data(), threads);
  double fastest = 0;
  const Clock::time_point gemm_start = Clock::now();
  for (int repetition = 0; repetition < 3 || seconds_between(gemm_start, Clock::now()) < settings.gemm_seconds;
       ++repetition) {
    const Clock::time_point before = Clock::now();
    gemm.multiply(size, size, size, a.data(), b.data(), c.data(), threads);
    const double seconds = seconds_between(before, Clock::now());
    if (fastest == 0 || seconds < fastest) fastest = seconds;
  }
  result.gemm_flops_per_second = fastest > 0 ? 2.0 * static_cast<double>(size) * size * size / fastest : 0;

  // The copy: buffers twice the last-level cache, written once before (so that
  // their pages exist), then the fastest of a few copies.
  const std::size_t bytes =
      settings.copy_bytes > 0 ? settings.copy_bytes
                              : std::clamp<std::size_t>(2 * last_level_cache_bytes, 16 * kMiB, 256 * kMiB);
  std::vector<char> from(bytes), to(bytes);
  std::memset(from.data(), 1, bytes);
  parallel_copy(from.data(), to.data(), bytes, threads);
  fastest = 0;
  for (int repetition = 0; repetition < settings.copy_repetitions; ++repetition) {
    const Clock::time_point before = Clock::now();
    parallel_copy(from.data(), to.data(), bytes, threads);
    const double seconds = seconds_between(before, Clock::now());
    if (fastest == 0 || seconds < fastest) fastest = seconds;
  }
  result.copy_bytes = bytes;
  result.copy_bytes_per_second = fastest > 0 ? 2.0 * static_cast<double>(bytes) / fastest : 0;
  release_idle_openmp_threads();
  result.seconds = seconds_between(start, Clock::now());
  return result;
}

}  // namespace attnbench
