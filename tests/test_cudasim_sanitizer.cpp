// The simulator's execution model and sanitizer (docs/cudasim.md) on small
// kernels (tests/cudasim/sanitizer_kernels.cpp): correct ones run clean and
// compute the right values; each broken one fails with a DeviceError whose
// report names the finding, the kernel, the CTA and thread and the source line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "harness/backend.hpp"
#include "harness/cudasim/environment_switch.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/errors.hpp"
#include "tests/cudasim/sanitizer_kernels.hpp"

namespace attnbench {
namespace {

// Buffers "in" and "out" of the cudasim device; `in` holds 1, 2, 3, …
class Sanitizer : public ::testing::Test {
 protected:
  void SetUp() override {
    cudasim::set_sanitizer_enabled(true);
    backend_ = BackendRegistry::instance().get("cudasim");
    ASSERT_NE(backend_, nullptr);
    arena_ = std::make_unique<DeviceArena>(*backend_, 2 * DeviceArena::aligned(4096 * sizeof(float)));
    in_ = static_cast<float*>(arena_->take(ElementType::f32, 256, "in").data);
    out_ = static_cast<float*>(arena_->take(ElementType::f32, 256, "out").data);
    for (int i = 0; i < 256; ++i) {
      in_[i] = static_cast<float>(i + 1);
      out_[i] = -1.0f;
    }
  }
  void TearDown() override { cudasim::set_sanitizer_enabled(true); }

  // The report of the DeviceError `launch` throws; empty if it throws none.
  static std::string report_of(const std::function<int()>& launch) {
    try {
      EXPECT_EQ(launch(), 0);
    } catch (const DeviceError& error) {
      EXPECT_FALSE(error.context_lost());
      return error.what();
    }
    return {};
  }

  Backend* backend_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
  float* in_ = nullptr;
  float* out_ = nullptr;
};

void expect_report(const std::string& report, const std::string& kind, const std::string& kernel,
                   const std::string& line_fragment) {
  EXPECT_NE(report.find(kind), std::string::npos) << report;
  EXPECT_NE(report.find("in kernel "), std::string::npos) << report;
  EXPECT_NE(report.find(kernel), std::string::npos) << report;
  EXPECT_NE(report.find("tests/cudasim/sanitizer_kernels.cpp:" + line_fragment), std::string::npos) << report;
}

TEST_F(Sanitizer, AnExchangeThroughSharedMemoryWithItsBarrierRunsCleanAndRight) {
  EXPECT_EQ(report_of([&] { return cudasim_test::neighbour_exchange(in_, out_, true); }), "");
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out_[t], in_[(t + 1) % 64]) << t;
}

TEST_F(Sanitizer, AMissingBarrierIsAReadAfterWriteRace) {
  const std::string report = report_of([&] { return cudasim_test::neighbour_exchange(in_, out_, false); });
  expect_report(report, "shared memory race (read after write)", "neighbour_exchange_kernel", "");
  EXPECT_NE(report.find("the write:"), std::string::npos) << report;
  EXPECT_NE(report.find("CTA (0,0,0), thread ("), std::string::npos) << report;
}

TEST_F(Sanitizer, OverwritingWhatAnotherThreadReadsIsAWriteAfterReadRace) {
  EXPECT_EQ(report_of([&] { return cudasim_test::read_then_overwrite(in_, out_, true); }), "");
  const std::string report = report_of([&] { return cudasim_test::read_then_overwrite(in_, out_, false); });
  expect_report(report, "shared memory race (write after read)", "read_then_overwrite_kernel", "");
}

TEST_F(Sanitizer, LanesOrderedByASyncwarpDoNotRace) {
  EXPECT_EQ(report_of([&] { return cudasim_test::warp_exchange(in_, out_); }), "");
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out_[l], in_[31 - l]);
}

TEST_F(Sanitizer, CpAsyncLandsAtTheWaitThatCoversItsGroup) {
  EXPECT_EQ(report_of([&] { return cudasim_test::two_stage_copy(in_, out_, 0); }), "");
  for (int t = 0; t < 64; ++t) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out_[4 * t + i], in_[4 * ((t + 1) % 64) + i]);
  }
  for (const int pending : {1, 2}) {
    const std::string report = report_of([&] { return cudasim_test::two_stage_copy(in_, out_, pending); });
    expect_report(report, "read of shared memory a cp.async is still filling", "two_stage_copy_kernel", "");
    EXPECT_NE(report.find("the cp.async was issued:"), std::string::npos) << report;
  }
}

// Without the sanitizer the same short wait reads the poison cp.async leaves
// until the copy lands: NaN, never the right value.
TEST_F(Sanitizer, AShortWaitReadsPoisonWithTheSanitizerOff) {
  cudasim::set_sanitizer_enabled(false);
  EXPECT_EQ(report_of([&] { return cudasim_test::two_stage_copy(in_, out_, 1); }), "");
  for (int i = 0; i < 256; ++i) EXPECT_TRUE(std::isnan(out_[i])) << i << ": " << out_[i];
}

