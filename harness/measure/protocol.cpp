#include "harness/measure/protocol.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness/errors.hpp"

namespace attnbench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

sigset_t continue_only() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCONT);
  return set;
}

// Takes a SIGCONT waiting for this thread (a continuation after a stop, held
// pending by keep_continuations_pending()); true when there was one.
bool took_continuation() {
  const sigset_t set = continue_only();
  const timespec no_wait{0, 0};
  return sigtimedwait(&set, nullptr, &no_wait) == SIGCONT;
}

}  // namespace

void keep_continuations_pending() {
  const sigset_t set = continue_only();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

MeasureSettings MeasurementOverrides::applied_to(const MeasureSettings& scenario_settings,
                                                 const std::string& scenario_path) const {
  MeasureSettings s = scenario_settings;
  s.min_samples = min_samples.value_or(s.min_samples);
  s.max_samples = max_samples.value_or(s.max_samples);
  s.warmup_min_iterations = warmup_min_iterations.value_or(s.warmup_min_iterations);
  s.min_seconds = min_seconds.value_or(s.min_seconds);
  s.max_seconds = max_seconds.value_or(s.max_seconds);
  s.target_ci_width = target_ci_width.value_or(s.target_ci_width);
  s.warmup_min_seconds = warmup_min_seconds.value_or(s.warmup_min_seconds);
  s.warmup_window = warmup_window.value_or(s.warmup_window);
  s.warmup_max_seconds = warmup_max_seconds.value_or(s.warmup_max_seconds);
  s.cold_cache = cold_cache.value_or(s.cold_cache);
  s.timing = timing.value_or(s.timing);
  s.graph_calls = graph_calls.value_or(s.graph_calls);
  s.clock_mark_share = clock_mark_share.value_or(s.clock_mark_share);
  if (s.min_samples > s.max_samples) {
    const std::string counts = "min_samples " + std::to_string(s.min_samples) + " > max_samples " +
                               std::to_string(s.max_samples);
    if (min_samples && max_samples) throw InputError("--min-samples, --max-samples: " + counts);
    if (min_samples) {
      throw InputError("--min-samples: " + counts + " (measure.max_samples of " + scenario_path +
                       "); give --max-samples too");
    }
    throw InputError("--max-samples: " + counts + " (measure.min_samples of " + scenario_path +
                     "); give --min-samples too");
  }
  return s;
}

Measurement measure(const MeasureSettings& settings, SampleTimer& timer,
                    const std::function<void()>& before_sample, const std::function<void()>& call,
                    const std::function<void(const char*)>& phase,
                    const std::function<void(int warmup_calls, int samples)>& call_done) {
  Measurement result;
  if (phase) phase("warm-up");

  // The minimum warm-up, then calls until the median of the last
  // warmup_window timings is within kStableWarmupSpread of the median of the
  // window before: steady, whatever single calls a neighbour interrupts.
  const auto warmup_start = std::chrono::steady_clock::now();
  std::vector<double> recent;  // the timings of the last two windows
  const auto window_agrees = [&] {
    const auto w = static_cast<std::size_t>(settings.warmup_window);
    if (recent.size() < 2 * w) return false;
    const double earlier = median_of({recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(w)});
    const double later = median_of({recent.begin() + static_cast<std::ptrdiff_t>(w), recent.end()});
    return std::abs(later / earlier - 1.0) <= kStableWarmupSpread;
  };
  result.warmup_stop = settings.warmup_window > 0 ? "stable" : "off";
  for (;;) {
    const bool minimums_met = result.warmup_iterations >= settings.warmup_min_iterations &&
                              seconds_since(warmup_start) >= settings.warmup_min_seconds;
    if (minimums_met) {
      if (settings.warmup_window <= 0 || window_agrees()) break;
      if (seconds_since(warmup_start) >= std::max(settings.warmup_max_seconds, settings.warmup_min_seconds)) {
        result.warmup_stop = "max_seconds";
        break;
      }
    }
    before_sample();
    if (settings.warmup_window > 0) {  // timed, for the window
      timer.start();
      call();
      recent.push_back(timer.stop());
      if (recent.size() > 2 * static_cast<std::size_t>(settings.warmup_window)) recent.erase(recent.begin());
    } else {
      call();
    }
    ++result.warmup_iterations;
    if (call_done) call_done(result.warmup_iterations, 0);
  }
  result.warmup_seconds = seconds_since(warmup_start);
  if (phase) phase("timing");

  keep_continuations_pending();
  took_continuation();  // a stop before the samples is none of theirs
  const auto sampling_start = std::chrono::steady_clock::now();
  double sampled_seconds = 0;
  RunningMedianInterval median_interval;
  for (;;) {
    before_sample();
    took_continuation();  // a stop between samples is none of this one's
    timer.start();
    call();
    const double elapsed = timer.stop();
    if (took_continuation()) result.stopped_samples.push_back(result.samples_seconds.size());
    result.samples_seconds.push_back(elapsed);
    if (call_done) call_done(result.warmup_iterations, static_cast<int>(result.samples_seconds.size()));
    median_interval.add(elapsed);
    sampled_seconds += elapsed;

    const auto count = static_cast<int>(result.samples_seconds.size());
    const bool minimums_met = count >= settings.min_samples && sampled_seconds >= settings.min_seconds;
    if (minimums_met && median_interval.relative_width() <= settings.target_ci_width &&
        !assess_noise(result.samples_seconds).noisy()) {
      result.converged = true;
      result.stop_reason = "converged";
      break;
    }
    if (count >= settings.max_samples) {
      result.stop_reason = "max_samples";
      break;
    }
    // The time limit never leaves fewer than min_samples samples: a comparison needs them.
    if (count >= settings.min_samples && seconds_since(sampling_start) >= settings.max_seconds) {
      result.stop_reason = "max_seconds";
      break;
    }
  }
  result.wall_seconds = seconds_since(sampling_start);
  result.statistics = summarize(result.samples_seconds);
  widen_to_resolution(result.statistics, assess_noise(result.samples_seconds).resolution_seconds);
  return result;
}

}  // namespace attnbench
