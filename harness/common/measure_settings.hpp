// The settings a scenario gives the measure stage: the timing protocol's
// (harness/measure/protocol.hpp) and the accuracy check's
// (harness/measure/accuracy.hpp). They sit on the floor because scenario/
// reads them from scenario files, measure/ obeys them and run/ records them,
// and scenario/ may not include measure/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/dtype.hpp"

namespace attnbench {

// What one sample's time is (docs/design.md §4, timing methods): `events`, two
// CUDA events around one call (the host's clock on the host); `cupti`, the
// device time of the call's own kernels from CUPTI's activity records, their
// intervals merged; `graph`, several calls captured once into a CUDA graph,
// launched as one, the time per call derived.
enum class TimingMethod { events, cupti, graph };

inline std::string_view to_string(TimingMethod method) {
  switch (method) {
    case TimingMethod::events: return "events";
    case TimingMethod::cupti: return "cupti";
    case TimingMethod::graph: return "graph";
  }
  return "events";
}

inline std::optional<TimingMethod> parse_timing_method(std::string_view name) {
  for (TimingMethod method : {TimingMethod::events, TimingMethod::cupti, TimingMethod::graph}) {
    if (name == to_string(method)) return method;
  }
  return std::nullopt;
}

inline std::vector<std::string> timing_method_names(const std::vector<TimingMethod>& methods) {
  std::vector<std::string> names;
  for (TimingMethod method : methods) names.emplace_back(to_string(method));
  return names;
}

inline constexpr const char* kTimingMethodNames = "events, cupti, graph";

struct MeasureSettings {
  int warmup_min_iterations = 2;
  double warmup_min_seconds = 0.05;
  // After those minimums, warm-up goes on until the median of the last this
  // many calls is within kStableWarmupSpread (harness/measure/protocol.hpp) of
  // the median of the this many before them (a warm machine), or
  // warmup_max_seconds have passed since it began; 0 turns the stable window off.
  int warmup_window = 5;
  double warmup_max_seconds = 0.5;
  int min_samples = 10;       // always taken, whatever the time limit
  int max_samples = 1000;
  double min_seconds = 0.2;   // total sampled time before convergence may be considered
  double max_seconds = 5.0;   // wall-clock limit of the sampling phase once min_samples are taken
  double target_ci_width = 0.02;  // stop when the median's 95% CI is this narrow, relative
  bool cold_cache = true;     // flush the last-level cache before every sample
  // The timing method, or the order to fall back through where the device or
  // build cannot give the first (then each record says which it used and why
  // the ones before it were not).
  std::vector<TimingMethod> timing = {TimingMethod::events};
  int graph_calls = 10;  // calls captured into one graph (timing "graph")
  // A sample whose SM clock is below this share of the run's highest is marked
  // (timing.clock_marks), and the record is throttled.
  double clock_mark_share = 0.85;
};

struct AccuracySettings {
  bool check = true;
  // Work budget of the oracle per case, in multiply-adds.
  double max_oracle_macs = 4e9;
  std::uint64_t seed = 0;  // picks the sampled heads and rows
  // Floor of the baseline rule: floor_factor x u x max(1, max |oracle|) of the
  // tensor, with u the unit roundoff of the output type, but at least
  // kAccumulationRoundoffs fp32 unit roundoffs (the representational error at
  // that magnitude, or fp32 accumulation's where outputs are fp32). In units of
  // at least 1, as the per-dtype bound: a tensor whose exact value is zero (dQ
  // when every row sees one key) holds only rounding noise on both sides.
  double floor_factor = 2.0;
  static constexpr double kAccumulationRoundoffs = 16.0;
  // Largest max-abs error allowed per output storage type, in units of
  // max(1, max |oracle|) of the tensor.
  std::map<ElementType, double> bound = {{ElementType::f64, 1e-12},
                                         {ElementType::f32, 1e-4},
                                         {ElementType::f16, 1e-2},
                                         {ElementType::bf16, 5e-2}};
};

}  // namespace attnbench
