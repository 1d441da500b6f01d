// Robust summaries of timing samples (docs/design.md §4): order statistics, and a
// distribution-free confidence interval for the median.
#pragma once

#include <cstddef>
#include <vector>

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

}  // namespace attnbench
