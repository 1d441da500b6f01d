// Noise in a record's samples (harness/measure/noise.hpp) on synthetic sample
// sets shaped like what a loaded shared runner produced (quantised at a
// scheduler tick, two levels, drifting, far outliers) and like a quiet
// machine's; the stopping rule that does not call noisy samples converged; the
// warm-up that waits for a stable window; and the machine check's rules on
// made-up hosts (harness/machine_check.hpp).
#include "harness/measure/noise.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "harness/machine_check.hpp"
#include "harness/measure/protocol.hpp"

namespace attnbench {
namespace {

// `count` values around `median` with lognormal noise of `spread`, seeded.
std::vector<double> around(double median, std::size_t count, std::uint64_t seed, double spread = 0.01) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> noise(0.0, spread);
  std::vector<double> values(count);
  for (double& value : values) value = median * std::exp(noise(random));
  return values;
}

bool has(const NoiseAssessment& noise, const std::string& kind) {
  for (const NoiseFinding& finding : noise.findings) {
    if (finding.kind == kind) return true;
  }
  return false;
}

TEST(Noise, AQuietMachinesSamplesAreClean) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const NoiseAssessment noise = assess_noise(around(1.5e-3, 100, seed, 0.02));
    EXPECT_TRUE(noise.judged);
    EXPECT_FALSE(noise.noisy()) << noise.verdict();
    EXPECT_EQ(noise.resolution_seconds, 0);
  }
  EXPECT_EQ(assess_noise(around(1.5e-3, 30, 7)).verdict(), "ok");
}

TEST(Noise, SamplesOnMultiplesOfASchedulerTickAreQuantisedAndWidenTheMediansInterval) {
  // A parallel region waiting 1 to 4 ticks of 4 ms for a descheduled thread.
  std::mt19937_64 random(3);
  std::vector<double> samples;
  for (int i = 0; i < 60; ++i) samples.push_back(4e-3 * static_cast<double>(2 + random() % 3) * (1 + 1e-4 * (i % 5)));
  const NoiseAssessment noise = assess_noise(samples);
  ASSERT_TRUE(has(noise, "quantised")) << noise.verdict();
  EXPECT_TRUE(noise.noisy());
  EXPECT_NEAR(noise.resolution_seconds, 4e-3, 1e-4);
  EXPECT_NE(noise.verdict().find("noisy: quantised at ~4.0"), std::string::npos) << noise.verdict();

  // The order statistics may all sit on one level (an interval of 0.0%); the
  // resolution keeps it at least a step wide.
  std::vector<double> one_level_mostly(40, 8e-3);
  one_level_mostly.insert(one_level_mostly.end(), {12e-3, 12e-3, 16e-3, 16e-3, 16e-3});
  SampleStatistics stats = summarize(one_level_mostly);
  EXPECT_EQ(stats.median_ci_relative_width(), 0.0);
  const NoiseAssessment stepped = assess_noise(one_level_mostly);
  ASSERT_GT(stepped.resolution_seconds, 0) << stepped.verdict();
  widen_to_resolution(stats, stepped.resolution_seconds);
  EXPECT_GE(stats.median_ci_relative_width(), 0.49);  // ±2 ms around 8 ms
}

TEST(Noise, TwoLevelsAreNamedAndNoisyOnlyWhenTheMediansIntervalSpansThem) {
  // 70% uninterrupted calls at 1.5 ms, 30% preempted for ~4 ms: the median
  // stays on the lower level.
  std::vector<double> mostly_low = around(1.5e-3, 70, 1);
  for (double value : around(5.5e-3, 30, 2, 0.05)) mostly_low.push_back(value);
  std::shuffle(mostly_low.begin(), mostly_low.end(), std::mt19937_64(9));  // interleaved, as preemptions come
  const NoiseAssessment minority = assess_noise(mostly_low);
  EXPECT_TRUE(has(minority, "levels")) << minority.verdict();
  EXPECT_FALSE(minority.noisy()) << minority.verdict();

  // Half and half: the median may fall on either level.
  std::vector<double> even = around(1.5e-3, 50, 3);
  for (double value : around(16e-3, 50, 4, 0.05)) even.push_back(value);
  std::shuffle(even.begin(), even.end(), std::mt19937_64(9));
  const NoiseAssessment split = assess_noise(even);
  EXPECT_TRUE(has(split, "levels"));
  EXPECT_TRUE(split.noisy()) << split.verdict();
  EXPECT_NE(split.verdict().find("2 levels"), std::string::npos) << split.verdict();
}

