#include "harness/run/case_estimate.hpp"

#include <algorithm>
#include <cmath>

#include "harness/format.hpp"

namespace attnbench {
namespace {

const char* const kHowToShorten =
    " Fewer calls: --min-samples and --warmup-iterations; Ctrl-C stops the run and keeps every finished case.";

// The shortest length a small case is scaled to: below it, per-call overheads
// would set its rate.
constexpr std::int64_t kSmallCaseMinLength = 64;

}  // namespace

int minimum_calls(const MeasureSettings& settings) {
  return 1 + settings.warmup_min_iterations + settings.min_samples;
}

std::string rate_kind(const std::string& implementation, const Problem& problem) {
  return implementation + " " + to_string(problem.direction);
}

std::optional<Problem> small_case_of(const Problem& problem) {
  if (!problem.lengths_q.empty() || !problem.lengths_k.empty()) return std::nullopt;
  Problem small = problem;
  small.batch = 1;  // the heads stay: the implementations share them out between threads
  const double flops = flop_count(small).total;
  if (!(flops > kSmallCaseFlops)) return std::nullopt;  // already small: the case itself is no long one
  // FLOPs grow as Nq x Nk, give or take a mask's diagonal: scaled by the square
  // root of the ratio, then a little more until within the budget.
  double factor = std::sqrt(kSmallCaseFlops / flops);
  const auto scaled = [&](std::int64_t length) {
    return std::min(length, std::max(kSmallCaseMinLength, static_cast<std::int64_t>(std::floor(length * factor))));
  };
  do {
    small.seqlen_q = scaled(problem.seqlen_q);
    small.seqlen_k = scaled(problem.seqlen_k);
    factor *= 0.95;
  } while (flop_count(small).total > kSmallCaseFlops &&
           std::max(small.seqlen_q, small.seqlen_k) > kSmallCaseMinLength);
  if (!check_problem(small).empty()) return std::nullopt;
  return small;
}

void CaseTimeEstimator::record(const std::string& kind, double flops_per_call, double seconds_per_call,
                               const std::string& source) {
  if (!(flops_per_call > 0) || !(seconds_per_call > 0)) return;
  const double rate = flops_per_call / seconds_per_call;
  const auto found = rates_.find(kind);
  if (found != rates_.end() && (flops_per_call < found->second.flops_per_call ||
                                (flops_per_call == found->second.flops_per_call && rate <= found->second.flops_per_second))) {
    return;
  }
  rates_[kind] = Rate{flops_per_call, rate, source};
}

bool CaseTimeEstimator::needs_small_case(const std::string& kind, double flops_per_call, int calls) const {
  const auto found = rates_.find(kind);
  const bool representative = found != rates_.end() && found->second.flops_per_call >= kSmallCaseFlops;
  return !representative && host_rate_ && *host_rate_ > 0 &&
         flops_per_call * calls / *host_rate_ >= kSmallCaseAboveSeconds;
}

std::optional<CaseEstimate> CaseTimeEstimator::estimate(const std::string& kind, bool on_host, double flops_per_call,
                                                        int calls) const {
  CaseEstimate estimate;
  estimate.calls = calls;
  estimate.flops_per_call = flops_per_call;
  if (const auto found = rates_.find(kind); found != rates_.end()) {
    estimate.flops_per_second = found->second.flops_per_second;
    estimate.rate_source = "its rate on " + found->second.source;
  } else if (on_host && host_rate_ && *host_rate_ > 0) {
    estimate.flops_per_second = *host_rate_;
    estimate.lower_bound = true;
    estimate.rate_source = "the host's calibrated fp32 GEMM rate, faster than attention runs";
  } else {
    return std::nullopt;
  }
  estimate.seconds = flops_per_call * calls / estimate.flops_per_second;
  return estimate;
}

std::string long_case_note(const std::string& case_label, const std::string& implementation,
                           const CaseEstimate& estimate) {
  return "attnbench: note: " + case_label + " on " + implementation + " will take " +
         (estimate.lower_bound ? "at least " : "about ") + format_duration(estimate.seconds) + ": " +
         std::to_string(estimate.calls) + " calls of " + format_scientific(estimate.flops_per_call) + " FLOP at " +
         format_flops_rate(estimate.flops_per_second) + ", " + estimate.rate_source + "." + kHowToShorten;
}

std::string long_call_note(const std::string& case_label, const std::string& implementation, double call_seconds,
                           int calls_left) {
  return "attnbench: note: " + case_label + " on " + implementation + ": one call took " +
         format_duration(call_seconds) + "; " + std::to_string(calls_left) + " more calls at least: about " +
         format_duration(call_seconds * calls_left) + " more." + kHowToShorten;
}

}  // namespace attnbench
