// The statistics of the regression gate's time verdict (harness/compare/statistics.hpp
// and compare_times in harness/compare/gate.hpp): pairwise-difference selection
// against brute force, the Mann–Whitney null distribution against enumeration,
// the Hodges–Lehmann estimate, Moses bounds, p-values and Holm against
// hand-computed values, the agreement of intervals with Holm's decisions, and
// the gate's error rates and power on synthetic timing samples over many seeds.
#include "harness/compare/statistics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "harness/compare/gate.hpp"

namespace attnbench {
namespace {

std::vector<double> brute_force_differences(const std::vector<double>& base, const std::vector<double>& next) {
  std::vector<double> differences;
  for (double x : base) {
    for (double y : next) differences.push_back(y - x);
  }
  std::sort(differences.begin(), differences.end());
  return differences;
}

TEST(PairwiseDifferences, OrderStatisticsAndCountsMatchBruteForceIncludingTies) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_int_distribution<int> size(1, 12), grid(-5, 5);
    std::normal_distribution<double> noise(0.0, 3.0);
    std::vector<double> base(size(random)), next(size(random));
    // Half the trials on a coarse grid, so differences tie.
    for (double& value : base) value = trial % 2 ? grid(random) : noise(random);
    for (double& value : next) value = trial % 2 ? grid(random) : noise(random);
    const std::vector<double> expected = brute_force_differences(base, next);
    const PairwiseDifferences differences(base, next);
    ASSERT_EQ(differences.count(), expected.size());
    for (std::size_t k = 1; k <= expected.size(); ++k) EXPECT_EQ(differences.order_statistic(k), expected[k - 1]) << k;
    for (double probe : {-3.0, -0.5, 0.0, 1.0, 2.5, expected.front(), expected.back()}) {
      const auto at_most = std::count_if(expected.begin(), expected.end(), [&](double d) { return d <= probe; });
      const auto below = std::count_if(expected.begin(), expected.end(), [&](double d) { return d < probe; });
      EXPECT_EQ(differences.count_at_most(probe), static_cast<std::size_t>(at_most));
      EXPECT_EQ(differences.count_below(probe), static_cast<std::size_t>(below));
    }
  }
}

TEST(PairwiseDifferences, HodgesLehmannIsTheMedianOfTheDifferences) {
  // base {1, 2, 3}, new {2, 4, 6}: differences -1 0 1 1 2 3 3 4 5, median 2.
  EXPECT_DOUBLE_EQ(PairwiseDifferences({1, 2, 3}, {2, 4, 6}).median(), 2.0);
  // base {0, 1}, new {0, 3}: differences -1 0 2 3, median (0 + 2) / 2.
  EXPECT_DOUBLE_EQ(PairwiseDifferences({0, 1}, {0, 3}).median(), 1.0);
  EXPECT_THROW(PairwiseDifferences({}, {1.0}), std::invalid_argument);
  EXPECT_THROW(PairwiseDifferences({1.0}, {NAN}), std::invalid_argument);
}

// P(U >= u) by enumerating which of the m + n ranks belong to `next`.
std::vector<double> enumerated_upper_tail(std::size_t m, std::size_t n) {
  std::vector<double> counts(m * n + 1, 0.0);
  double total = 0;
  for (std::uint32_t mask = 0; mask < (1u << (m + n)); ++mask) {
    if (static_cast<std::size_t>(__builtin_popcount(mask)) != n) continue;
    std::size_t u = 0, base_below = 0;
    for (std::size_t rank = 0; rank < m + n; ++rank) {
      if (mask & (1u << rank)) u += base_below;  // a `next` value exceeds every base value below it
      else ++base_below;
    }
    counts[u] += 1;
    total += 1;
  }
  std::vector<double> tail(m * n + 2, 0.0);
  for (std::size_t u = m * n + 1; u-- > 0;) tail[u] = tail[u + 1] + counts[u] / total;
  return tail;
}

