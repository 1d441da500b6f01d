// The time statistics of the regression gate: pairwise-difference selection, the
// Mann–Whitney null distribution, Hodges–Lehmann and Moses bounds, Holm (see
// harness/compare/statistics.hpp and docs/compare.md).
#include "harness/compare/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace attnbench {
namespace {

constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;

// Maps doubles to integers in the same order (-0.0 just below +0.0), so that
// bisecting the integers bisects the doubles and ends on one exactly.
std::uint64_t ordered_key(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits & kSignBit) ? ~bits : (bits | kSignBit);
}

double from_ordered_key(std::uint64_t key) {
  const std::uint64_t bits = (key & kSignBit) ? (key & ~kSignBit) : ~key;
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Σ (t³ - t) over the groups of equal values of a sorted sample.
double tie_term(const std::vector<double>& sorted) {
  double term = 0;
  for (std::size_t start = 0; start < sorted.size();) {
    std::size_t end = start + 1;
    while (end < sorted.size() && sorted[end] == sorted[start]) ++end;
    const auto t = static_cast<double>(end - start);
    term += t * t * t - t;
    start = end;
  }
  return term;
}

// 128-bit integers hold every count of the exact null distribution within
// kExactPairsLimit (at most C(100, 50) ≈ 1.0e29 arrangements, at 50 x 50).
__extension__ using ExactCount = __int128;

// P(U >= u) for u = 0 .. m·n + 1 with no ties. The number of arrangements with
// U = u is the coefficient of q^u in the Gaussian binomial coefficient
// [m + n choose m]_q = Π_{i=1..m} (1 - q^(n+i)) / (1 - q^i); each of the m steps
// multiplies and divides exactly in integers, in O(m·n) operations.
std::vector<double> exact_upper_tail(std::size_t m, std::size_t n) {
  std::vector<ExactCount> counts(m * n + n + m + 1, 0);
  counts[0] = 1;
  std::size_t degree = 0;
  for (std::size_t i = 1; i <= m; ++i) {
    for (std::size_t u = degree + n + i; u >= n + i; --u) counts[u] -= counts[u - n - i];  // x (1 - q^(n+i))
    for (std::size_t u = i; u <= degree + n + i; ++u) counts[u] += counts[u - i];          // / (1 - q^i)
    degree += n;
  }
  std::vector<double> upper_tail(m * n + 2, 0.0);
  ExactCount total = 0, tail = 0;
  for (std::size_t u = 0; u <= m * n; ++u) total += counts[u];
  for (std::size_t u = m * n + 1; u-- > 0;) {
    tail += counts[u];
    upper_tail[u] = static_cast<double>(tail) / static_cast<double>(total);
  }
  return upper_tail;
}

}  // namespace

PairwiseDifferences::PairwiseDifferences(std::vector<double> base, std::vector<double> next)
    : base_(std::move(base)), next_(std::move(next)) {
  if (base_.empty() || next_.empty()) throw std::invalid_argument("pairwise differences of an empty sample");
  for (const auto* sample : {&base_, &next_}) {
    for (double value : *sample) {
      if (!std::isfinite(value)) throw std::invalid_argument("pairwise differences of a non-finite value");
    }
  }
  std::sort(base_.begin(), base_.end());
  std::sort(next_.begin(), next_.end());
}

// For a fixed next_j, next_j - base_i is non-increasing in base_i (rounding is
// monotone), so the base values giving d <= value form a suffix of the sorted
// base sample, and that suffix only shrinks as next_j grows.
std::size_t PairwiseDifferences::count_at_most(double value) const {
  std::size_t first = 0, total = 0;
  for (double next : next_) {
    while (first < base_.size() && next - base_[first] > value) ++first;
    total += base_.size() - first;
  }
  return total;
}

std::size_t PairwiseDifferences::count_below(double value) const {
  std::size_t first = 0, total = 0;
  for (double next : next_) {
    while (first < base_.size() && next - base_[first] >= value) ++first;
    total += base_.size() - first;
  }
  return total;
}

double PairwiseDifferences::order_statistic(std::size_t k) const {
  if (k < 1 || k > count()) throw std::out_of_range("order statistic out of range");
  // The smallest value with at least k differences at or below it is one of them.
  std::uint64_t low = ordered_key(next_.front() - base_.back());
  std::uint64_t high = ordered_key(next_.back() - base_.front());
  while (low < high) {
    const std::uint64_t middle = low + (high - low) / 2;
    if (count_at_most(from_ordered_key(middle)) >= k) high = middle;
    else low = middle + 1;
  }
  return from_ordered_key(low) + 0.0;  // -0.0 becomes 0.0
}

double PairwiseDifferences::median() const {
  const std::size_t n = count();
  if (n % 2 == 1) return order_statistic((n + 1) / 2);
  return 0.5 * (order_statistic(n / 2) + order_statistic(n / 2 + 1));
}

