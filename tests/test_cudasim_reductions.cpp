// The simulator's global reductions (red.global.add.f32 and its .v2 / .v4
// forms, cp.reduce.async.bulk .add.f32) on small kernels
// (tests/cudasim/reduction_kernels.cpp): each used right adds what the PTX ISA
// says; each used wrong fails with a DeviceError whose report names the
// finding, the kernel and the source line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/cudasim/cta_order_switch.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/dtype.hpp"
#include "tests/cudasim/launch_report.hpp"
#include "tests/cudasim/reduction_kernels.hpp"

namespace attnbench {
namespace {

using cudasim_test::report_of;

using cudasim_test::Accumulation;
using cudasim_test::BulkReduce;
using cudasim_test::MixedAccess;
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

TEST_F(Reductions, RedGlobalOnASharedAddressIsReported) {
  float* out = take(1, "out");
  expect_finding(report_of([&] { return cudasim_test::red_add_to_shared(out); }), "red.global on shared memory",
                 "red_add_to_shared_kernel");
}

// ---- cp.reduce.async.bulk ----------------------------------------------------------

TEST_F(Reductions, BulkReduceAddsTheSharedElementsWhenItsGroupCompletes) {
  float* sums = take(32, "sums");
  float* out = take(2, "out");
  for (int i = 0; i < 32; ++i) sums[i] = 100.0f * static_cast<float>(i);
  EXPECT_EQ(report_of([&] { return cudasim_test::bulk_reduce_add(sums, out, BulkReduce::right); }), "");
  for (int i = 0; i < 32; ++i) EXPECT_EQ(sums[i], 100.0f * static_cast<float>(i) + static_cast<float>(i + 1)) << i;
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 102.0f);  // thread 1 reads after the barrier that follows thread 0's wait
}

TEST_F(Reductions, ABulkReductionIsOrderedOnlyFromTheWaitThatCompletesIt) {
  float* sums = take(32, "sums");
  float* out = take(2, "out");
  const std::string report =
      report_of([&] { return cudasim_test::bulk_reduce_add(sums, out, BulkReduce::waited_too_late); });
  expect_finding(report, "global memory race with a reduction", "bulk_reduce_kernel");
  EXPECT_NE(report.find("cp.reduce.async.bulk .add.f32"), std::string::npos) << report;
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
    float* out = take(2, "out");
    SCOPED_TRACE(kind);
    expect_finding(report_of([&] { return cudasim_test::bulk_reduce_add(sums + 4, out, variant); }), kind,
                   "bulk_reduce_kernel");
  }
}

// ---- plain accesses racing reductions -----------------------------------------------

class MixedAccesses : public Reductions {
 protected:
  std::string launch(MixedAccess variant, int ctas) {
    float* sums = take(64, "sums");
    float* out = take(64, "out");
    int* counter = reinterpret_cast<int*>(take(1, "counter"));
    *counter = 0;
    out_ = out;
    return report_of([&] { return cudasim_test::mixed_access(sums, out, counter, ctas, variant); });
  }
  float* out_ = nullptr;
};

TEST_F(MixedAccesses, AReadOrderedAfterEveryCtasAddsThroughACounterIsNoRace) {
  EXPECT_EQ(launch(MixedAccess::counted_read, 4), "");
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out_[t], 4.0f) << t;
}

TEST_F(MixedAccesses, AReadNoReleaseOrdersAfterOtherCtasAddsIsARace) {
  const std::string report = launch(MixedAccess::uncounted_read, 4);
  expect_finding(report, "global memory race with a reduction", "mixed_access_kernel");
  EXPECT_NE(report.find("plain load"), std::string::npos) << report;
  EXPECT_NE(report.find("red.global.add.f32 of CTA (0,0,0)"), std::string::npos) << report;
}

