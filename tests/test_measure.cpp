// The measurement protocol (docs/design.md §4) under a scripted timer: warm-up, the
// stopping rules, and the raw samples and their statistics. No expectation
// depends on how fast this machine runs, except that a wall-clock limit is
// eventually reached.
#include "harness/measure/protocol.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace attnbench {
namespace {

// Returns scripted durations in turn (cycling), and logs each event: 'B' for
// before_sample, 'S' start, 'C' call, 'E' stop.
class ScriptedTimer final : public SampleTimer {
 public:
  ScriptedTimer(std::vector<double> durations, std::string& log)
      : durations_(std::move(durations)), log_(log) {}
  void start() override {
    EXPECT_FALSE(running_) << "start() twice without stop()";
    running_ = true;
    log_ += 'S';
  }
  double stop() override {
    EXPECT_TRUE(running_) << "stop() without start()";
    running_ = false;
    log_ += 'E';
    return durations_[stops_++ % durations_.size()];
  }
  std::size_t stops() const { return stops_; }

 private:
  std::vector<double> durations_;
  std::string& log_;
  std::size_t stops_ = 0;
  bool running_ = false;
};

// Settings with no wall-clock warm-up and a sampling time limit that a run of
// no-op calls never reaches.
MeasureSettings scripted_settings() {
  MeasureSettings settings;
  settings.warmup_min_iterations = 0;
  settings.warmup_min_seconds = 0.0;
  settings.warmup_window = 0;
  settings.min_samples = 10;
  settings.max_samples = 1000;
  settings.min_seconds = 0.0;
  settings.max_seconds = 600.0;
  settings.target_ci_width = 0.02;
  return settings;
}

struct ScriptedRun {
  std::string log;
  Measurement measurement;
  std::size_t timed = 0;
};

ScriptedRun run_scripted(const MeasureSettings& settings, std::vector<double> durations) {
  ScriptedRun run;
  ScriptedTimer timer(std::move(durations), run.log);
  run.measurement = measure(
      settings, timer, [&] { run.log += 'B'; }, [&] { run.log += 'C'; });
  run.timed = timer.stops();
  return run;
}

std::string repeat(const std::string& unit, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += unit;
  return out;
}

TEST(Measure, WarmupRunsTheMinimumIterationsWithBeforeSampleEachTime) {
  MeasureSettings settings = scripted_settings();
  settings.warmup_min_iterations = 3;
  settings.min_samples = 6;
  const ScriptedRun run = run_scripted(settings, {1.0});
  EXPECT_EQ(run.measurement.warmup_iterations, 3);
  // Three untimed warm-up calls, each after before_sample, then six samples,
  // each with before_sample outside the timed region.
  EXPECT_EQ(run.log, repeat("BC", 3) + repeat("BSCE", 6));
  EXPECT_EQ(run.timed, 6u);
  EXPECT_GE(run.measurement.warmup_seconds, 0.0);
}

TEST(Measure, NoWarmupWhenBothMinimumsAreZero) {
  const ScriptedRun run = run_scripted(scripted_settings(), {1.0});
  EXPECT_EQ(run.measurement.warmup_iterations, 0);
  EXPECT_EQ(run.log.substr(0, 4), "BSCE");
}

TEST(Measure, WarmupLastsAtLeastTheMinimumTime) {
  MeasureSettings settings = scripted_settings();
  settings.warmup_min_iterations = 1;
  settings.warmup_min_seconds = 0.02;
  settings.min_samples = 6;
  std::string log;
  ScriptedTimer timer({1.0}, log);
  int warmup_calls = 0;
  bool sampling = false;
  const Measurement m = measure(
      settings, timer, [&] { log += 'B'; },
      [&] {
        log += 'C';
        if (log.size() >= 2 && log[log.size() - 2] == 'S') sampling = true;
        if (!sampling) {
          ++warmup_calls;
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      });
  // The warm-up went on past its one required iteration until 20 ms had passed
  // (a warm-up that ignored the time would stop after one 2 ms call), and every
  // call was counted.
  EXPECT_GE(m.warmup_seconds, 0.02);
  EXPECT_GE(m.warmup_iterations, 1);
  EXPECT_EQ(m.warmup_iterations, warmup_calls);
  EXPECT_EQ(log.substr(0, 2 * static_cast<std::size_t>(warmup_calls)),
            repeat("BC", static_cast<std::size_t>(warmup_calls)));
  EXPECT_EQ(m.samples_seconds.size(), 6u);
}

TEST(Measure, ConstantDurationsConvergeExactlyWhenMinSamplesAndMinSecondsAreMet) {
  MeasureSettings settings = scripted_settings();
  // 0.125 s a sample (exact in binary): min_seconds = 1 s needs 8 samples.
  settings.min_samples = 5;
  settings.min_seconds = 1.0;
  ScriptedRun run = run_scripted(settings, {0.125});
  EXPECT_EQ(run.measurement.samples_seconds.size(), 8u);
  EXPECT_TRUE(run.measurement.converged);
  EXPECT_EQ(run.measurement.stop_reason, "converged");

  // Now the sample count is the later minimum.
  settings.min_samples = 12;
  run = run_scripted(settings, {0.125});
  EXPECT_EQ(run.measurement.samples_seconds.size(), 12u);
  EXPECT_TRUE(run.measurement.converged);
  EXPECT_EQ(run.measurement.stop_reason, "converged");
  EXPECT_EQ(run.timed, 12u);
}

TEST(Measure, ConvergenceWaitsForAMedianIntervalToExist) {
  // With the minimums met after one sample, the median's 95% interval needs six
  // samples before it is defined (and then has width 0).
  MeasureSettings settings = scripted_settings();
  settings.min_samples = 1;
  const ScriptedRun run = run_scripted(settings, {0.5});
  EXPECT_EQ(run.measurement.samples_seconds.size(), 6u);
  EXPECT_TRUE(run.measurement.converged);
  EXPECT_EQ(run.measurement.stop_reason, "converged");
}

TEST(Measure, WildlyVaryingDurationsRunToMaxSamples) {
  MeasureSettings settings = scripted_settings();
  settings.max_samples = 57;
  const ScriptedRun run = run_scripted(settings, {1e-3, 1.0});
  EXPECT_EQ(run.measurement.samples_seconds.size(), 57u);
  EXPECT_FALSE(run.measurement.converged);
  EXPECT_EQ(run.measurement.stop_reason, "max_samples");
  EXPECT_EQ(run.log, repeat("BSCE", 57));
}

TEST(Measure, MaxSecondsStopsTheSamplingPhase) {
  MeasureSettings settings = scripted_settings();
  settings.min_samples = 2;
  settings.max_samples = 1000;
  settings.max_seconds = 0.05;
  settings.target_ci_width = 1e-9;  // never reached: the samples alternate
  std::string log;
  ScriptedTimer timer({1e-3, 2e-3}, log);
  const Measurement m = measure(
      settings, timer, [] {}, [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  EXPECT_EQ(m.stop_reason, "max_seconds");
  EXPECT_FALSE(m.converged);
  EXPECT_GE(m.samples_seconds.size(), 2u);
  EXPECT_LT(m.samples_seconds.size(), 1000u);
  EXPECT_GE(m.wall_seconds, 0.05);
}

TEST(Measure, MinSamplesAreTakenEvenPastMaxSeconds) {
  // 12 calls of 5 ms take 60 ms, beyond the 10 ms limit: the limit stops the
  // sampling only once the minimum is there, so a comparison has its samples.
  MeasureSettings settings = scripted_settings();
  settings.min_samples = 12;
  settings.max_seconds = 0.01;
  settings.target_ci_width = 1e-9;
  std::string log;
  ScriptedTimer timer({1e-3, 2e-3}, log);
  const Measurement m = measure(
      settings, timer, [] {}, [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  EXPECT_EQ(m.samples_seconds.size(), 12u);
  EXPECT_EQ(m.stop_reason, "max_seconds");
  EXPECT_FALSE(m.converged);
}

// The stopping rule evaluated from scratch: the first sample count at which
// the minimums are met and summarize() of every sample so far says the
// median's interval is narrow enough; 0 when none up to the end.
std::size_t exact_rule_stop(const std::vector<double>& durations, const MeasureSettings& settings) {
  double sampled = 0;
  for (std::size_t n = 1; n <= durations.size(); ++n) {
    sampled += durations[n - 1];
    const std::vector<double> prefix(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(n));
    if (static_cast<int>(n) >= settings.min_samples && sampled >= settings.min_seconds &&
        summarize(prefix).median_ci_relative_width() <= settings.target_ci_width) {
      return n;
    }
  }
  return 0;
}

TEST(Measure, StopsAtTheSameSampleAsTheStoppingRuleRecomputedFromScratch) {
  // Lognormal noise with a slow drift and rare 5x outliers, at several
  // targets: the running interval must stop exactly where the sort-and-sum
  // rule would, converging or not.
  std::mt19937_64 random(2024);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::size_t converged = 0;
  for (int trial = 0; trial < 32; ++trial) {
    const double spread = 0.01 + 0.01 * (trial % 5);
    std::vector<double> durations(700);
    for (std::size_t i = 0; i < durations.size(); ++i) {
      const double outlier = uniform(random) < 0.03 ? 5.0 : 1.0;
      durations[i] = 1e-3 * outlier * std::exp(spread * noise(random) + 1e-4 * static_cast<double>(i % 97));
    }
    MeasureSettings settings = scripted_settings();
    settings.min_samples = 1 + trial % 12;
    settings.max_samples = static_cast<int>(durations.size());
    settings.target_ci_width = 0.002 * (1 + trial % 8);
    const std::size_t expected = exact_rule_stop(durations, settings);
    const ScriptedRun run = run_scripted(settings, durations);
    SCOPED_TRACE("trial " + std::to_string(trial));
    if (expected == 0) {
      EXPECT_EQ(run.measurement.stop_reason, "max_samples");
      EXPECT_EQ(run.measurement.samples_seconds.size(), durations.size());
    } else {
      ++converged;
      EXPECT_EQ(run.measurement.stop_reason, "converged");
      EXPECT_EQ(run.measurement.samples_seconds.size(), expected);
    }
  }
  EXPECT_GE(converged, 10u) << "the trials should exercise convergence";
  EXPECT_LE(converged, 30u) << "and running to max_samples";
}

TEST(Measure, KeepsRawSamplesInOrderAndSummarizesThem) {
  MeasureSettings settings = scripted_settings();
  settings.max_samples = 9;
  const std::vector<double> script{3.0, 0.001, 2.0, 5.0, 0.01, 4.0, 1.0, 9.0, 0.5};
  const ScriptedRun run = run_scripted(settings, script);
  const Measurement& m = run.measurement;
  ASSERT_EQ(m.stop_reason, "max_samples");
  EXPECT_EQ(m.samples_seconds, script);

  const SampleStatistics& s = m.statistics;
  EXPECT_EQ(s.count, 9u);
  EXPECT_DOUBLE_EQ(s.min, 0.001);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.p50, 2.0);  // sorted: .001 .01 .5 1 2 3 4 5 9
  double sum = 0;
  for (double x : script) sum += x;
  EXPECT_DOUBLE_EQ(s.mean, sum / 9.0);
  EXPECT_TRUE(s.median_ci_defined);
  EXPECT_DOUBLE_EQ(s.median_ci_low, 0.01);  // ranks (2, 8) for n = 9
  EXPECT_DOUBLE_EQ(s.median_ci_high, 5.0);

  // The final statistics are those of every sample, not of a partial set.
  const SampleStatistics again = summarize(m.samples_seconds);
  EXPECT_EQ(s.p10, again.p10);
  EXPECT_EQ(s.p90, again.p90);
  EXPECT_EQ(s.p99, again.p99);
  EXPECT_EQ(s.stddev, again.stddev);
}

TEST(Measure, StatisticsAfterConvergenceCoverEverySample) {
  MeasureSettings settings = scripted_settings();
  settings.min_samples = 10;
  settings.target_ci_width = 0.5;
  // Nearly constant durations with a little spread converge at the minimum.
  const std::vector<double> script{1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.03};
  const ScriptedRun run = run_scripted(settings, script);
  const Measurement& m = run.measurement;
  EXPECT_EQ(m.stop_reason, "converged");
  EXPECT_EQ(m.samples_seconds, script);
  EXPECT_EQ(m.statistics.count, 10u);
  EXPECT_DOUBLE_EQ(m.statistics.min, 0.98);
  EXPECT_DOUBLE_EQ(m.statistics.max, 1.03);
  EXPECT_LE(m.statistics.median_ci_relative_width(), 0.5);
}

}  // namespace
}  // namespace attnbench