MannWhitneyNull::MannWhitneyNull(const std::vector<double>& sorted_base, const std::vector<double>& sorted_next) {
  const std::size_t m = sorted_base.size(), n = sorted_next.size();
  pairs_ = m * n;
  const double ties = tie_term(sorted_base) + tie_term(sorted_next);
  if (ties == 0 && pairs_ <= kExactPairsLimit) {
    upper_tail_ = exact_upper_tail(std::min(m, n), std::max(m, n));  // the same distribution, less work
    return;
  }
  const auto total = static_cast<double>(m + n);
  mean_ = static_cast<double>(pairs_) / 2.0;
  sd_ = std::sqrt(static_cast<double>(pairs_) / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0))));
}

double MannWhitneyNull::upper_tail(double u) const {
  if (exact()) {
    if (u <= 0) return 1.0;
    const double rounded = std::ceil(u);  // half counts from ties round against a regression
    if (rounded > static_cast<double>(pairs_)) return 0.0;
    return std::min(1.0, upper_tail_[static_cast<std::size_t>(rounded)]);
  }
  const double z = (u - 0.5 - mean_) / sd_;
  return std::clamp(0.5 * std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);
}

std::optional<std::size_t> MannWhitneyNull::critical_count(double alpha) const {
  if (upper_tail(static_cast<double>(pairs_)) > alpha) return std::nullopt;
  std::size_t low = 0, high = pairs_;  // upper_tail(high) <= alpha
  while (low < high) {
    const std::size_t middle = low + (high - low) / 2;
    if (upper_tail(static_cast<double>(middle)) <= alpha) high = middle;
    else low = middle + 1;
  }
  return low;
}

ShiftComparison::ShiftComparison(std::vector<double> log_base, std::vector<double> log_next, double margin)
    : differences_(std::move(log_base), std::move(log_next)),
      null_(differences_.base(), differences_.next()) {
  estimate_ = differences_.median();
  // A difference within rounding of the margin is a tie (it counts 1/2): a
  // slowdown of exactly the threshold on a coarse clock (ratios like 42/40 ==
  // 1.05) must not count as beyond it. The rounding of log(new) - log(base)
  // and of the margin is a few ulps of the largest log time.
  double largest = std::abs(margin);
  for (const std::vector<double>* values : {&differences_.base(), &differences_.next()}) {
    largest = std::max({largest, std::abs(values->front()), std::abs(values->back())});
  }
  tie_tolerance_ = 16.0 * std::numeric_limits<double>::epsilon() * std::max(1.0, largest);
  const std::size_t at_most = differences_.count_at_most(margin + tie_tolerance_);
  const std::size_t below = differences_.count_below(margin - tie_tolerance_);
  u_statistic_ = static_cast<double>(differences_.count() - at_most) + 0.5 * static_cast<double>(at_most - below);
  p_value_ = null_.upper_tail(u_statistic_);
}

// Moses: the test of "shift <= s" rejects exactly when more than c - 1
// differences exceed s, i.e. when s lies below the c-th largest difference; so
// that difference is the lower bound, and the c-th smallest the upper one.
std::optional<ShiftInterval> ShiftComparison::interval(double alpha) const {
  const std::optional<std::size_t> critical = null_.critical_count(alpha);
  if (!critical) return std::nullopt;
  return ShiftInterval{differences_.order_statistic(differences_.count() + 1 - *critical),
                       differences_.order_statistic(*critical)};
}

std::size_t samples_for_an_interval(double level) {
  // C(2n, n) grows by (2n + 1)(2n + 2) / (n + 1)^2 from n to n + 1.
  double central = 2;  // C(2, 1)
  std::size_t n = 1;
  while (1.0 / central > level) {
    central *= static_cast<double>((2 * n + 1) * (2 * n + 2)) / static_cast<double>((n + 1) * (n + 1));
    ++n;
  }
  return n;
}

std::vector<HolmDecision> holm_step_down(const std::vector<double>& p_values, double alpha) {
  const std::size_t family = p_values.size();
  std::vector<std::size_t> order(family);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });

  std::vector<HolmDecision> decisions(family);
  double adjusted = 0;
  bool rejecting = true;
  double stop_level = 0;
  for (std::size_t rank = 1; rank <= family; ++rank) {
    const double p = p_values[order[rank - 1]];
    const auto remaining = static_cast<double>(family - rank + 1);
    const double level = alpha / remaining;
    HolmDecision& decision = decisions[order[rank - 1]];
    adjusted = std::max(adjusted, std::min(1.0, remaining * p));
    decision.adjusted_p = adjusted;
    if (rejecting && p <= level) {
      decision.rejected = true;
      decision.level = level;
    } else {
      if (rejecting) stop_level = level;
      rejecting = false;
      decision.level = stop_level;
    }
  }
  return decisions;
}

}  // namespace attnbench