TEST(Noise, DriftingSamplesAreNoisy) {
  std::vector<double> drifting;
  for (int i = 0; i < 60; ++i) drifting.push_back(1e-3 * (1.0 + 0.006 * i));  // +36% over the run
  const NoiseAssessment noise = assess_noise(drifting);
  EXPECT_TRUE(has(noise, "drifting")) << noise.verdict();
  EXPECT_TRUE(noise.noisy());
}

TEST(Noise, AFewFarOutliersAreANoteNotNoise) {
  std::vector<double> samples = around(2e-3, 97, 5);
  samples.insert(samples.end(), {9e-3, 30e-3, 11e-3});
  const NoiseAssessment noise = assess_noise(samples);
  ASSERT_TRUE(has(noise, "outliers")) << noise.verdict();
  EXPECT_FALSE(noise.noisy());
  EXPECT_NE(noise.verdict().find("3 of 100 samples far outside the bulk"), std::string::npos) << noise.verdict();
}

TEST(Noise, TooFewSamplesAreNotJudgedButTheHostStillIs) {
  HostActivity host;
  host.load_before = 1.0;
  host.load_after = 4.5;
  host.available_cpus = 2;
  host.steal_fraction = 0.12;
  host.involuntary_switches = 40;
  const NoiseAssessment noise = assess_noise({1e-3, 2e-3, 3e-3}, host);
  EXPECT_FALSE(noise.judged);
  EXPECT_TRUE(has(noise, "load_rose"));
  EXPECT_TRUE(has(noise, "steal"));
  EXPECT_TRUE(has(noise, "preempted"));
  EXPECT_FALSE(noise.noisy());  // the host's activity is a note; the samples decide
  EXPECT_EQ(noise.to_json()["judged"], false);
}

// Timings in turn (cycling).
class CyclingTimer final : public SampleTimer {
 public:
  explicit CyclingTimer(std::vector<double> durations) : durations_(std::move(durations)) {}
  void start() override {}
  double stop() override { return durations_[stops_++ % durations_.size()]; }
  std::size_t stops() const { return stops_; }

 private:
  std::vector<double> durations_;
  std::size_t stops_ = 0;
};

MeasureSettings quick_settings() {
  MeasureSettings settings;
  settings.warmup_min_iterations = 0;
  settings.warmup_min_seconds = 0;
  settings.warmup_window = 0;
  settings.min_samples = 10;
  settings.max_samples = 200;
  settings.min_seconds = 0;
  settings.max_seconds = 600;
  return settings;
}

TEST(NoiseAwareStopping, QuantisedSamplesWithANarrowIntervalAreNotConverged) {
  // Mostly 8 ms, now and then 12 or 16 ms (a tick of 4 ms): the order
  // statistics of the interval are all 8 ms (width 0.0%), which a rule blind
  // to noise calls converged.
  // Twenty samples show the steps.
  const std::vector<double> pattern = {8e-3, 8e-3, 8e-3, 8e-3, 12e-3, 8e-3, 8e-3, 8e-3, 8e-3, 16e-3,
                                       8e-3, 8e-3, 8e-3, 8e-3, 12e-3, 8e-3, 8e-3, 8e-3, 8e-3, 8e-3};
  CyclingTimer timer(pattern);
  MeasureSettings settings = quick_settings();
  settings.min_samples = 20;
  const Measurement m = measure(settings, timer, [] {}, [] {});
  EXPECT_FALSE(m.converged);
  EXPECT_EQ(m.stop_reason, "max_samples");
  EXPECT_GT(m.statistics.median_ci_relative_width(), 0.4);

  CyclingTimer steady({1e-3, 1.001e-3, 0.999e-3});
  const Measurement clean = measure(quick_settings(), steady, [] {}, [] {});
  EXPECT_TRUE(clean.converged);
  EXPECT_EQ(clean.samples_seconds.size(), 10u);
}

TEST(StableWarmup, RunsUntilAWindowOfCallsAgreeAndSaysSo) {
  MeasureSettings settings = quick_settings();
  settings.warmup_window = 3;
  // A cold start: three slow calls, then steady ones.
  CyclingTimer timer({5e-3, 3e-3, 2e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3,
                      1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3});
  const Measurement m = measure(settings, timer, [] {}, [] {});
  // Windows of three: (5, 3, 2) then (1, 1, 1) differ; (3, 2, 1) and (1, 1, 1)
  // too; (2, 1, 1), (1, 1, 1) have medians 1 and 1 after the eighth call.
  EXPECT_EQ(m.warmup_iterations, 8);
  EXPECT_EQ(m.warmup_stop, "stable");
  EXPECT_DOUBLE_EQ(m.samples_seconds.front(), 1e-3);
}

