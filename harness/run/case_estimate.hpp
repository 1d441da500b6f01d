// How long one (case, implementation) will take, so that a run says so before
// a case of minutes or hours instead of starting it without a word, and its
// progress line shows an ETA even when the run is that one case. The protocol
// makes at least a checked call, the minimum warm-up calls and the minimum
// samples, whatever the timings; each costs the case's FLOPs at the
// implementation's own rate on a case of the same kind (the implementation
// and the direction): the largest such case the run has measured so far, or,
// before the first long one, a small case of that kind the runner measures
// first (small_case_of). Only where neither exists (a case the host's GEMM
// rate says is short), the host's calibrated fp32 GEMM rate gives a lower
// bound: attention runs slower than a plain product. Once the checked call has
// run, its own time gives the rest.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "harness/common/problem.hpp"
#include "harness/measure/protocol.hpp"

namespace attnbench {

// A case taking longer than this is announced.
inline constexpr double kLongCaseSeconds = 120;

// A small case of the same kind is measured first when the case at the host's
// GEMM rate would take at least this long, and no case of its kind of at
// least kSmallCaseFlops has run: attention runs up to 30 times slower than
// the GEMM, so that such a case may well be long.
inline constexpr double kSmallCaseAboveSeconds = 1;
inline constexpr double kSmallCaseFlops = 2e9;  // a fraction of a second at the CPU implementations' rates

// The calls the protocol makes at least with `settings`: the checked call, the
// minimum warm-up calls and the minimum samples.
int minimum_calls(const MeasureSettings& settings);

// What rates are kept per: the implementation and the direction
// ("cpu.flash fwd+bwd"), whose rates differ most.
std::string rate_kind(const std::string& implementation, const Problem& problem);

// The problem at batch 1 with both lengths scaled down alike, so that it has
// at most kSmallCaseFlops, and everything else (heads, which the
// implementations share out between threads, direction, dtype, head_dim, mask,
// padding, dropout, layout, blocks) of the problem; nullopt where none can be made (explicit per-element
// lengths fix the sizes) or the problem is small already.
std::optional<Problem> small_case_of(const Problem& problem);

struct CaseEstimate {
  double seconds = 0;
  bool lower_bound = false;  // at the host's GEMM rate: at least this long
  int calls = 0;
  double flops_per_call = 0;
  double flops_per_second = 0;
  std::string rate_source;  // "its rate on a small case of the same kind (b1 h1 q512 k512 d64 fp16 fwd)", …
};

class CaseTimeEstimator {
 public:
  explicit CaseTimeEstimator(std::optional<double> host_gemm_flops_per_second)
      : host_rate_(host_gemm_flops_per_second) {}

  // A measured call of `kind` (rate_kind): its FLOPs and time, and what it was
  // ("an earlier case", "a small case of the same kind (…)"). The largest
  // case of a kind is kept (the fastest of equal ones): it is the likest to a
  // long one.
  void record(const std::string& kind, double flops_per_call, double seconds_per_call,
              const std::string& source = "an earlier case of the same kind");

  // Whether `calls` calls of `flops_per_call` of `kind` need a small case
  // measured first: no case of the kind of kSmallCaseFlops or more has been
  // recorded, and at the host's GEMM rate they take kSmallCaseAboveSeconds or
  // more (never without a calibration).
  bool needs_small_case(const std::string& kind, double flops_per_call, int calls) const;

  // The estimate of `calls` calls of `flops_per_call`; nullopt when no rate is
  // known (a device other than the host, before its first case).
  std::optional<CaseEstimate> estimate(const std::string& kind, bool on_host, double flops_per_call, int calls) const;

 private:
  struct Rate {
    double flops_per_call = 0;
    double flops_per_second = 0;
    std::string source;
  };
  std::optional<double> host_rate_;
  std::map<std::string, Rate> rates_;
};

// The note before a long case: "attnbench: note: bench#0 on cpu.flash will take
// about 26 min: 13 calls of 9.62e+11 FLOP at 8.424 GFLOP/s, its rate on a small
// case of the same kind (…). ..." ("at least" at the host's GEMM rate).
std::string long_case_note(const std::string& case_label, const std::string& implementation,
                           const CaseEstimate& estimate);

// The note after a long checked call: "attnbench: note: bench#0 on cpu.flash:
// one call took 2 min; 12 more calls at least: about 24 min more. ..."
std::string long_call_note(const std::string& case_label, const std::string& implementation, double call_seconds,
                           int calls_left);

}  // namespace attnbench
