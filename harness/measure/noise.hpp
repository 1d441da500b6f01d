// What the samples of one record say about the machine they ran on
// (docs/results.md, timing.noise; docs/compare.md, "Noise"). A shared runner
// leaves marks in the samples themselves, and each is looked for:
// - quantised: the samples sit on a few levels that are multiples of one step
//   (a parallel region waiting a scheduler tick for a descheduled thread), so
//   the median is a multiple of the tick, not the kernel's time;
// - levels: two or more groups of samples far apart (interrupted and
//   uninterrupted calls);
// - outliers: samples far outside the bulk (beyond 3 interquartile ranges);
// - drifting: the last third of the samples is more than 10% away from the
//   first, beyond their spread;
// - host activity during the samples: a load average that rose, steal time,
//   involuntary context switches of this process.
// A finding "affects the median" when the median cannot be trusted with it:
// quantised or drifting samples, or levels when the median's own level holds
// less than 65% of the samples. Such a record is "noisy": it is not "converged", and compare never
// calls it a regression (inconclusive instead). The other findings are notes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host_info.hpp"
#include "harness/measure/statistics.hpp"

namespace attnbench {

// Levels are separated by a jump of more than this, relative, between two
// consecutive sorted samples; drift is a change of more than this too.
inline constexpr double kNoiseLevelGap = 0.10;
// Levels make the median noisy when its own level holds less than this share
// of the samples.
inline constexpr double kMedianLevelShare = 0.65;
// Fewer samples than this are not judged for their distribution.
inline constexpr std::size_t kNoiseMinimumSamples = 8;

struct NoiseFinding {
  // "quantised", "levels", "outliers", "drifting", "load_rose", "steal", "preempted";
  // "rounds" in a record joined from rounds (merge --rounds): a noisy round.
  std::string kind;
  std::string summary;  // e.g. "quantised at ~4.0 ms (levels 8.0 ms, 12 ms, 16 ms)"
  bool affects_median = false;
};

struct NoiseAssessment {
  std::vector<NoiseFinding> findings;
  // The step of quantised samples (seconds); 0 when they are not quantised.
  double resolution_seconds = 0;
  bool judged = false;  // false: too few samples to judge the distribution
  bool noisy() const;
  // "clean", "noisy: quantised at ~4.0 ms; …", or "clean (notes: …)".
  std::string verdict() const;
  nlohmann::ordered_json to_json() const;
};

NoiseAssessment assess_noise(const std::vector<double>& samples, const HostActivity& host = {});

// timing.host_activity of a record (docs/results.md), and back: what
// assess_noise() read, so the verdict can be recomputed from the record.
nlohmann::ordered_json host_activity_json(const HostActivity& activity);
HostActivity host_activity_from_json(const nlohmann::ordered_json& json);

// The median's interval of `stats` no narrower than the samples' resolution:
// quantised samples cannot place the median closer than half a step.
void widen_to_resolution(SampleStatistics& stats, double resolution_seconds);

}  // namespace attnbench
