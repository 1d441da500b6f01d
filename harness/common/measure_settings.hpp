// The settings a scenario gives the measure stage: the timing protocol's
// (harness/measure/protocol.hpp) and the accuracy check's
// (harness/measure/accuracy.hpp). They sit on the floor because scenario/
// reads them from scenario files, measure/ obeys them and run/ records them,
// and scenario/ may not include measure/.
#pragma once

#include <cstdint>
#include <map>

#include "harness/dtype.hpp"

namespace attnbench {

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
