// The measurement protocol of docs/design.md §4, independent of the device: warm up,
// take samples until the median is known well enough (or a limit is reached),
// keep every raw sample.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend.hpp"
#include "statistics.hpp"

namespace attnbench {

struct MeasureSettings {
  int warmup_min_iterations = 2;
  double warmup_min_seconds = 0.05;
  int min_samples = 10;
  int max_samples = 1000;
  double min_seconds = 0.2;   // total sampled time before stopping may be considered
  double max_seconds = 5.0;   // wall-clock limit of the sampling phase
  double target_ci_width = 0.02;  // stop when the median's 95% CI is this narrow, relative
  bool cold_cache = true;     // flush the last-level cache before every sample
};

struct Measurement {
  std::vector<double> samples_seconds;
  int warmup_iterations = 0;
  double warmup_seconds = 0;
  double wall_seconds = 0;  // sampling phase, flushes included
  bool converged = false;
  std::string stop_reason;  // "converged", "max_samples" or "max_seconds"
  SampleStatistics statistics;
};

// Runs `call` under `timer`. `before_sample` runs before every warm-up call and
// sample, outside the timed region (cache flush, output reset). `phase`, when
// given, is told "warm-up" and then "timing" as the protocol enters them.
Measurement measure(const MeasureSettings& settings, SampleTimer& timer,
                    const std::function<void()>& before_sample, const std::function<void()>& call,
                    const std::function<void(const char*)>& phase = {});

}  // namespace attnbench