TEST(MannWhitneyNull, ExactDistributionMatchesEnumeration) {
  for (std::size_t m = 1; m <= 6; ++m) {
    for (std::size_t n = 1; n <= 7; ++n) {
      std::vector<double> base(m), next(n);
      for (std::size_t i = 0; i < m; ++i) base[i] = static_cast<double>(i);
      for (std::size_t j = 0; j < n; ++j) next[j] = 0.5 + static_cast<double>(j);
      const MannWhitneyNull null(base, next);
      ASSERT_TRUE(null.exact());
      const std::vector<double> expected = enumerated_upper_tail(m, n);
      for (std::size_t u = 0; u <= m * n; ++u) {
        EXPECT_NEAR(null.upper_tail(static_cast<double>(u)), expected[u], 1e-12) << m << "x" << n << " u=" << u;
      }
    }
  }
}

TEST(MannWhitneyNull, LargestExactDistributionIsSymmetricAndComplete) {
  // 50 x 50 holds C(100, 50) ≈ 1.0e29 arrangements: P(U >= u) + P(U >= m·n + 1 - u) = 1.
  std::vector<double> base(50), next(50);
  for (std::size_t i = 0; i < 50; ++i) {
    base[i] = static_cast<double>(i);
    next[i] = static_cast<double>(i) + 0.5;
  }
  const MannWhitneyNull null(base, next);
  ASSERT_TRUE(null.exact());
  EXPECT_DOUBLE_EQ(null.upper_tail(0), 1.0);
  for (std::size_t u = 1; u <= 2500; u += 7) {
    EXPECT_NEAR(null.upper_tail(static_cast<double>(u)) + null.upper_tail(static_cast<double>(2501 - u)), 1.0, 1e-12) << u;
  }
  EXPECT_NEAR(null.upper_tail(2500), 1.0 / 1.0089134454556419e29, 1e-40) << "1 / C(100, 50)";
}

TEST(MannWhitneyNull, TiesOrManyPairsUseTheTieCorrectedNormalApproximation) {
  EXPECT_FALSE(MannWhitneyNull({0, 0, 1, 2, 3}, {1, 2, 2, 3, 4}).exact());
  std::vector<double> large(51);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<double>(i);
  EXPECT_FALSE(MannWhitneyNull(large, large).exact()) << "51 x 51 pairs exceed the exact limit";
  large.pop_back();
  EXPECT_TRUE(MannWhitneyNull(large, std::vector<double>(large.begin(), large.end())).exact());
}

TEST(ShiftComparison, MosesBoundsAndExactPValueByHand) {
  // base {1, 2, 3}, new {2, 4, 6}; sorted differences d = -1 0 1 1 2 3 3 4 5.
  // Exact null for 3 x 3: counts of U = 0..9 are 1 1 2 3 3 3 3 2 1 1 (of 20), so
  // P(U >= 9) = 0.05, P(U >= 8) = 0.10, P(U >= 7) = 0.20.
  const ShiftComparison comparison({1, 2, 3}, {2, 4, 6}, 0.5);
  EXPECT_TRUE(comparison.exact());
  EXPECT_DOUBLE_EQ(comparison.estimate(), 2.0);
  EXPECT_DOUBLE_EQ(comparison.u_statistic(), 7.0);  // seven differences exceed 0.5
  EXPECT_NEAR(comparison.p_value(), 0.20, 1e-12);
  // Level 0.05: c = 9, bounds d(1) and d(9); 0.10: c = 8, d(2) and d(8); 0.20: d(3), d(7).
  const auto at_5 = comparison.interval(0.05), at_10 = comparison.interval(0.10), at_20 = comparison.interval(0.20);
  ASSERT_TRUE(at_5 && at_10 && at_20);
  EXPECT_DOUBLE_EQ(at_5->lower, -1.0);
  EXPECT_DOUBLE_EQ(at_5->upper, 5.0);
  EXPECT_DOUBLE_EQ(at_10->lower, 0.0);
  EXPECT_DOUBLE_EQ(at_10->upper, 4.0);
  EXPECT_DOUBLE_EQ(at_20->lower, 1.0);
  EXPECT_DOUBLE_EQ(at_20->upper, 3.0);
  EXPECT_FALSE(comparison.interval(0.04)) << "no pair of order statistics reaches 96% one-sided with 3 x 3";

  // A difference equal to the margin counts one half: margin 2 gives U = 4 + 1/2,
  // rounded up against a regression: P(U >= 5) = 10/20.
  const ShiftComparison at_margin({1, 2, 3}, {2, 4, 6}, 2.0);
  EXPECT_DOUBLE_EQ(at_margin.u_statistic(), 4.5);
  EXPECT_NEAR(at_margin.p_value(), 0.5, 1e-12);
}