TEST_F(MixedAccesses, AnAcquireOrdersOnlyTheThreadsThatLearnOfIt) {
  // Thread 0 acquired the counter; without the __syncthreads after it, the
  // other threads' reads are not ordered after the other CTAs' adds.
  const std::string report = launch(MixedAccess::read_without_barrier, 4);
  expect_finding(report, "global memory race with a reduction", "mixed_access_kernel");
  EXPECT_NE(report.find("63 findings"), std::string::npos) << report;  // threads 1-63, once each
  EXPECT_EQ(report.find("thread (0,0,0)"), std::string::npos) << report;
}

TEST_F(MixedAccesses, AnAddAfterAnUnorderedStoreIsARace) {
  EXPECT_EQ(launch(MixedAccess::store_then_add, 1), "");
  const std::string report = launch(MixedAccess::store_then_add_unsynced, 1);
  expect_finding(report, "global memory race with a reduction", "mixed_access_kernel");
  EXPECT_NE(report.find("red.global.add.f32 at"), std::string::npos) << report;
  EXPECT_NE(report.find("after the plain store"), std::string::npos) << report;
}

TEST_F(MixedAccesses, ReductionsAmongThemselvesAndWithTheSanitizerOffAreNoRace) {
  for (const RedForm form : {RedForm::scalar, RedForm::v2, RedForm::v4}) {
    float* sums = take(4 * 64, "sums");
    EXPECT_EQ(report_of([&] { return cudasim_test::red_add(sums, 4, form, 0); }), "");
  }
  cudasim::set_sanitizer_enabled(false);
  EXPECT_EQ(launch(MixedAccess::uncounted_read, 4), "");
  cudasim::set_sanitizer_enabled(true);
}

// ---- the CTA order, and waits across CTAs -------------------------------------------

TEST(CtaOrderSwitch, ASeedDrawsAPermutationAndZeroKeepsGridOrder) {
  const std::vector<std::int64_t> grid = cudasim::cta_order(8, 0);
  for (std::int64_t b = 0; b < 8; ++b) EXPECT_EQ(grid[static_cast<std::size_t>(b)], b);
  std::set<std::vector<std::int64_t>> orders;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::vector<std::int64_t> order = cudasim::cta_order(8, seed);
    EXPECT_EQ(order, cudasim::cta_order(8, seed));  // the same seed, the same order
    orders.insert(order);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, grid) << "seed " << seed << " is no permutation";
  }
  EXPECT_GE(orders.size(), 30u);
  {
    const cudasim::CtaOrder scope(7);
    EXPECT_EQ(cudasim::cta_order_seed(), 7u);
  }
  EXPECT_EQ(cudasim::cta_order_seed(), 0u);
}

class AccumulationOrder : public Reductions {
 protected:
  static constexpr int kCtas = 8;
  // The fp32 sums of the addends of CTAs in `order`, as bits.
  static std::vector<std::uint32_t> host_sums(const std::vector<std::int64_t>& order) {
    std::vector<std::uint32_t> bits(64);
    for (int t = 0; t < 64; ++t) {
      float sum = 0.0f;
      for (const std::int64_t c : order) sum += cudasim_test::addend(static_cast<int>(c), t);
      std::memcpy(&bits[static_cast<std::size_t>(t)], &sum, 4);
    }
    return bits;
  }
  void SetUp() override {
    Reductions::SetUp();
    sums_ = take(64, "sums");
    semaphore_ = reinterpret_cast<int*>(take(1, "semaphore"));
  }
  // A launch of `variant` in the CTA order `seed` draws: the report, and the sums' bits.
  std::string launch(Accumulation variant, std::uint64_t seed, int host_threads, std::vector<std::uint32_t>& bits) {
    const cudasim::CtaOrder order(seed);
    std::fill(sums_, sums_ + 64, 0.0f);
    *semaphore_ = 0;
    const std::string report =
        report_of([&] { return cudasim_test::accumulate(sums_, semaphore_, kCtas, variant, host_threads); });
    bits.resize(64);
    std::memcpy(bits.data(), sums_, 64 * 4);
    return report;
  }
  std::vector<std::uint32_t> run(Accumulation variant, std::uint64_t seed, int host_threads) {
    std::vector<std::uint32_t> bits;
    EXPECT_EQ(launch(variant, seed, host_threads, bits), "");
    return bits;
  }
  float* sums_ = nullptr;
  int* semaphore_ = nullptr;
};