TEST(StableWarmup, IsBoundedInTimeAndCanBeTurnedOff) {
  MeasureSettings settings = quick_settings();
  settings.warmup_window = 4;
  settings.warmup_max_seconds = 0.05;
  std::vector<double> climbing;  // 10% slower every call: no two windows agree
  for (int k = 0; k < 60; ++k) climbing.push_back(1e-3 * std::pow(1.1, k));
  CyclingTimer never_stable(climbing);
  const Measurement bounded = measure(settings, never_stable, [] {}, [] {});
  EXPECT_EQ(bounded.warmup_stop, "max_seconds");
  EXPECT_GE(bounded.warmup_seconds, 0.05);

  settings.warmup_window = 0;
  CyclingTimer off_timer({1e-3, 2e-3});
  const Measurement off = measure(settings, off_timer, [] {}, [] {});
  EXPECT_EQ(off.warmup_stop, "off");
  EXPECT_EQ(off.warmup_iterations, 0);
}

// ---- the machine check's rules ----

const MachineFinding* finding(const std::vector<MachineFinding>& findings, const std::string& check) {
  for (const MachineFinding& f : findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

// Each of `checks` is among `findings`, a warning with a fix.
void expect_warnings_with_fixes(const std::vector<MachineFinding>& findings, std::initializer_list<const char*> checks) {
  for (const char* check : checks) {
    const MachineFinding* f = finding(findings, check);
    ASSERT_NE(f, nullptr) << check;
    EXPECT_EQ(f->level, "warn") << check;
    EXPECT_FALSE(f->fix.empty()) << check;
  }
}

HostState quiet_host() {
  HostState state;
  state.available_cpus = 2;
  state.threads = 1;
  state.load_1min = 0.1;
  state.steal_fraction = 0.0;
  state.governors = {"performance", "performance"};
  state.turbo_enabled = false;
  state.memory_available_fraction = 0.8;
  state.memory_pressure_avg10 = 0.0;
  return state;
}

TEST(MachineCheck, AQuietTunedHostHasNoWarnings) {
  for (const MachineFinding& f : check_host(quiet_host())) EXPECT_NE(f.level, "warn") << f.check << ": " << f.message;
}

TEST(MachineCheck, EachUnfitStateIsAWarningWithAFix) {
  HostState state = quiet_host();
  state.load_1min = 6.2;
  state.threads = 2;
  state.steal_fraction = 0.08;
  state.governors = {"powersave", "powersave"};
  state.smt_active = true;
  state.busy_sibling_fractions = {0.9};
  state.memory_available_fraction = 0.05;
  const std::vector<MachineFinding> findings = check_host(state);
  expect_warnings_with_fixes(findings, {"load", "steal", "governor", "smt", "threads", "memory"});
  if (HasFatalFailure()) return;
  EXPECT_NE(finding(findings, "load")->message.find("6.2 on 2 available CPUs"), std::string::npos);
  EXPECT_NE(finding(findings, "threads")->fix.find("--threads 1"), std::string::npos);
  const std::vector<std::string> lines = findings_lines(findings_json(findings), true);
  EXPECT_EQ(lines.size(), 6u);
}

TEST(MachineCheck, AVirtualMachineWithoutCpufreqIsANote) {
  HostState state = quiet_host();
  state.governors.clear();
  state.turbo_enabled.reset();
  const MachineFinding* governor = finding(check_host(state), "governor");
  ASSERT_NE(governor, nullptr);
  EXPECT_EQ(governor->level, "note");
}

TEST(MachineCheck, AGpuSharedCappedOrThrottledIsAWarningWithAFix) {
  GpuState ready;
  ready.name = "Test GPU";
  ready.other_processes = 0;
  ready.persistence_mode = true;
  ready.power_limit_watts = ready.default_power_limit_watts = 700;
  ready.ecc_enabled = true;
  ready.sm_mhz = 1980;
  ready.sm_max_mhz = 1980;
  ready.throttle_reasons = {"gpu_idle"};
  for (const MachineFinding& f : check_gpu(ready)) EXPECT_NE(f.level, "warn") << f.check << ": " << f.message;

  GpuState unfit = ready;
  unfit.other_processes = 2;
  unfit.persistence_mode = false;
  unfit.power_limit_watts = 500;
  unfit.throttle_reasons = {"sw_thermal_slowdown"};
  const std::vector<MachineFinding> findings = check_gpu(unfit);
  expect_warnings_with_fixes(findings, {"gpu_processes", "gpu_persistence", "gpu_power_limit", "gpu_throttle"});
  if (HasFatalFailure()) return;
  EXPECT_NE(finding(findings, "gpu_power_limit")->fix.find("nvidia-smi -pl 700"), std::string::npos);
  EXPECT_NE(finding(findings, "gpu_throttle")->message.find("sw_thermal_slowdown"), std::string::npos);
}

}  // namespace
}  // namespace attnbench