TEST(ShiftComparison, NormalApproximationWithTiesByHand) {
  // base {0, 0, 1, 2, 3}, new {1, 2, 2, 3, 4}, margin 0.5: U = 17 differences above it.
  // Tie groups {0, 0} and {2, 2}: Σ(t³ - t) = 12; N = 10;
  // var = 25/12 (11 - 12/90) = 22.638889, sd = 4.758034;
  // z = (17 - 0.5 - 12.5) / sd = 0.840683; p = 1 - Φ(z) = 0.200263.
  const ShiftComparison comparison({0, 0, 1, 2, 3}, {1, 2, 2, 3, 4}, 0.5);
  EXPECT_FALSE(comparison.exact());
  EXPECT_DOUBLE_EQ(comparison.u_statistic(), 17.0);
  EXPECT_NEAR(comparison.p_value(), 0.20026268008863146, 1e-12);
  // Smallest u with 1 - Φ((u - 13) / sd) <= 0.05 is 21 (p = 0.046346; u = 20 gives
  // 0.070), so the bounds are d(25 + 1 - 21) = d(5) and d(21) of
  // d = -2 -1 -1 -1 0 0 0 0 1 1 1 1 1 1 2 2 2 2 2 2 3 3 3 4 4.
  const auto interval = comparison.interval(0.05);
  ASSERT_TRUE(interval);
  EXPECT_DOUBLE_EQ(interval->lower, 0.0);
  EXPECT_DOUBLE_EQ(interval->upper, 3.0);
  EXPECT_DOUBLE_EQ(comparison.estimate(), 1.0);  // d(13)
}

TEST(HolmStepDown, HandExample) {
  // Sorted: 0.005 (<= 0.05/4, rejected), 0.01 (<= 0.05/3, rejected), 0.03 (> 0.05/2:
  // stop), 0.04 (not rejected either). Adjusted: 4·0.005 = 0.02, max(0.02, 3·0.01) = 0.03,
  // max(0.03, 2·0.03) = 0.06, max(0.06, 1·0.04) = 0.06.
  const std::vector<HolmDecision> decisions = holm_step_down({0.01, 0.04, 0.03, 0.005}, 0.05);
  ASSERT_EQ(decisions.size(), 4u);
  EXPECT_TRUE(decisions[3].rejected);
  EXPECT_TRUE(decisions[0].rejected);
  EXPECT_FALSE(decisions[2].rejected);
  EXPECT_FALSE(decisions[1].rejected);
  EXPECT_NEAR(decisions[3].adjusted_p, 0.02, 1e-15);
  EXPECT_NEAR(decisions[0].adjusted_p, 0.03, 1e-15);
  EXPECT_NEAR(decisions[2].adjusted_p, 0.06, 1e-15);
  EXPECT_NEAR(decisions[1].adjusted_p, 0.06, 1e-15);
  EXPECT_DOUBLE_EQ(decisions[3].level, 0.05 / 4);
  EXPECT_DOUBLE_EQ(decisions[0].level, 0.05 / 3);
  EXPECT_DOUBLE_EQ(decisions[2].level, 0.05 / 2) << "the level at which the procedure stopped";
  EXPECT_DOUBLE_EQ(decisions[1].level, 0.05 / 2);

  // The step-down stops at the first failure even when a later p-value would pass
  // its own level: 0.03 > 0.05/2 stops it, though 0.04 <= 0.05/1.
  const std::vector<HolmDecision> stopped = holm_step_down({0.03, 0.04}, 0.05);
  EXPECT_FALSE(stopped[0].rejected);
  EXPECT_FALSE(stopped[1].rejected);
  const std::vector<HolmDecision> both = holm_step_down({0.001, 0.05}, 0.05);
  EXPECT_TRUE(both[0].rejected);
  EXPECT_TRUE(both[1].rejected) << "p equal to its level is rejected";
  EXPECT_TRUE(holm_step_down({}, 0.05).empty());
}

