// The simulator's global reductions (red.global.add.f32 and its .v2 / .v4
// forms, cp.reduce.async.bulk .add.f32) on small kernels
// (tests/cudasim/reduction_kernels.cpp): each used right adds what the PTX ISA
// says; each used wrong fails with a DeviceError whose report names the
// finding, the kernel and the source line.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/dtype.hpp"
#include "harness/errors.hpp"
#include "tests/cudasim/reduction_kernels.hpp"

namespace attnbench {
namespace {

using cudasim_test::BulkReduce;
using cudasim_test::RedForm;

class Reductions : public ::testing::Test {
 protected:
  void SetUp() override {
    cudasim::set_sanitizer_enabled(true);
    backend_ = BackendRegistry::instance().get("cudasim");
    ASSERT_NE(backend_, nullptr);
    arena_ = std::make_unique<DeviceArena>(*backend_, std::size_t{1} << 20);
  }

  // `count` floats of the device, zeroed, 16-byte aligned.
  float* take(std::size_t count, const char* name) {
    auto* values = static_cast<float*>(arena_->take(ElementType::f32, count, name).data);
    for (std::size_t i = 0; i < count; ++i) values[i] = 0.0f;
    return values;
  }

  static std::string report_of(const std::function<int()>& launch) {
    try {
      EXPECT_EQ(launch(), 0);
    } catch (const DeviceError& error) {
      return error.what();
    }
    return {};
  }

  Backend* backend_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
};

void expect_finding(const std::string& report, const std::string& kind, const std::string& kernel) {
  EXPECT_NE(report.find(kind), std::string::npos) << report;
  EXPECT_NE(report.find(kernel), std::string::npos) << report;
  EXPECT_NE(report.find("tests/cudasim/reduction_kernels.cpp:"), std::string::npos) << report;
}

// ---- red.global.add ----------------------------------------------------------------

TEST_F(Reductions, RedAddsEveryContributionInEachForm) {
  for (const RedForm form : {RedForm::scalar, RedForm::v2, RedForm::v4}) {
    float* sums = take(4 * 64, "sums");
    EXPECT_EQ(report_of([&] { return cudasim_test::red_add(sums, 3, form, 0); }), "");
    for (int t = 0; t < 64; ++t) {
      for (int i = 0; i < 4; ++i) EXPECT_EQ(sums[4 * t + i], static_cast<float>(6 * (t + 1))) << t << " " << i;
    }
  }
}

TEST_F(Reductions, VectorRedNeedsTheVectorsAlignment) {
  float* sums = take(4 * 64 + 4, "sums");
  expect_finding(report_of([&] { return cudasim_test::red_add(sums, 1, RedForm::v4, 2); }),
                 "misaligned global access", "red_add_kernel");
  expect_finding(report_of([&] { return cudasim_test::red_add(sums, 1, RedForm::v2, 1); }),
                 "misaligned global access", "red_add_kernel");
  // 8-byte alignment is enough for .v2, and the scalar form needs 4.
  EXPECT_EQ(report_of([&] { return cudasim_test::red_add(sums, 1, RedForm::v2, 2); }), "");
  EXPECT_EQ(report_of([&] { return cudasim_test::red_add(sums, 1, RedForm::scalar, 1); }), "");
}

TEST_F(Reductions, RedOutsideTheBuffersIsOutOfBounds) {
  float* sums = take(4 * 64, "sums");
  // Thread 63's adds reach 4 floats past the buffer's end.
  expect_finding(report_of([&] { return cudasim_test::red_add(sums, 1, RedForm::v4, 4); }),
                 "out-of-bounds global access", "red_add_kernel");
}

// ---- cp.reduce.async.bulk ----------------------------------------------------------

TEST_F(Reductions, BulkReduceAddsTheSharedElementsWhenItsGroupCompletes) {
  float* sums = take(32, "sums");
  float* out = take(1, "out");
  for (int i = 0; i < 32; ++i) sums[i] = 100.0f * static_cast<float>(i);
  EXPECT_EQ(report_of([&] { return cudasim_test::bulk_reduce_add(sums, out, BulkReduce::right); }), "");
  for (int i = 0; i < 32; ++i) EXPECT_EQ(sums[i], 100.0f * static_cast<float>(i) + static_cast<float>(i + 1)) << i;
  EXPECT_EQ(out[0], 1.0f);
}

TEST_F(Reductions, BulkReduceMisusesAreReported) {
  const std::vector<std::pair<BulkReduce, std::string>> cases = {
      {BulkReduce::not_fenced, "generic-proxy write not fenced for the async proxy"},
      {BulkReduce::size_not_16, "invalid bulk copy size"},
      {BulkReduce::misaligned_global, "misaligned global access"},
      {BulkReduce::misaligned_shared, "misaligned shared access"},
      {BulkReduce::never_waited, "bulk copy still pending at thread exit"},
  };
  for (const auto& [variant, kind] : cases) {
    float* sums = take(40, "sums");
    float* out = take(1, "out");
    SCOPED_TRACE(kind);
    expect_finding(report_of([&] { return cudasim_test::bulk_reduce_add(sums + 4, out, variant); }), kind,
                   "bulk_reduce_kernel");
  }
}

}  // namespace
}  // namespace attnbench
