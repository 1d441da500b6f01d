// Robust summaries of timing samples (docs/design.md §4): order statistics, and a
// distribution-free confidence interval for the median.
#pragma once

#include <cstddef>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

struct SampleStatistics {
  std::size_t count = 0;
  double min = 0, p10 = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0, p99 = 0, max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
  // Confidence interval of the median from order statistics (binomial, no
  // assumption on the distribution). With too few samples for any interval to
  // reach the confidence, median_ci_defined is false and the bounds are [min, max].
  double median_ci_low = 0;
  double median_ci_high = 0;
  double confidence = 0.95;
  bool median_ci_defined = false;
  // (high - low) / median; infinity when the median is 0 or the CI is not defined.
  double median_ci_relative_width() const;
};

// Linear interpolation between order statistics (the "type 7" estimator of R
// and NumPy's default), q in [0, 1]. `sorted` must be sorted and non-empty.
double percentile_sorted(const std::vector<double>& sorted, double q);

// 1-based ranks (low, high) of the order statistics that bound the median with
// at least `confidence` coverage for n samples; {0, 0} when n is too small for
// any interval to reach that coverage.
struct MedianRanks {
  std::size_t low = 0;
  std::size_t high = 0;
};
MedianRanks median_confidence_ranks(std::size_t n, double confidence);

SampleStatistics summarize(std::vector<double> samples, double confidence = 0.95);

// The median of `values` (percentile_sorted at 0.5); `values` must be non-empty.
double median_of(std::vector<double> values);

// timing.statistics of a results record (docs/results.md).
nlohmann::ordered_json statistics_json(const SampleStatistics& s);

// The median's confidence interval of a sample that grows one value at a time,
// for the stopping rule of the timing loop, at a cost that stays flat: the
// values are kept in a balanced tree, the order statistics the rule reads (the
// interval's bounds and the two around the median) are followed by iterators
// that move at most a step or two per value, and the interval's ranks are
// carried over from the previous count (Binomial(n+1) tails follow from
// Binomial(n) ones in O(1)). A value costs O(log n), instead of a sort and a
// loop over n log-gamma terms. Its ranks and width are those of
// median_confidence_ranks and summarize at every count.
class RunningMedianInterval {
 public:
  explicit RunningMedianInterval(double confidence = 0.95);
  void add(double value);
  std::size_t count() const { return values_.size(); }
  MedianRanks ranks() const;
  // SampleStatistics::median_ci_relative_width() of the values so far.
  double relative_width() const;

 private:
  // One order statistic of values_: where it is, and its 0-based rank.
  struct OrderStatistic {
    std::multiset<double>::const_iterator at;
    std::size_t rank = 0;
  };
  double alpha_;
  std::multiset<double> values_;
  OrderStatistic interval_low_, interval_high_, median_low_, median_high_;
  std::size_t low_rank_ = 0;  // the largest k whose interval [x_(k), x_(n+1-k)] reaches the confidence; 0 for none
  double tail_ = 0;           // P(X <= low_rank_ - 1) for X ~ Binomial(count, 1/2); 0 when low_rank_ is 0
};

}  // namespace attnbench
