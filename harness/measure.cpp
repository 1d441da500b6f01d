#include "measure.hpp"

#include <chrono>

namespace attnbench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Measurement measure(const MeasureSettings& settings, SampleTimer& timer,
                    const std::function<void()>& before_sample, const std::function<void()>& call,
                    const std::function<void(const char*)>& phase) {
  Measurement result;
  if (phase) phase("warm-up");

  const auto warmup_start = std::chrono::steady_clock::now();
  while (result.warmup_iterations < settings.warmup_min_iterations ||
         seconds_since(warmup_start) < settings.warmup_min_seconds) {
    before_sample();
    call();
    ++result.warmup_iterations;
  }
  result.warmup_seconds = seconds_since(warmup_start);
  if (phase) phase("timing");

  const auto sampling_start = std::chrono::steady_clock::now();
  double sampled_seconds = 0;
  for (;;) {
    before_sample();
    timer.start();
    call();
    const double elapsed = timer.stop();
    result.samples_seconds.push_back(elapsed);
    sampled_seconds += elapsed;

    const auto count = static_cast<int>(result.samples_seconds.size());
    const bool minimums_met = count >= settings.min_samples && sampled_seconds >= settings.min_seconds;
    if (minimums_met) {
      result.statistics = summarize(result.samples_seconds);
      if (result.statistics.median_ci_relative_width() <= settings.target_ci_width) {
        result.converged = true;
        result.stop_reason = "converged";
        break;
      }
    }
    if (count >= settings.max_samples) {
      result.stop_reason = "max_samples";
      break;
    }
    if (seconds_since(sampling_start) >= settings.max_seconds) {
      result.stop_reason = "max_seconds";
      break;
    }
  }
  result.wall_seconds = seconds_since(sampling_start);
  result.statistics = summarize(result.samples_seconds);
  return result;
}

}  // namespace attnbench
