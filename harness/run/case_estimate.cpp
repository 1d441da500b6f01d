#include "harness/run/case_estimate.hpp"

#include <algorithm>

#include "harness/format.hpp"

namespace attnbench {
namespace {

const char* const kHowToShorten =
    " Fewer calls: --min-samples and --warmup-iterations; Ctrl-C stops the run and keeps every finished case.";

}  // namespace

int minimum_calls(const MeasureSettings& settings) {
  return 1 + settings.warmup_min_iterations + settings.min_samples;
}

void CaseTimeEstimator::record(const std::string& implementation, double flops_per_call, double seconds_per_call) {
  if (!(flops_per_call > 0) || !(seconds_per_call > 0)) return;
  double& best = best_rate_[implementation];
  best = std::max(best, flops_per_call / seconds_per_call);
}

std::optional<CaseEstimate> CaseTimeEstimator::estimate(const std::string& implementation, bool on_host,
                                                        double flops_per_call, int calls) const {
  CaseEstimate estimate;
  estimate.calls = calls;
  estimate.flops_per_call = flops_per_call;
  if (const auto found = best_rate_.find(implementation); found != best_rate_.end()) {
    estimate.flops_per_second = found->second;
    estimate.rate_source = "its best rate on the earlier cases";
  } else if (on_host && host_rate_ && *host_rate_ > 0) {
    estimate.flops_per_second = *host_rate_;
    estimate.rate_source = "the host's calibrated fp32 GEMM rate, faster than attention runs";
  } else {
    return std::nullopt;
  }
  estimate.seconds = flops_per_call * calls / estimate.flops_per_second;
  return estimate;
}

std::string long_case_note(const std::string& case_label, const std::string& implementation,
                           const CaseEstimate& estimate) {
  return "attnbench: note: " + case_label + " on " + implementation + " will take at least " +
         format_duration(estimate.seconds) + ": " + std::to_string(estimate.calls) + " calls of " +
         format_scientific(estimate.flops_per_call) + " FLOP at " + format_flops_rate(estimate.flops_per_second) +
         ", " + estimate.rate_source + "." + kHowToShorten;
}

std::string long_call_note(const std::string& case_label, const std::string& implementation, double call_seconds,
                           int calls_left) {
  return "attnbench: note: " + case_label + " on " + implementation + ": one call took " +
         format_duration(call_seconds) + "; " + std::to_string(calls_left) + " more calls at least: about " +
         format_duration(call_seconds * calls_left) + " more." + kHowToShorten;
}

}  // namespace attnbench
