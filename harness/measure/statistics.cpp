#include "harness/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace attnbench {

double SampleStatistics::median_ci_relative_width() const {
  if (!median_ci_defined || !(p50 > 0.0)) return std::numeric_limits<double>::infinity();
  return (median_ci_high - median_ci_low) / p50;
}

namespace {

// The value `fraction` of the way from `lower` to `upper`, as every percentile here computes it.
double interpolated(double lower, double upper, double fraction) { return lower + fraction * (upper - lower); }

// How far the median of n values lies past the lower of its two order statistics.
double median_fraction(std::size_t n) {
  const double position = 0.5 * static_cast<double>(n - 1);
  return position - std::floor(position);
}

}  // namespace

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no samples");
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return interpolated(sorted[lower], sorted[upper], fraction);
}

namespace {

// P(X = j) for X ~ Binomial(n, 1/2).
double binomial_half_mass(std::size_t n, std::size_t j) {
  const double log_mass = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(j) + 1) -
                          std::lgamma(static_cast<double>(n - j) + 1) - static_cast<double>(n) * std::log(2.0);
  return std::exp(log_mass);
}

}  // namespace

MedianRanks median_confidence_ranks(std::size_t n, double confidence) {
  // The number of samples below the median is Binomial(n, 1/2). The interval
  // [x_(k), x_(n+1-k)] covers the median with probability 1 - 2 P(X <= k-1);
  // take the largest k whose coverage still reaches `confidence`.
  if (n == 0) return {};
  const double alpha = 1.0 - confidence;
  double tail = 0.0;  // P(X <= k - 1)
  std::size_t best = 0;
  for (std::size_t k = 1; k <= (n + 1) / 2; ++k) {
    tail += binomial_half_mass(n, k - 1);
    if (2.0 * tail > alpha) break;
    best = k;
  }
  if (best == 0) return {};
  return MedianRanks{best, n + 1 - best};
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, 0.5);
}

SampleStatistics summarize(std::vector<double> samples, double confidence) {
  SampleStatistics stats;
  stats.confidence = confidence;
  stats.count = samples.size();
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  stats.min = samples.front();
  stats.max = samples.back();
  stats.p10 = percentile_sorted(samples, 0.10);
  stats.p25 = percentile_sorted(samples, 0.25);
  stats.p50 = percentile_sorted(samples, 0.50);
  stats.p75 = percentile_sorted(samples, 0.75);
  stats.p90 = percentile_sorted(samples, 0.90);
  stats.p99 = percentile_sorted(samples, 0.99);
  stats.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double squares = 0.0;
    for (double sample : samples) squares += (sample - stats.mean) * (sample - stats.mean);
    stats.stddev = std::sqrt(squares / static_cast<double>(samples.size() - 1));
  }
  const MedianRanks ranks = median_confidence_ranks(samples.size(), confidence);
  if (ranks.low == 0) {
    stats.median_ci_low = stats.min;
    stats.median_ci_high = stats.max;
  } else {
    stats.median_ci_defined = true;
    stats.median_ci_low = samples[ranks.low - 1];
    stats.median_ci_high = samples[ranks.high - 1];
  }
  return stats;
}

RunningMedianInterval::RunningMedianInterval(double confidence) : alpha_(1.0 - confidence) {}

void RunningMedianInterval::add(double value) {
  const auto inserted = values_.insert(value);  // after any equal values
  const std::size_t n = values_.size();
  OrderStatistic* const followed[] = {&interval_low_, &interval_high_, &median_low_, &median_high_};
  for (OrderStatistic* statistic : followed) {
    if (n == 1) {
      *statistic = {inserted, 0};
    } else if (value < *statistic->at) {
      ++statistic->rank;  // the new value went before it
    }
  }
  // From Binomial(n - 1) to Binomial(n): P(X_n <= j) = P(X_{n-1} <= j) - P(X_{n-1} = j) / 2,
  // which never grows, so the previous rank still reaches the confidence.
  if (low_rank_ > 0) tail_ -= 0.5 * binomial_half_mass(n - 1, low_rank_ - 1);
  while (low_rank_ + 1 <= (n + 1) / 2) {
    const double next_tail = tail_ + binomial_half_mass(n, low_rank_);
    if (2.0 * next_tail > alpha_) break;
    tail_ = next_tail;
    ++low_rank_;
  }
  // The ranks percentile_sorted(·, 0.5) and the interval read, 0-based.
  const std::size_t median_low = (n - 1) / 2;
  const std::size_t targets[] = {low_rank_ > 0 ? low_rank_ - 1 : 0, low_rank_ > 0 ? n - low_rank_ : n - 1,
                                 median_low, std::min(median_low + 1, n - 1)};
  for (std::size_t i = 0; i < 4; ++i) {
    OrderStatistic& statistic = *followed[i];
    for (; statistic.rank < targets[i]; ++statistic.rank) ++statistic.at;
    for (; statistic.rank > targets[i]; --statistic.rank) --statistic.at;
  }
}

MedianRanks RunningMedianInterval::ranks() const {
  if (low_rank_ == 0) return {};
  return MedianRanks{low_rank_, values_.size() + 1 - low_rank_};
}

double RunningMedianInterval::relative_width() const {
  if (values_.empty()) return std::numeric_limits<double>::infinity();
  const double median = interpolated(*median_low_.at, *median_high_.at, median_fraction(values_.size()));
  if (low_rank_ == 0 || !(median > 0.0)) return std::numeric_limits<double>::infinity();
  return (*interval_high_.at - *interval_low_.at) / median;
}

nlohmann::ordered_json statistics_json(const SampleStatistics& s) {
  return nlohmann::ordered_json{{"count", s.count},   {"min", s.min},   {"p10", s.p10},   {"p25", s.p25},
              {"p50", s.p50},       {"p75", s.p75},   {"p90", s.p90},   {"p99", s.p99},
              {"max", s.max},       {"mean", s.mean}, {"stddev", s.stddev},
              {"median_ci_low", s.median_ci_low},     {"median_ci_high", s.median_ci_high},
              {"median_ci_confidence", s.confidence}, {"median_ci_defined", s.median_ci_defined}};
}

}  // namespace attnbench
