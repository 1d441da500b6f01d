// How long one (case, implementation) will take at least, so that a run says
// so before a case of minutes or hours instead of starting it without a word.
// The protocol makes at least a checked call, the minimum warm-up calls and the
// minimum samples, whatever the timings; each costs the case's FLOPs, at the
// implementation's best rate on the earlier cases of this run or, before its
// first, at the host's calibrated fp32 GEMM rate (host implementations only;
// attention runs slower than a plain product, so the estimate stays a lower
// bound). Once the checked call has run, its own time gives the rest.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "harness/measure/protocol.hpp"

namespace attnbench {

// A case taking longer than this is announced.
inline constexpr double kLongCaseSeconds = 120;

// The calls the protocol makes at least with `settings`: the checked call, the
// minimum warm-up calls and the minimum samples.
int minimum_calls(const MeasureSettings& settings);

struct CaseEstimate {
  double seconds = 0;  // at least this long
  int calls = 0;
  double flops_per_call = 0;
  double flops_per_second = 0;
  std::string rate_source;  // "its best rate on the earlier cases", "the host's calibrated fp32 GEMM rate, …"
};

class CaseTimeEstimator {
 public:
  explicit CaseTimeEstimator(std::optional<double> host_gemm_flops_per_second)
      : host_rate_(host_gemm_flops_per_second) {}

  // A measured record of `implementation`: its FLOPs per call and median time.
  void record(const std::string& implementation, double flops_per_call, double seconds_per_call);

  // The estimate of `calls` calls of `flops_per_call`; nullopt when no rate is
  // known (a device other than the host, before its first case).
  std::optional<CaseEstimate> estimate(const std::string& implementation, bool on_host, double flops_per_call,
                                       int calls) const;

 private:
  std::optional<double> host_rate_;
  std::map<std::string, double> best_rate_;
};

// The note before a long case: "attnbench: note: bench#0 on cpu.flash will take
// at least 26 min: 13 calls of 9.62e+11 FLOP at 8.424 GFLOP/s, the host's
// calibrated fp32 GEMM rate. ..."
std::string long_case_note(const std::string& case_label, const std::string& implementation,
                           const CaseEstimate& estimate);

// The note after a long checked call: "attnbench: note: bench#0 on cpu.flash:
// one call took 2 min; 12 more calls at least: about 24 min more. ..."
std::string long_call_note(const std::string& case_label, const std::string& implementation, double call_seconds,
                           int calls_left);

}  // namespace attnbench