std::vector<double> log_of(const std::vector<double>& values) {
  std::vector<double> logs;
  for (double value : values) logs.push_back(std::log(value));
  return logs;
}

// ---- synthetic timing samples ----

// Realistic timing noise: lognormal with relative sigma, and with probability
// 5% a right-tail outlier 10%..60% slower (a preemption, a clock dip).
std::vector<double> timing_samples(std::mt19937_64& random, std::size_t count, double median_seconds, double sigma) {
  std::normal_distribution<double> noise(0.0, sigma);
  std::bernoulli_distribution outlier(0.05);
  std::uniform_real_distribution<double> outlier_size(0.10, 0.60);
  std::vector<double> samples(count);
  for (double& sample : samples) {
    sample = median_seconds * std::exp(noise(random));
    if (outlier(random)) sample *= 1.0 + outlier_size(random);
  }
  return samples;
}

struct Scenario {
  std::size_t count;
  double sigma;
};

Scenario random_scenario(std::mt19937_64& random) {
  return {std::uniform_int_distribution<std::size_t>(10, 50)(random),
          std::uniform_real_distribution<double>(0.01, 0.03)(random)};
}

// Verdicts over `seeds` families of `cells` cells each, the new samples `ratio` times the base.
std::map<CompareVerdict, int> verdict_counts(int seeds, std::size_t cells, double ratio, double threshold,
                                             const std::function<Scenario(std::mt19937_64&)>& scenario,
                                             bool count_families = false) {
  std::map<CompareVerdict, int> counts;
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 random(1000 + static_cast<std::uint64_t>(seed));
    std::vector<TimeSamples> family;
    for (std::size_t c = 0; c < cells; ++c) {
      const Scenario s = scenario(random);
      const double median = 1e-3 * static_cast<double>(c + 1);
      // The minimum effect at the threshold: these cells test the interval's rule.
      family.push_back({timing_samples(random, s.count, median, s.sigma),
                        timing_samples(random, s.count, median * ratio, s.sigma), threshold, threshold, {}});
    }
    CompareVerdict worst = CompareVerdict::pass;
    for (const MetricComparison& verdict : compare_times(family, 0.05)) {
      if (count_families) worst = std::max(worst, verdict.verdict);
      else ++counts[verdict.verdict];
    }
    if (count_families) ++counts[worst];
  }
  return counts;
}

int count_of(const std::map<CompareVerdict, int>& counts, CompareVerdict verdict) {
  const auto found = counts.find(verdict);
  return found == counts.end() ? 0 : found->second;
}

TEST(TimeVerdicts, AAComparisonsWithRealisticNoiseFailAtMostOnePercent) {
  const int seeds = 600;
  const auto single = verdict_counts(seeds, 1, 1.0, 0.05, random_scenario);
  EXPECT_LE(count_of(single, CompareVerdict::regression), seeds / 100);
  EXPECT_LE(count_of(single, CompareVerdict::improvement), seeds / 100);
  EXPECT_EQ(count_of(single, CompareVerdict::inconclusive), 0) << "10..50 samples always give an interval";
  // A whole gate of 10 cells: at most 1% of the gates fail.
  const auto gates = verdict_counts(seeds, 10, 1.0, 0.05, random_scenario, true);
  EXPECT_LE(count_of(gates, CompareVerdict::regression), seeds / 100);
}

