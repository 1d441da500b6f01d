// The statistics of the time verdict of `attnbench compare` (docs/compare.md; the
// method and its reasoning are in docs/compare.md).
//
// On log time, NEW is modelled as BASE shifted by Δ = log(NEW/BASE). Its
// estimate is the Hodges–Lehmann shift (the median of every pairwise
// difference log(new_j) - log(base_i)); its confidence bounds are Moses'
// distribution-free ones (order statistics of those differences picked by the
// Mann–Whitney null distribution); the p-value of "ratio > 1 + threshold" is
// the one-sided Mann–Whitney test of log(new) - log(1 + threshold) against
// log(base). Bounds and p-values use the same null distribution, so "the lower
// bound lies above the threshold" and "the test rejects" are one statement.
// Pairwise differences are never stored: they are counted and selected on the
// two sorted samples in O(m + n) per step, so any sample count is handled
// exactly in O(m + n) memory. Holm's step-down procedure controls the
// family-wise error over every compared cell.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace attnbench {

// Every difference new_j - base_i of two samples, without storing them.
class PairwiseDifferences {
 public:
  PairwiseDifferences(std::vector<double> base, std::vector<double> next);  // both non-empty and finite

  std::size_t count() const { return base_.size() * next_.size(); }
  std::size_t count_at_most(double value) const;  // #{d <= value}
  std::size_t count_below(double value) const;    // #{d < value}
  // The k-th smallest difference, 1 <= k <= count(); exact, by bisection on the
  // ordered bit patterns of doubles with a counting pass per step.
  double order_statistic(std::size_t k) const;
  double median() const;  // the Hodges–Lehmann estimate of the shift

  const std::vector<double>& base() const { return base_; }  // sorted
  const std::vector<double>& next() const { return next_; }  // sorted

 private:
  std::vector<double> base_, next_;
};

// The null distribution of U = #{(i, j): new_j > base_i} (ties count 1/2) for
// sample sizes m and n: exact when neither sample has ties and m·n is at most
// kExactPairsLimit, otherwise the normal approximation with the tie-corrected
// variance and a continuity correction.
class MannWhitneyNull {
 public:
  static constexpr std::size_t kExactPairsLimit = 2500;  // e.g. 50 x 50 samples

  MannWhitneyNull(const std::vector<double>& sorted_base, const std::vector<double>& sorted_next);
  bool exact() const { return !upper_tail_.empty(); }
  // P(U >= u) under the null; non-increasing in u.
  double upper_tail(double u) const;
  // The smallest integer u with upper_tail(u) <= alpha; nullopt when even U = m·n
  // is not that unlikely.
  std::optional<std::size_t> critical_count(double alpha) const;

 private:
  std::size_t pairs_ = 0;
  std::vector<double> upper_tail_;  // exact: P(U >= u) for u = 0 .. m·n
  double mean_ = 0, sd_ = 0;         // normal approximation
};

// Confidence bounds on the shift: each one-sided at level 1 - alpha, so
// together a two-sided 1 - 2·alpha interval.
struct ShiftInterval {
  double lower = 0;
  double upper = 0;
};

// One cell's comparison of log times: estimate, p-value of "shift > margin"
// and bounds at any level.
class ShiftComparison {
 public:
  ShiftComparison(std::vector<double> log_base, std::vector<double> log_next, double margin);

  double estimate() const { return estimate_; }
  double u_statistic() const { return u_statistic_; }  // at the margin
  double p_value() const { return p_value_; }          // one-sided, H1: shift > margin
  bool exact() const { return null_.exact(); }
  // Differences within this distance of the margin are ties (they count 1/2).
  double tie_tolerance() const { return tie_tolerance_; }
  // nullopt when no interval reaches the level with these sample sizes.
  std::optional<ShiftInterval> interval(double alpha) const;

 private:
  PairwiseDifferences differences_;
  MannWhitneyNull null_;
  double estimate_ = 0;
  double u_statistic_ = 0;
  double p_value_ = 1;
  double tie_tolerance_ = 0;
};

// The fewest samples per side (m = n, no ties) for which the exact null
// distribution gives a one-sided bound at `level`: the smallest n with
// 1 / C(2n, n) <= level (6 at 0.05 / 24).
std::size_t samples_for_an_interval(double level);

// Holm's step-down procedure at family-wise level alpha. Hypothesis of rank r
// (1-based, by ascending p-value, ties in input order) is rejected when every
// p-value of rank j <= r satisfies p <= alpha / (K - j + 1). `level` is the
// per-test level that matches the decision: alpha / (K - r + 1) for a rejected
// one, and for the others that of the first rank not rejected, so a p-value
// (or a confidence bound) tested at `level` gives exactly Holm's verdict.
struct HolmDecision {
  double adjusted_p = 1;  // max over j <= r of min(1, (K - j + 1) p_(j))
  double level = 0;
  bool rejected = false;
};
std::vector<HolmDecision> holm_step_down(const std::vector<double>& p_values, double alpha);

}  // namespace attnbench
