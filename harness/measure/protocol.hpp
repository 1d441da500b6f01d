// The measurement protocol of docs/design.md §4, independent of the device: warm up,
// take samples until the median is known well enough (or a limit is reached),
// keep every raw sample, and note those that span a stop of the process
// (SIGSTOP, Ctrl-Z). The stopping rule is checked after every sample at a
// cost that does not grow with the sample count (RunningMedianInterval).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/common/measure_settings.hpp"
#include "harness/measure/noise.hpp"
#include "harness/measure/statistics.hpp"

namespace attnbench {

// Blocks SIGCONT in the calling thread, and so in every thread it starts
// later. A stopped process still continues on SIGCONT, but the signal stays
// pending until measure() takes it: that is how a sample that spans a stop
// (SIGSTOP, Ctrl-Z) is told, whichever thread the kernel would have handed
// the signal to. main() calls it first, before any thread starts; measure()
// calls it for its own thread.
void keep_continuations_pending();

// Command-line overrides of a scenario's measurement settings (run's
// --min-samples, --max-samples, --min-time, --max-time, --target-ci,
// --warmup, --warmup-iterations, --warmup-window, --warmup-max, --hot / --cold,
// --timing, --graph-calls, --clock-mark-share;
// harness/cli/measurement_options.hpp).
struct MeasurementOverrides {
  std::optional<int> min_samples, max_samples, warmup_min_iterations, warmup_window;
  std::optional<double> min_seconds, max_seconds, target_ci_width, warmup_min_seconds, warmup_max_seconds;
  std::optional<bool> cold_cache;
  std::optional<std::vector<TimingMethod>> timing;
  std::optional<int> graph_calls;
  std::optional<double> clock_mark_share;

  // `scenario_settings` with the overrides given; throws InputError naming the
  // flag and the scenario file when min_samples would exceed max_samples.
  MeasureSettings applied_to(const MeasureSettings& scenario_settings, const std::string& scenario_path) const;
};

// Two consecutive warm-up windows agree when their medians differ by at most this, relative.
inline constexpr double kStableWarmupSpread = 0.05;

struct Measurement {
  std::vector<double> samples_seconds;
  int warmup_iterations = 0;
  double warmup_seconds = 0;
  // "stable" (two windows of warmup_window calls agreed), "max_seconds" (they did
  // not within warmup_max_seconds), or "off" (warmup_window 0).
  std::string warmup_stop;
  double wall_seconds = 0;  // sampling phase, flushes included
  bool converged = false;
  // "converged", "max_samples" or "max_seconds". A narrow interval of noisy
  // samples (harness/measure/noise.hpp) is not convergence: sampling goes on.
  std::string stop_reason;
  // Indices of the samples during which the process was stopped and continued
  // (SIGSTOP or Ctrl-Z, then SIGCONT): they are kept, and say so.
  std::vector<std::size_t> stopped_samples;
  SampleStatistics statistics;

  // What ImplementationSession::measure adds (harness/measure/session.hpp):
  // the timing method used, and "METHOD: why not" for each one the fallback
  // order passed over before it.
  TimingMethod method = TimingMethod::events;
  std::vector<std::string> passed_over;
  // Timing "cupti": the events time of each sample's call (samples_seconds
  // holds its kernels' time).
  std::vector<double> events_seconds;
  // The SM clock read after each sample; nullopt where it could not be.
  std::vector<std::optional<double>> sm_mhz;
  // What the method adds to the record's timing ("cupti", "graph" objects).
  nlohmann::ordered_json method_details = nlohmann::ordered_json::object();
};

// Runs `call` under `timer`. `before_sample` runs before every warm-up call and
// sample, outside the timed region (cache flush, output reset). `phase`, when
// given, is told "warm-up" and then "timing" as the protocol enters them;
// `call_done`, when given, is told after every call (outside the timed region)
// how many warm-up calls and samples are done, for a progress display.
Measurement measure(const MeasureSettings& settings, SampleTimer& timer,
                    const std::function<void()>& before_sample, const std::function<void()>& call,
                    const std::function<void(const char*)>& phase = {},
                    const std::function<void(int warmup_calls, int samples)>& call_done = {});

}  // namespace attnbench