TEST_F(AccumulationOrder, AnUnorderedAccumulationAddsInTheOrderTheCtasRun) {
  std::set<std::vector<std::uint32_t>> results;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const std::vector<std::uint32_t> bits = run(Accumulation::unordered, seed, 1);
    EXPECT_EQ(bits, host_sums(cudasim::cta_order(kCtas, seed))) << "seed " << seed;
    results.insert(bits);
  }
  EXPECT_GE(results.size(), 2u) << "the CTA order never changed the sums";
}

TEST_F(AccumulationOrder, ASemaphoreOrderedAccumulationGivesTheSameBitsInEveryCtaOrder) {
  std::vector<std::int64_t> grid_order(kCtas);
  for (int c = 0; c < kCtas; ++c) grid_order[static_cast<std::size_t>(c)] = c;
  const std::vector<std::uint32_t> expected = host_sums(grid_order);
  for (const int host_threads : {1, 2}) {
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      EXPECT_EQ(run(Accumulation::ordered, seed, host_threads), expected)
          << "seed " << seed << ", " << host_threads << " host threads";
    }
  }
}

TEST_F(AccumulationOrder, ACtaWaitsForOneThatStartsAfterIt) {
  std::vector<std::int64_t> reversed(kCtas);
  for (int c = 0; c < kCtas; ++c) reversed[static_cast<std::size_t>(c)] = kCtas - 1 - c;
  EXPECT_EQ(run(Accumulation::reversed, 0, 1), host_sums(reversed));
  EXPECT_EQ(run(Accumulation::reversed, 0, 2), host_sums(reversed));
}

TEST_F(AccumulationOrder, AWaitNoCtaWillEndIsADeadlock) {
  for (const int host_threads : {1, 2}) {
    for (const std::uint64_t seed : {0, 3}) {
      std::vector<std::uint32_t> bits;
      const std::string report = launch(Accumulation::wait_too_long, seed, host_threads, bits);
      expect_finding(report, "global-memory wait that can never end", "accumulate_kernel");
      EXPECT_NE(report.find("a spin on ld.acquire.gpu"), std::string::npos) << report;
    }
  }
}

// Run by CTest as `cudasim_cta_order_from_environment` with
// ATTNBENCH_CUDASIM_CTA_ORDER=5 (tests/CMakeLists.txt); without it, skipped.
TEST_F(AccumulationOrder, TheEnvironmentVariableSetsTheOrder) {
  const char* variable = std::getenv("ATTNBENCH_CUDASIM_CTA_ORDER");
  if (!variable) GTEST_SKIP() << "ATTNBENCH_CUDASIM_CTA_ORDER is unset (cudasim_cta_order_from_environment sets it)";
  const std::uint64_t seed = std::strtoull(variable, nullptr, 10);
  ASSERT_EQ(cudasim::cta_order_seed(), seed);
  ASSERT_NE(cudasim::cta_order(kCtas, seed), cudasim::cta_order(kCtas, 0)) << "the seed keeps the grid order";
  std::fill(sums_, sums_ + 64, 0.0f);
  EXPECT_EQ(report_of([&] { return cudasim_test::accumulate(sums_, semaphore_, kCtas, Accumulation::unordered, 1); }),
            "");
  std::vector<std::uint32_t> bits(64);
  std::memcpy(bits.data(), sums_, 64 * 4);
  EXPECT_EQ(bits, host_sums(cudasim::cta_order(kCtas, seed)));
}

}  // namespace
}  // namespace attnbench
