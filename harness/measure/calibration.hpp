// The host's compute and memory ceilings, measured by a short calibration at a
// run's thread count, at the start of the run, as the best of several tries
// (so that a burst of other work during one of them does not lower the
// roof under the run's own points): the rate of an fp32 matrix product (FLOP/s) and the
// bandwidth of a copy between buffers larger than the last-level cache (bytes
// read plus bytes written per second, as STREAM's Copy counts them). A results
// file records them in `host.calibration`; the roofline draws them as the CPU's
// ceilings, and a run uses the product's rate to say before a long host case
// how long it will take at least.
//
// The product that is timed is a parameter (a GemmKernel): the BLAS's SGEMM
// (harness/blas.hpp), the one the CPU implementations' products go through,
// called as they call it (each thread its own rows, on its own thread); tests
// give stand-ins.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace attnbench {

// C (m x n) = A (m x k) * B (k x n), row-major fp32, on `threads` threads.
struct GemmKernel {
  std::string name;  // recorded: "OpenBLAS 0.3.21 sgemm", ...
  std::function<void(int m, int n, int k, const float* a, const float* b, float* c, int threads)> multiply;
};

// The BLAS's SGEMM on `threads` of the library's threads.
const GemmKernel& blas_gemm();

struct CalibrationSettings {
  int tries = 3;                      // rounds of products and copies, the best of all kept
  double pause_seconds = 0.05;        // between tries
  int gemm_size = 768;                // m = n = k
  double gemm_seconds = 0.03;         // per try, timed products at least this long (best one kept)
  std::size_t copy_bytes = 0;         // per buffer; 0: twice the last-level cache, 16 to 256 MiB
  int copy_repetitions = 3;           // per try, best one kept
};

struct HostCalibration {
  int threads = 1;
  int tries = 1;
  std::string gemm_kernel;
  int gemm_size = 0;
  double gemm_flops_per_second = 0;   // 2 m n k over the fastest product
  std::size_t copy_bytes = 0;         // bytes copied per repetition
  double copy_bytes_per_second = 0;   // 2 x copy_bytes over the fastest copy
  double seconds = 0;                 // the calibration's own wall time
  bool recalibrated = false;          // calibrated again at the run's end (keep_faster)
  nlohmann::ordered_json to_json() const;  // the results file's host.calibration

  // Whether an ok host record among `records` (a results file's) computed
  // faster than the GEMM rate: the calibration then ran while other work was
  // busy, and the roof lies under the run's own points.
  bool outrun_by(const nlohmann::ordered_json& records) const;
  // The faster of each rate of this calibration and `again` (taken later in
  // the run), their time together, marked recalibrated.
  void keep_faster(const HostCalibration& again);
};

// Runs the calibration; `last_level_cache_bytes` sizes the copy (so that it
// reaches memory) when the settings leave it 0.
HostCalibration calibrate_host(int threads, std::size_t last_level_cache_bytes, const CalibrationSettings& settings = {},
                               const GemmKernel& gemm = blas_gemm());

}  // namespace attnbench
