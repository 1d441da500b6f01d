// Timing statistics (docs/design.md §4): type-7 percentiles, the summary, and the
// distribution-free confidence interval of the median, checked against the
// exact binomial coverage and by simulation; the running interval of the
// stopping rule against the direct computation.
#include "harness/measure/statistics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace attnbench {
namespace {

// Exact coverage 1 - 2 P(X <= k - 1), X ~ Binomial(n, 1/2), of the interval
// [x_(k), x_(n+1-k)]; computed independently of the implementation (pmf by the
// ratio recurrence, no lgamma).
double exact_coverage(std::size_t n, std::size_t k) {
  double pmf = std::pow(0.5, static_cast<double>(n));  // P(X = 0)
  double cdf = 0.0;
  for (std::size_t i = 0; i + 1 <= k; ++i) {  // i = 0 .. k - 1
    cdf += pmf;
    pmf *= static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  return 1.0 - 2.0 * cdf;
}

TEST(PercentileSorted, InterpolatesLinearlyBetweenOrderStatistics) {
  const std::vector<double> values{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 1.0), 4.0);
}

TEST(PercentileSorted, UnevenSpacingAndOddCount) {
  // NumPy: np.percentile([10, 20, 40, 80, 160], [10, 50, 99]) = [14, 40, 156.8]
  const std::vector<double> values{10, 20, 40, 80, 160};
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.10), 14.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(values, 0.50), 40.0);
  EXPECT_NEAR(percentile_sorted(values, 0.99), 156.8, 1e-12);
}

TEST(PercentileSorted, SingleValueAndEmpty) {
  EXPECT_DOUBLE_EQ(percentile_sorted({7.5}, 0.0), 7.5);
  EXPECT_DOUBLE_EQ(percentile_sorted({7.5}, 0.5), 7.5);
  EXPECT_DOUBLE_EQ(percentile_sorted({7.5}, 1.0), 7.5);
  EXPECT_THROW(percentile_sorted({}, 0.5), std::invalid_argument);
}

TEST(Summarize, OrderStatisticsMeanAndSampleStddevOfUnsortedInput) {
  const SampleStatistics s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(s.p25, 1.75);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p75, 3.25);
  EXPECT_DOUBLE_EQ(s.p10, 1.3);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  // sum of squares 5, divided by n - 1 = 3
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(s.confidence, 0.95);
}

TEST(Summarize, SingleSampleAndNoSamples) {
  const SampleStatistics one = summarize({2.0});
  EXPECT_EQ(one.count, 1u);
  EXPECT_DOUBLE_EQ(one.min, 2.0);
  EXPECT_DOUBLE_EQ(one.max, 2.0);
  EXPECT_DOUBLE_EQ(one.p50, 2.0);
  EXPECT_DOUBLE_EQ(one.mean, 2.0);
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
  EXPECT_FALSE(one.median_ci_defined);

  const SampleStatistics none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_FALSE(none.median_ci_defined);
  EXPECT_TRUE(std::isinf(none.median_ci_relative_width()));
}

TEST(MedianConfidenceRanks, TenSamplesAt95PercentAreTwoAndNine) {
  const MedianRanks ranks = median_confidence_ranks(10, 0.95);
  EXPECT_EQ(ranks.low, 2u);
  EXPECT_EQ(ranks.high, 9u);
  // At 99% only the extremes reach the coverage: 1 - 2/1024 >= 0.99 > 1 - 22/1024.
  const MedianRanks wide = median_confidence_ranks(10, 0.99);
  EXPECT_EQ(wide.low, 1u);
  EXPECT_EQ(wide.high, 10u);
}

TEST(MedianConfidenceRanks, FewerThanSixSamplesGiveNoInterval) {
  for (std::size_t n = 0; n < 6; ++n) {
    const MedianRanks ranks = median_confidence_ranks(n, 0.95);
    EXPECT_EQ(ranks.low, 0u) << "n = " << n;
    EXPECT_EQ(ranks.high, 0u) << "n = " << n;
    if (n > 0) {
      EXPECT_LT(exact_coverage(n, 1), 0.95) << "n = " << n;
    }
  }
  const MedianRanks six = median_confidence_ranks(6, 0.95);
  EXPECT_EQ(six.low, 1u);
  EXPECT_EQ(six.high, 6u);
}

