// The host calibration (harness/measure/calibration.hpp): the BLAS product it
// times is a correct matrix product on shapes that are no multiple of its blocks, the
// calibration times whatever product it is given (a stand-in whose duration is
// known gives the rate it implies), the copy is sized from the last-level
// cache, and the record holds every figure.
#include "harness/measure/calibration.hpp"

#include "harness/blas.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

namespace attnbench {
namespace {

TEST(Calibration, TheBlasProductMatchesAPlainOneOnOddShapes) {
  const int m = 37, n = 300, k = 141;  // no multiple of any register or cache block
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
  for (float& x : a) x = value(random);
  for (float& x : b) x = value(random);
  std::vector<float> c(static_cast<std::size_t>(m) * n, std::nanf(""));  // every element must be written
  blas_gemm().multiply(m, n, k, a.data(), b.data(), c.data(), 2);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double expected = 0;
      for (int p = 0; p < k; ++p) expected += static_cast<double>(a[i * k + p]) * b[p * n + j];
      ASSERT_NEAR(c[i * n + j], expected, 1e-4) << i << "," << j;
    }
  }
}

TEST(Calibration, TheRateIsThatOfTheProductItIsGiven) {
  // A stand-in that takes 2 ms per product: 2 * 64^3 FLOP / 2 ms = 262 MFLOP/s at most.
  const GemmKernel slow{"sleeping stand-in", [](int, int, int, const float*, const float*, float*, int) {
                          std::this_thread::sleep_for(std::chrono::milliseconds(2));
                        }};
  CalibrationSettings settings;
  settings.gemm_size = 64;
  settings.gemm_seconds = 0.01;
  settings.copy_bytes = std::size_t{1} << 20;
  const HostCalibration calibration = calibrate_host(1, 0, settings, slow);
  EXPECT_EQ(calibration.gemm_kernel, "sleeping stand-in");
  EXPECT_LE(calibration.gemm_flops_per_second, 2.0 * 64 * 64 * 64 / 0.002);
  EXPECT_GT(calibration.gemm_flops_per_second, 2.0 * 64 * 64 * 64 / 0.02) << "one product, not several, per timing";
  EXPECT_EQ(calibration.copy_bytes, std::size_t{1} << 20);
  EXPECT_GT(calibration.copy_bytes_per_second, 0);
  EXPECT_GE(calibration.seconds, 0.01);
}

TEST(Calibration, TheRateIsTheBestOfSeveralTriesSoABusyMomentDoesNotLowerTheRoof) {
  // Other work competes for the CPUs during the first try (10 ms per product),
  // then stops (1 ms): the calibration keeps the idle rate.
  int calls = 0;
  const GemmKernel contended{"contended stand-in", [&calls](int, int, int, const float*, const float*, float*, int) {
                               std::this_thread::sleep_for(std::chrono::milliseconds(++calls <= 4 ? 10 : 1));
                             }};
  CalibrationSettings settings;
  settings.gemm_size = 64;
  settings.gemm_seconds = 0;  // three products per try
  settings.pause_seconds = 0;
  settings.copy_bytes = std::size_t{1} << 20;
  settings.copy_repetitions = 1;
  const HostCalibration calibration = calibrate_host(1, 0, settings, contended);
  EXPECT_EQ(calibration.tries, 3);
  EXPECT_EQ(calls, 1 + 3 * 3) << "one untimed product, three per try";
  EXPECT_GT(calibration.gemm_flops_per_second, 2.0 * 64 * 64 * 64 / 0.005) << "the idle tries' rate, not the busy one's";
  EXPECT_EQ(calibration.to_json()["tries"], 3);
}

TEST(Calibration, OutrunAtTheRunsEndItKeepsTheFasterOfEachRate) {
  HostCalibration start;
  start.gemm_flops_per_second = 10e9;
  start.copy_bytes_per_second = 20e9;
  start.seconds = 0.5;
  const auto record = [](const char* device, const char* status, double tflops) {
    return nlohmann::ordered_json{{"device", device}, {"status", status}, {"timing", {{"tflops", tflops}}}};
  };
  using Records = nlohmann::ordered_json;
  EXPECT_FALSE(start.outrun_by(Records::array({record("cpu", "ok", 0.009)})));
  EXPECT_TRUE(start.outrun_by(Records::array({record("cpu", "ok", 0.009), record("cpu", "ok", 0.012)})))
      << "a call faster than the GEMM rate contradicts the roof";
  EXPECT_FALSE(start.outrun_by(Records::array({record("cuda", "ok", 100), record("cpu", "failed", 0.012)})))
      << "only the host's ok records";
  EXPECT_FALSE(start.outrun_by(Records::array({{{"device", "cpu"}, {"status", "ok"}, {"timing", nullptr}}})))
      << "a planned record has no timing";
  HostCalibration again;
  again.gemm_flops_per_second = 30e9;
  again.copy_bytes_per_second = 15e9;
  again.seconds = 0.25;
  start.keep_faster(again);
  EXPECT_DOUBLE_EQ(start.gemm_flops_per_second, 30e9);
  EXPECT_DOUBLE_EQ(start.copy_bytes_per_second, 20e9);
  EXPECT_DOUBLE_EQ(start.seconds, 0.75);
  EXPECT_EQ(start.to_json()["recalibrated"], true);
  EXPECT_EQ(again.to_json()["recalibrated"], false);
}

TEST(Calibration, TheCopyIsTwiceTheLastLevelCacheWithinBoundsAndTheRecordHoldsEveryFigure) {
  CalibrationSettings settings;
  settings.gemm_size = 32;
  settings.gemm_seconds = 0;
  settings.copy_repetitions = 1;
  settings.tries = 1;
  const std::size_t mib = std::size_t{1} << 20;
  EXPECT_EQ(calibrate_host(1, 12 * mib, settings).copy_bytes, 24 * mib);
  const HostCalibration small = calibrate_host(2, 1 * mib, settings);
  EXPECT_EQ(small.copy_bytes, 16 * mib) << "at least 16 MiB";
  const nlohmann::ordered_json record = small.to_json();
  EXPECT_EQ(record["threads"], 2);
  EXPECT_EQ(record["gemm"]["kernel"], blas::library().identity() + " sgemm");
  EXPECT_EQ(record["gemm"]["m"], 32);
  EXPECT_GT(record["gemm"]["flops_per_second"].get<double>(), 0);
  EXPECT_EQ(record["copy"]["bytes"], 16 * mib);
  EXPECT_GT(record["copy"]["bytes_per_second"].get<double>(), 0);
}

}  // namespace
}  // namespace attnbench