TEST(TimeVerdicts, WithoutAThresholdTheFamilyWiseErrorStaysNearAlpha) {
  // Threshold 0 makes every A/A cell a true null at the boundary: the test's size
  // shows. Exact (small samples) and normal (60 vs 70 samples, 4200 pairs) paths;
  // the bound is alpha plus three standard errors of the observed rate.
  const int seeds = 2000;
  const double bound = 0.05 + 3.0 * std::sqrt(0.05 * 0.95 / seeds);
  const auto exact = verdict_counts(seeds, 1, 1.0, 0.0, [](std::mt19937_64&) { return Scenario{12, 0.02}; });
  const auto normal = verdict_counts(seeds, 1, 1.0, 0.0, [](std::mt19937_64& r) {
    return Scenario{std::uniform_int_distribution<std::size_t>(60, 70)(r), 0.02};
  });
  const auto family = verdict_counts(seeds, 10, 1.0, 0.0, [](std::mt19937_64&) { return Scenario{15, 0.02}; }, true);
  for (const auto* counts : {&exact, &normal, &family}) {
    const int regressions = count_of(*counts, CompareVerdict::regression);
    EXPECT_LE(regressions, bound * seeds) << "observed " << regressions << " of " << seeds;
    EXPECT_GE(regressions, 0.01 * seeds) << "the test is not absurdly conservative: observed " << regressions;
  }
}

TEST(TimeVerdicts, ATenPercentSlowdownWithOnePercentNoiseIsCaught) {
  const int seeds = 500;
  const auto counts = verdict_counts(seeds, 1, 1.10, 0.05, [](std::mt19937_64&) { return Scenario{20, 0.01}; });
  EXPECT_GE(count_of(counts, CompareVerdict::regression), 0.95 * seeds);
}

TEST(TimeVerdicts, ATwoPercentSlowdownUnderAFivePercentThresholdAlwaysPasses) {
  const int seeds = 500;
  const auto counts = verdict_counts(seeds, 1, 1.02, 0.05, random_scenario);
  EXPECT_EQ(count_of(counts, CompareVerdict::pass), seeds);
}

TEST(TimeVerdicts, AThirtyPercentImprovementIsAnImprovement) {
  const int seeds = 500;
  const auto counts = verdict_counts(seeds, 1, 0.70, 0.05, random_scenario);
  EXPECT_EQ(count_of(counts, CompareVerdict::improvement), seeds);
}

TEST(TimeVerdicts, IntervalWhollyAboveTheThresholdExactlyWhenHolmRejects) {
  // Families of 8 cells with true ratios around the threshold, sample counts on
  // both sides of the exact limit, half of them on a coarse clock (ties).
  int rejected = 0, kept = 0;
  for (int seed = 0; seed < 150; ++seed) {
    std::mt19937_64 random(5000 + static_cast<std::uint64_t>(seed));
    std::vector<std::vector<double>> base_logs, new_logs;
    std::vector<double> p_values;
    std::vector<ShiftComparison> comparisons;
    const double margin = std::log1p(0.05);
    for (int cell = 0; cell < 8; ++cell) {
      const std::size_t count = std::uniform_int_distribution<std::size_t>(5, 80)(random);
      const double ratio = std::uniform_real_distribution<double>(1.0, 1.12)(random);
      std::vector<double> base = timing_samples(random, count, 1e-3, 0.02);
      std::vector<double> next = timing_samples(random, count + 3, 1e-3 * ratio, 0.02);
      if (cell % 2) {
        for (auto* side : {&base, &next}) {
          for (double& s : *side) s = std::round(s * 2e5) / 2e5;  // a 5 us clock
        }
      }
      std::vector<double> lb, ln;
      for (double s : base) lb.push_back(std::log(s));
      for (double s : next) ln.push_back(std::log(s));
      comparisons.emplace_back(lb, ln, margin);
      p_values.push_back(comparisons.back().p_value());
    }
    const std::vector<HolmDecision> decisions = holm_step_down(p_values, 0.05);
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      const auto interval = comparisons[i].interval(decisions[i].level);
      // A lower bound on the threshold itself is a tie, which the test counts 1/2.
      if (interval && std::abs(interval->lower - margin) <= comparisons[i].tie_tolerance()) continue;
      const bool wholly_above = interval && interval->lower > margin;
      EXPECT_EQ(wholly_above, decisions[i].rejected) << "seed " << seed << " cell " << i;
      ++(decisions[i].rejected ? rejected : kept);
    }
  }
  EXPECT_GT(rejected, 100) << "both outcomes are exercised";
  EXPECT_GT(kept, 100);
}