TEST_F(Sanitizer, WritingBytesACpAsyncIsStillFillingIsReported) {
  expect_report(report_of([&] { return cudasim_test::write_before_wait(in_, out_); }),
                "write to shared memory a cp.async is still filling", "write_before_wait_kernel", "");
}

TEST_F(Sanitizer, CopiesStillPendingWhenAThreadExitsAreReported) {
  expect_report(report_of([&] { return cudasim_test::copy_never_waited(in_, out_); }),
                "cp.async still pending at thread exit", "copy_never_waited_kernel", "");
}

TEST_F(Sanitizer, ReadingSharedMemoryNobodyWroteIsReported) {
  expect_report(report_of([&] { return cudasim_test::uninitialised_read(out_); }),
                "read of uninitialised shared memory", "uninitialised_read_kernel", "");
}

TEST_F(Sanitizer, AGlobalReadPastTheEndOfABufferNamesTheBuffer) {
  // Thread 63 reads in_[192 + 64], one float past the 256 of "in".
  const std::string report = report_of([&] { return cudasim_test::read_past_the_end(in_ + 192, out_); });
  expect_report(report, "out-of-bounds global access", "read_past_the_end_kernel", "");
  EXPECT_NE(report.find("past the end of buffer \"in\""), std::string::npos) << report;
  EXPECT_NE(report.find("thread (63,0,0)"), std::string::npos) << report;
}

TEST_F(Sanitizer, ASharedAccessPastTheCtasSharedMemoryEndsTheLaunch) {
  const std::string report = report_of([&] { return cudasim_test::shared_index_past_the_end(out_); });
  expect_report(report, "out-of-bounds shared access", "shared_index_past_the_end_kernel", "");
  EXPECT_NE(report.find("the CTA has 256 bytes of shared memory (0 dynamic, 256 static)"), std::string::npos)
      << report;
}

TEST_F(Sanitizer, LdmatrixRowAddressesMustBe16ByteAligned) {
  const std::string report = report_of([&] { return cudasim_test::misaligned_ldmatrix(out_); });
  expect_report(report, "misaligned shared access", "misaligned_ldmatrix_kernel", "");
  EXPECT_NE(report.find("not a multiple of 16"), std::string::npos) << report;
}

TEST_F(Sanitizer, WarpsAtDifferentBarriersAreReported) {
  const std::string report = report_of([&] { return cudasim_test::divergent_barrier(out_); });
  expect_report(report, "divergent barrier", "divergent_barrier_kernel", "");
}

TEST_F(Sanitizer, ABarrierSomeThreadsNeverReachIsADeadlockListingEveryThread) {
  const std::string report = report_of([&] { return cudasim_test::barrier_after_early_exit(out_); });
  EXPECT_NE(report.find("barrier not reached by every thread"), std::string::npos) << report;
  EXPECT_NE(report.find("threads 0-31: waiting at __syncthreads"), std::string::npos) << report;
  EXPECT_NE(report.find("threads 32-63: finished"), std::string::npos) << report;
  EXPECT_NE(report.find("tests/cudasim/sanitizer_kernels.cpp:"), std::string::npos) << report;
}

TEST_F(Sanitizer, AShuffleSomeLanesOfItsMaskSkipIsReported) {
  const std::string report = report_of([&] { return cudasim_test::shuffle_with_missing_lanes(out_); });
  EXPECT_NE(report.find("warp collective with missing lanes"), std::string::npos) << report;
  EXPECT_NE(report.find("threads 0-15: waiting at shfl.sync"), std::string::npos) << report;
  EXPECT_NE(report.find("threads 16-31: finished"), std::string::npos) << report;
}

// CUDA's documented results: __shfl_up_sync leaves the first `delta` lanes of
// each width-wide segment their own value, __shfl_down_sync the last `delta`,
// __shfl_sync reads lane `src` of the caller's segment.
TEST_F(Sanitizer, ShufflesGiveCudasDocumentedResultsAtEveryWidth) {
  for (const int width : {32, 16, 8}) {
    ASSERT_EQ(report_of([&] { return cudasim_test::shuffle_modes(out_, width); }), "");
    for (int lane = 0; lane < 32; ++lane) {
      const int in_segment = lane % width, segment = lane - in_segment;
      EXPECT_EQ(out_[lane], 100 + (lane ^ 5)) << lane;
      EXPECT_EQ(out_[32 + lane], 100 + (in_segment >= 3 ? lane - 3 : lane)) << width << " up " << lane;
      EXPECT_EQ(out_[64 + lane], 100 + (in_segment + 3 < width ? lane + 3 : lane)) << width << " down " << lane;
      EXPECT_EQ(out_[96 + lane], 100 + segment + 2) << width << " idx " << lane;
    }
  }
}