TEST(MedianConfidenceRanks, LargestRankWhoseExactBinomialCoverageReaches95Percent) {
  for (std::size_t n = 6; n <= 200; ++n) {
    const MedianRanks ranks = median_confidence_ranks(n, 0.95);
    ASSERT_GE(ranks.low, 1u) << "n = " << n;
    EXPECT_EQ(ranks.high, n + 1 - ranks.low) << "n = " << n;
    EXPECT_LE(ranks.low, ranks.high) << "n = " << n;
    EXPECT_GE(exact_coverage(n, ranks.low), 0.95) << "n = " << n;
    // One rank further in would no longer cover the median often enough.
    if (ranks.low + 1 <= (n + 1) / 2) {
      EXPECT_LT(exact_coverage(n, ranks.low + 1), 0.95) << "n = " << n;
    }
  }
  // Known values (e.g. tables of the sign-test interval): n = 20 -> (6, 15),
  // n = 25 -> (8, 18), n = 100 -> (40, 61).
  EXPECT_EQ(median_confidence_ranks(20, 0.95).low, 6u);
  EXPECT_EQ(median_confidence_ranks(25, 0.95).low, 8u);
  EXPECT_EQ(median_confidence_ranks(100, 0.95).low, 40u);
  EXPECT_EQ(median_confidence_ranks(100, 0.95).high, 61u);
}

TEST(Summarize, MedianIntervalIsTheOrderStatisticsOfTheRanks) {
  // 10 .. 1, shuffled order does not matter: the sorted values are 1..10.
  const SampleStatistics s = summarize({10, 3, 7, 1, 9, 2, 8, 4, 6, 5});
  ASSERT_TRUE(s.median_ci_defined);
  EXPECT_DOUBLE_EQ(s.median_ci_low, 2.0);
  EXPECT_DOUBLE_EQ(s.median_ci_high, 9.0);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.median_ci_relative_width(), 7.0 / 5.5);

  // At 99% confidence the same samples give the extremes.
  const SampleStatistics wide = summarize({10, 3, 7, 1, 9, 2, 8, 4, 6, 5}, 0.99);
  EXPECT_DOUBLE_EQ(wide.confidence, 0.99);
  EXPECT_DOUBLE_EQ(wide.median_ci_low, 1.0);
  EXPECT_DOUBLE_EQ(wide.median_ci_high, 10.0);
}

TEST(Summarize, TooFewSamplesLeaveTheIntervalUndefinedAndInfinitelyWide) {
  const SampleStatistics s = summarize({5, 1, 4, 2, 3});
  EXPECT_FALSE(s.median_ci_defined);
  EXPECT_DOUBLE_EQ(s.median_ci_low, 1.0);   // [min, max]
  EXPECT_DOUBLE_EQ(s.median_ci_high, 5.0);
  EXPECT_EQ(s.median_ci_relative_width(), std::numeric_limits<double>::infinity());
}

TEST(Summarize, RelativeWidthIsInfiniteForAZeroMedian) {
  const SampleStatistics s = summarize(std::vector<double>(12, 0.0));
  EXPECT_TRUE(s.median_ci_defined);
  EXPECT_EQ(s.median_ci_relative_width(), std::numeric_limits<double>::infinity());
  const SampleStatistics constant = summarize(std::vector<double>(12, 3.0));
  EXPECT_DOUBLE_EQ(constant.median_ci_relative_width(), 0.0);
}

TEST(Summarize, IntervalContainsTheSampleMedian) {
  std::mt19937_64 generator(7);
  std::lognormal_distribution<double> draw(0.0, 1.0);
  for (std::size_t n : {6u, 7u, 10u, 33u, 100u, 257u}) {
    std::vector<double> samples(n);
    for (double& x : samples) x = draw(generator);
    const SampleStatistics s = summarize(samples);
    ASSERT_TRUE(s.median_ci_defined) << "n = " << n;
    EXPECT_LE(s.median_ci_low, s.p50) << "n = " << n;
    EXPECT_GE(s.median_ci_high, s.p50) << "n = " << n;
    EXPECT_LE(s.min, s.median_ci_low) << "n = " << n;
    EXPECT_GE(s.max, s.median_ci_high) << "n = " << n;
    // The bounds are samples, at the ranks median_confidence_ranks names.
    std::sort(samples.begin(), samples.end());
    const MedianRanks ranks = median_confidence_ranks(n, 0.95);
    EXPECT_EQ(s.median_ci_low, samples[ranks.low - 1]) << "n = " << n;
    EXPECT_EQ(s.median_ci_high, samples[ranks.high - 1]) << "n = " << n;
  }
}