TEST(TimeVerdicts, ASlowdownOfExactlyTheThresholdOnACoarseClockIsNoRegression) {
  // Ticks of 0.5 us: every NEW sample is exactly 1.05 x its BASE counterpart, so
  // each matching pair sits on the threshold and counts as a tie, not beyond it.
  std::vector<double> base, next;
  for (int repeat = 0; repeat < 10; ++repeat) {
    for (int ticks : {40, 60, 80}) {
      base.push_back(ticks * 0.5e-6);
      next.push_back(ticks * 1.05 * 0.5e-6);
    }
  }
  const std::vector<MetricComparison> verdicts = compare_times({TimeSamples{base, next, 0.05, 0.10, {}}}, 0.05);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(verdicts[0].verdict, CompareVerdict::regression) << verdicts[0].summary;
  const ShiftComparison at_threshold(log_of(base), log_of(next), std::log1p(0.05));
  EXPECT_DOUBLE_EQ(at_threshold.u_statistic(), 450.0) << "300 ties at the margin count 1/2 each";
}

TEST(TimeVerdicts, TooFewOrNonPositiveSamplesAreInconclusive) {
  const std::vector<MetricComparison> verdicts = compare_times(
      {{{1, 1, 1, 1}, {1, 1, 1, 1, 1}, 0.05, 0.10, {}}, {{1, 2, 3, 4, 5}, {1, 2, 0, 4, 5}, 0.05, 0.10, {}}}, 0.05);
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0].verdict, CompareVerdict::inconclusive);
  EXPECT_NE(verdicts[0].summary.find("at least 5"), std::string::npos) << verdicts[0].summary;
  EXPECT_EQ(verdicts[1].verdict, CompareVerdict::inconclusive);
  EXPECT_NE(verdicts[1].summary.find("no ratio"), std::string::npos) << verdicts[1].summary;

  // Five samples each: the smallest exact p-value is 1/252 = 0.004, above the Holm
  // level 0.05/20 of a family of 20, so no interval exists.
  std::vector<TimeSamples> family(20, TimeSamples{{1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}, 0.05, 0.10, {}});
  const std::vector<MetricComparison> crowded = compare_times(family, 0.05);
  EXPECT_EQ(crowded[0].verdict, CompareVerdict::inconclusive);
  EXPECT_NE(crowded[0].summary.find("no interval"), std::string::npos) << crowded[0].summary;
  EXPECT_TRUE(crowded[0].details["ratio_low"].is_null());
}

TEST(TimeVerdicts, ReportsEstimateIntervalAndPValuesInTheDetails) {
  std::mt19937_64 random(3);
  const std::vector<MetricComparison> verdicts =
      compare_times({{timing_samples(random, 20, 1e-3, 0.01), timing_samples(random, 20, 1.2e-3, 0.01), 0.05, 0.10, {}}}, 0.05);
  const MetricComparison& time = verdicts.at(0);
  EXPECT_EQ(time.verdict, CompareVerdict::regression);
  EXPECT_NEAR(time.details["ratio"].get<double>(), 1.2, 0.02);
  EXPECT_LT(time.details["ratio_low"].get<double>(), time.details["ratio"].get<double>());
  EXPECT_GT(time.details["ratio_low"].get<double>(), 1.05);
  EXPECT_GT(time.details["ratio_high"].get<double>(), time.details["ratio"].get<double>());
  EXPECT_EQ(time.details["method"], "exact");
  EXPECT_DOUBLE_EQ(time.details["confidence"].get<double>(), 0.9) << "two one-sided 95% bounds";
  EXPECT_LE(time.details["p_value"].get<double>(), 0.05);
  EXPECT_EQ(time.summary.rfind("time +", 0), 0u) << time.summary;
  EXPECT_NE(time.summary.find("] > +5.0%"), std::string::npos) << time.summary;
}

}  // namespace
}  // namespace attnbench