// A 16x16 tile of values 16·row + column, loaded as four 8x8 matrices
// (rows 0-7 | 8-15) x (columns 0-7 | 8-15) in the order lanes 0-31 address them.
TEST_F(Sanitizer, LdmatrixThroughAKernelDeliversTheIsasFragments) {
  ASSERT_EQ(report_of([&] { return cudasim_test::ldmatrix_registers(out_); }), "");
  const auto registers = [&](int lane, int r) {
    std::uint32_t bits;
    std::memcpy(&bits, &out_[8 * lane + r], sizeof bits);
    return std::pair<int, int>{static_cast<int>(bits & 0xffffu), static_cast<int>(bits >> 16)};
  };
  // Matrix m: rows 8·(m % 2) + …, columns 8·(m / 2) + … (lanes 8m..8m+7 gave its rows).
  // Plain: lane 5 holds row 1, columns 2 and 3 of each matrix.
  EXPECT_EQ(registers(5, 0), (std::pair<int, int>{16 * 1 + 2, 16 * 1 + 3}));
  EXPECT_EQ(registers(5, 1), (std::pair<int, int>{16 * 9 + 2, 16 * 9 + 3}));
  EXPECT_EQ(registers(5, 2), (std::pair<int, int>{16 * 1 + 10, 16 * 1 + 11}));
  EXPECT_EQ(registers(5, 3), (std::pair<int, int>{16 * 9 + 10, 16 * 9 + 11}));
  // Transposed: lane 5 holds column 1 of rows 2 and 3 of each matrix.
  EXPECT_EQ(registers(5, 4), (std::pair<int, int>{16 * 2 + 1, 16 * 3 + 1}));
  EXPECT_EQ(registers(5, 7), (std::pair<int, int>{16 * 10 + 9, 16 * 11 + 9}));
  EXPECT_EQ(registers(31, 0), (std::pair<int, int>{16 * 7 + 6, 16 * 7 + 7}));
  EXPECT_EQ(registers(31, 6), (std::pair<int, int>{16 * 6 + 15, 16 * 7 + 15}));
}

// As on the hardware, a launch with more dynamic shared memory than the
// kernel's limit (48 KiB until cudaFuncSetAttribute raises it) fails with
// cudaErrorInvalidValue, and runs once the limit is raised.
TEST_F(Sanitizer, DynamicSharedMemoryIsCheckedAgainstTheRaisedLimit) {
  EXPECT_EQ(cudasim_test::launch_with_dynamic_shared(out_, 48 * 1024, 0), 0);
  EXPECT_EQ(cudasim_test::launch_with_dynamic_shared(out_, 64 * 1024, 0), 1);
  EXPECT_EQ(cudasim_test::launch_with_dynamic_shared(out_, 64 * 1024, 64 * 1024), 0);
  EXPECT_EQ(cudasim_test::launch_with_dynamic_shared(out_, 64 * 1024 + 16, 0), 1);
  EXPECT_EQ(cudasim_test::launch_with_dynamic_shared(out_, 0, 300 * 1024), 1);  // more than sm_90 has
}

TEST_F(Sanitizer, AtomicAddsFromConcurrentCtasAllLand) {
  out_[0] = out_[2] = out_[3] = 0.0f;
  ASSERT_EQ(report_of([&] { return cudasim_test::atomic_adds(out_, 16, 2); }), "");
  EXPECT_EQ(out_[0], 16.0f * 64);
  EXPECT_EQ(out_[2], 16.0f * 64);
  EXPECT_EQ(out_[3], 2.0f * 16 * 64);
}

// The simulator's switches (the sanitizer, early time-outs): the environment
// turns one from its default, read once; a test's set() overrides it.
TEST(EnvironmentSwitch, TheVariableTurnsTheSwitchFromItsDefaultAndSetOverridesIt) {
  const char* const variable = "ATTNBENCH_TEST_ENVIRONMENT_SWITCH";
  const auto read = [&](const char* value, bool on_by_default) {
    if (value) setenv(variable, value, 1);
    else unsetenv(variable);
    cudasim::EnvironmentSwitch toggle(variable, on_by_default);
    return toggle.enabled();
  };
  EXPECT_TRUE(read(nullptr, true));
  EXPECT_FALSE(read("0", true));
  EXPECT_FALSE(read("off", true));
  EXPECT_TRUE(read("1", true));
  EXPECT_FALSE(read(nullptr, false));
  EXPECT_TRUE(read("1", false));
  EXPECT_TRUE(read("on", false));
  EXPECT_FALSE(read("0", false));
  EXPECT_FALSE(read("yes", false)) << "only 1 and on turn it on";

  setenv(variable, "on", 1);
  cudasim::EnvironmentSwitch early(variable, false);
  EXPECT_TRUE(early.enabled());
  unsetenv(variable);
  EXPECT_TRUE(early.enabled()) << "the variable is read once";
  early.set(false);
  EXPECT_FALSE(early.enabled());
}

}  // namespace
}  // namespace attnbench