TEST(Summarize, IntervalCoversTheTrueMedianAboutAsOftenAsPromised) {
  // 2000 seeded draws of 25 exponential samples; the true median is ln 2. The
  // exact coverage of ranks (8, 18) is 0.957, so the count lands near 1914 (its
  // standard deviation is about 9).
  constexpr int kDraws = 2000;
  constexpr std::size_t kSamples = 25;
  const double true_median = std::log(2.0);
  std::mt19937_64 generator(12345);
  std::exponential_distribution<double> draw(1.0);
  int covered = 0;
  std::vector<double> samples(kSamples);
  for (int trial = 0; trial < kDraws; ++trial) {
    for (double& x : samples) x = draw(generator);
    const SampleStatistics s = summarize(samples);
    ASSERT_TRUE(s.median_ci_defined);
    if (s.median_ci_low <= true_median && true_median <= s.median_ci_high) ++covered;
  }
  const double fraction = static_cast<double>(covered) / kDraws;
  EXPECT_GE(fraction, 0.93);
  // And it is not the trivial [min, max] interval (coverage 1 - 2^-24).
  EXPECT_LE(fraction, 0.985);
}

TEST(RunningMedianInterval, RanksEqualTheDirectComputationAtEveryCount) {
  // Every count up to 2000, then every 4999th up to 100,000: the carried-over
  // Binomial tails pick the same ranks as summing the tail afresh, including
  // at the confidences where the ranks change often.
  for (const double confidence : {0.95, 0.99, 0.5}) {
    RunningMedianInterval running(confidence);
    for (std::size_t n = 1; n <= 100000; ++n) {
      running.add(1.0);  // the ranks depend on the count only
      if (n > 2000 && n % 4999 != 0) continue;
      const MedianRanks direct = median_confidence_ranks(n, confidence);
      const MedianRanks carried = running.ranks();
      ASSERT_EQ(carried.low, direct.low) << "n = " << n << ", confidence " << confidence;
      ASSERT_EQ(carried.high, direct.high) << "n = " << n << ", confidence " << confidence;
    }
  }
}

TEST(RunningMedianInterval, WidthEqualsSummarizeOfTheValuesSoFar) {
  // Continuous values with zeros among them, values of a coarse clock (many
  // ties), and sorted runs up and down: every order the followed statistics
  // can be passed in.
  std::mt19937_64 generator(7);
  std::lognormal_distribution<double> draw(-7.0, 0.3);
  std::uniform_int_distribution<int> tick(1, 6);
  const std::vector<std::function<double(std::size_t)>> sequences = {
      [&](std::size_t n) { return n % 50 == 0 ? 0.0 : draw(generator); },
      [&](std::size_t) { return 1e-6 * tick(generator); },
      [](std::size_t n) { return 1e-6 * static_cast<double>(n); },
      [](std::size_t n) { return 1.0 / static_cast<double>(n); }};
  for (std::size_t sequence = 0; sequence < sequences.size(); ++sequence) {
    RunningMedianInterval running;
    std::vector<double> values;
    for (std::size_t n = 1; n <= 400; ++n) {
      values.push_back(sequences[sequence](n));
      running.add(values.back());
      ASSERT_EQ(running.count(), n);
      const double expected = summarize(values).median_ci_relative_width();
      if (std::isinf(expected)) {
        ASSERT_TRUE(std::isinf(running.relative_width())) << "sequence " << sequence << ", n = " << n;
      } else {
        ASSERT_EQ(running.relative_width(), expected) << "sequence " << sequence << ", n = " << n;
      }
    }
  }
}

TEST(RunningMedianInterval, NoIntervalBeforeSixValuesNorWithAZeroMedian) {
  RunningMedianInterval running;
  EXPECT_TRUE(std::isinf(running.relative_width()));
  for (int i = 0; i < 5; ++i) running.add(1.0);
  EXPECT_EQ(running.ranks().low, 0u);
  EXPECT_TRUE(std::isinf(running.relative_width()));
  running.add(1.0);
  EXPECT_EQ(running.ranks().low, 1u);
  EXPECT_EQ(running.relative_width(), 0.0);

  RunningMedianInterval zeros;
  for (int i = 0; i < 10; ++i) zeros.add(0.0);
  EXPECT_TRUE(std::isinf(zeros.relative_width()));
}

}  // namespace
}  // namespace attnbench
