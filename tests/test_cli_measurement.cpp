// End to end: what `attnbench run` and `list` tell a user about how far to
// trust a measurement — the measurement flags and where they are recorded, the
// samples column with its convergence mark, the load average, the default
// thread count and its source, the cache size the flush uses, that no idle
// OpenMP worker runs beside a one-thread run, the pre-flight that `list`
// shares with `run`, and that the shipped quick scenario gives its own gate
// enough samples.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

// Two small cases; the measurement settings are the flags' to change.
const char* kSmallScenario = R"({
  "name": "small", "description": "two small cases",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 33, "seqlen_k": 20},
  "cases": [{"direction": "fwd"}, {"direction": "fwd+bwd", "causal": true}],
  "implementations": ["cpu.flash", "cpu.standard"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
              "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05}
})";

// The smallest case there is, for the timing loop's own behaviour.
const char* kTiniestScenario = R"({
  "name": "tiniest", "description": "one 8x8x8 case",
  "defaults": {"batch": 1, "heads": 1, "seqlen": 8, "head_dim": 8, "direction": "fwd"},
  "implementations": ["cpu.flash"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 1,
              "max_samples": 1000000, "min_seconds": 60, "max_seconds": 0.5, "target_ci_width": 1e-12}
})";
// min_seconds counts sampled time, which microsecond samples never reach in
// the half second max_seconds allows: the run always ends on the time limit,
// never on a confidence interval that timer quantization can make zero.

class CliMeasurement : public TempDirectoryTest {
 protected:
  std::string small() const { return write("small.json", kSmallScenario).string(); }
  std::string out(const std::string& name) const { return path(name).string(); }
};

TEST_F(CliMeasurement, MeasurementFlagsOverrideTheScenarioAndAreRecordedWithIt) {
  const CommandResult run = run_attnbench("run " + small() + " --impl cpu.flash --threads 1 --min-samples 7" +
                                          " --max-samples 9 --min-time 0.001 --max-time 2 --target-ci 1e-9" +
                                          " --warmup 0.002 --warmup-iterations 3 --cold -o " + out("r.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(path("r.json"));
  expect_results_schema_valid(results);
  const Json& measure = results["scenarios"][0]["measure"];
  EXPECT_EQ(measure["min_samples"], 7);
  EXPECT_EQ(measure["max_samples"], 9);
  EXPECT_EQ(measure["min_seconds"], 0.001);
  EXPECT_EQ(measure["max_seconds"], 2.0);
  EXPECT_EQ(measure["target_ci_width"], 1e-9);
  EXPECT_EQ(measure["warmup_min_seconds"], 0.002);
  EXPECT_EQ(measure["warmup_min_iterations"], 3);
  EXPECT_EQ(measure["cache"], "cold");
  ASSERT_EQ(results["records"].size(), 2u);
  for (const Json& record : results["records"]) {
    const Json& timing = record["timing"];
    const std::size_t samples = timing["samples_seconds"].size();
    EXPECT_GE(samples, 7u);
    EXPECT_LE(samples, 9u);
    EXPECT_GE(timing["warmup_iterations"].get<int>(), 3);
    EXPECT_EQ(timing["cache"], "cold");
  }

  // A flag the scenario's settings contradict, and values out of range: exit 2, nothing written.
  struct Bad {
    std::string flags, message;
  };
  for (const Bad& bad : {Bad{"--min-samples 6", "--min-samples: min_samples 6 > max_samples 5"},
                         Bad{"--min-samples 0", "--min-samples"},
                         Bad{"--max-time 0", "--max-time"},
                         Bad{"--target-ci nan", "--target-ci"},
                         Bad{"--warmup inf", "--warmup"},
                         Bad{"--max-samples 2.5", "--max-samples"},
                         Bad{"--hot --cold", "--hot"}}) {
    const CommandResult refused = run_attnbench("run " + small() + " " + bad.flags + " -o " + out("bad.json"));
    EXPECT_EQ(refused.exit_code, 2) << bad.flags << "\n" << refused.output;
    EXPECT_NE(refused.output.find(bad.message), std::string::npos) << bad.flags << "\n" << refused.output;
    EXPECT_FALSE(fs::exists(path("bad.json"))) << bad.flags;
  }
}

TEST_F(CliMeasurement, TheSummaryShowsSamplesAndMarksRecordsThatDidNotConverge) {
  // target 1e-9: never narrow enough, so sampling stops at max_samples.
  CommandResult run = run_attnbench("run " + small() + " --threads 1 --min-samples 8 --max-samples 8 --target-ci 1e-9" +
                                    " -o " + out("a.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("+-CI/2 samples"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("      8* "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("samples: * = stopped at max_samples or max_seconds before the CI reached\n"
                            "target_ci_width"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("(- below 6 samples, too few for one)"), std::string::npos) << run.output;
  for (const Json& record : read_json(path("a.json"))["records"]) {
    EXPECT_FALSE(record["timing"]["converged"].get<bool>());
    EXPECT_EQ(record["timing"]["statistics"]["count"], 8);
  }

  // A target any interval meets: converged at the first count with an interval, no mark.
  run = run_attnbench("run " + small() + " --threads 1 --min-samples 1 --max-samples 50 --max-time 5" +
                      " --target-ci 1000 -o " + out("b.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("      6  "), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("6* "), std::string::npos) << run.output;
}

TEST_F(CliMeasurement, ResultsRecordTheLoadThreadsAndTheCacheFigureWithTheirSources) {
  CommandResult run =
      run_attnbench("run " + small() + " --impl cpu.flash --cold --max-samples 3 -o " + out("default.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(path("default.json"));
  expect_results_schema_valid(results);
  const Json& host = results["host"];
  EXPECT_EQ(results["threads_source"], "available_cpus");
  EXPECT_EQ(results["threads"], host["available_cpus"]);
  EXPECT_LE(host["available_cpus"].get<int>(), host["logical_cpus"].get<int>());
  for (const char* when : {"run_start", "run_end"}) {
    ASSERT_TRUE(results["load_average"][when].is_array()) << when;
    EXPECT_EQ(results["load_average"][when].size(), 3u);
  }
  const Json& cpu = results["devices"][0];
  EXPECT_EQ(cpu["kind"], "cpu");
  const bool sysfs = fs::exists("/sys/devices/system/cpu/cpu0/cache/index0/size");
  EXPECT_EQ(cpu["last_level_cache_source"], sysfs ? "sysfs" : cpu["last_level_cache_source"].get<std::string>());
  EXPECT_GE(cpu["last_level_cache_level"].get<int>(), sysfs ? 1 : 0);
  for (const Json& record : results["records"]) {
    EXPECT_EQ(record["timing"]["cache_flush_bytes"], 2 * cpu["last_level_cache_bytes"].get<std::uint64_t>());
  }

  run = run_attnbench("run " + small() + " --threads 1 -o " + out("one.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(read_json(path("one.json"))["threads_source"], "command_line");
}

TEST_F(CliMeasurement, TheDefaultThreadCountIsWhatTheAffinityMaskAllows) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
  if (CPU_COUNT(&original) < 2) GTEST_SKIP() << "needs two CPUs to narrow the mask";
  int first = 0;
  while (!CPU_ISSET(first, &original)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // the child inherits it
  const CommandResult run = run_attnbench("run " + small() + " -o " + out("pinned.json"));
  const CommandResult info = run_attnbench("info --json", Capture::stdout_only);
  ASSERT_EQ(sched_setaffinity(0, sizeof original, &original), 0);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(info.exit_code, 0) << info.output;
  const Json host = Json::parse(info.output)["host"];
  EXPECT_EQ(host["available_cpus"], 1);
  EXPECT_EQ(host["available_cpus_source"], "cpu_affinity");
  EXPECT_GT(host["last_level_cache"]["bytes"].get<std::uint64_t>(), 0u);
  const Json results = read_json(path("pinned.json"));
  EXPECT_EQ(results["threads"], 1);
  EXPECT_EQ(results["host"]["available_cpus"], 1);
  EXPECT_EQ(results["host"]["available_cpus_source"], "cpu_affinity");
  EXPECT_GE(results["host"]["logical_cpus"].get<int>(), 2);
}

// Runs the binary with OMP_WAIT_POLICY=`policy`, and returns the most threads
// its process had at any of the polls made every 10 ms while it ran, not
// counting the signal watcher (harness/results/interruption.hpp), which sleeps in a
// read until a signal comes, the progress display's thread
// (harness/run/progress.hpp), which sleeps between redraws, nor the call
// limit's watchdog (harness/run/call_watchdog.hpp), which sleeps until a
// call's deadline.
int run_watching_threads(const std::string& arguments, const std::string& policy, int& exit_code) {
  const pid_t child = fork();
  if (child == 0) {
    setenv("OMP_WAIT_POLICY", policy.c_str(), 1);
    const std::string command = "exec " + std::string(ATTNBENCH_BINARY) + " " + arguments + " > /dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int most = 0, status = 0;
  const fs::path tasks = "/proc/" + std::to_string(child) + "/task";
  while (waitpid(child, &status, WNOHANG) == 0) {
    int threads = 0;
    std::error_code gone;  // the process may end between the listing and the reads
    for (const auto& task : fs::directory_iterator(tasks, gone)) {
      std::string name;
      std::getline(std::ifstream(task.path() / "comm"), name);
      if (!name.empty() && name != "signal-watcher" && name != "progress" && name != "call-watchdog") ++threads;
    }
    most = std::max(most, threads);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return most;
}

TEST_F(CliMeasurement, NoIdleOpenMpWorkerRunsBesideAOneThreadRunWhateverTheWaitPolicy) {
  // With --threads 1 every parallel region of the harness is one thread, so
  // no worker exists to spin, even when the environment asks workers to spin
  // for minutes; and the tiny case's median is the same under either policy
  // (a generous factor: the machine may be shared).
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: OpenMP makes no second thread";
  const std::string scenario = write("tiniest.json", kTiniestScenario).string();
  double medians[2] = {};
  int index = 0;
  for (const std::string policy : {"active", "passive"}) {
    SCOPED_TRACE("OMP_WAIT_POLICY=" + policy);
    int exit_code = -1;
    const std::string output = out(policy + ".json");
    const int most = run_watching_threads("run " + scenario + " --threads 1 -o " + output, policy, exit_code);
    ASSERT_EQ(exit_code, 0);
    EXPECT_EQ(most, 1) << "a thread beside the one that times the samples";
    const Json timing = read_json(output)["records"][0]["timing"];
    EXPECT_GT(timing["samples_seconds"].size(), 100u);
    medians[index++] = timing["statistics"]["p50"].get<double>();
  }
  EXPECT_LT(std::max(medians[0], medians[1]), 4 * std::min(medians[0], medians[1]))
      << "active " << medians[0] << " s, passive " << medians[1] << " s";
}

TEST_F(CliMeasurement, ListSaysWhatTheRunPreflightWouldSkipWithTheNumbers) {
  // Possible in principle, far beyond this machine: run skips every
  // implementation with the numbers, and list must say the same.
  const std::string huge = write("huge.json", R"({"name": "huge", "description": "does not fit",
    "defaults": {"batch": 4096, "heads": 64, "seqlen": 65536, "head_dim": 128}})").string();
  const CommandResult list = run_attnbench("list --json --threads 1 " + huge);
  ASSERT_EQ(list.exit_code, 0) << list.output;
  const Json listing = Json::parse(list.output);
  const CommandResult run = run_attnbench("run " + huge + " --threads 1 -o " + out("huge_results.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(path("huge_results.json"));
  ASSERT_EQ(results["records"].size(), 3u);
  for (const Json& record : results["records"]) {
    const std::string name = record["implementation"];
    const Json& verdict = listing["scenarios"][0]["cases"][0]["implementations"][name];
    EXPECT_FALSE(verdict["runs"].get<bool>()) << name;
    // The same words and needs; the memory available moves between the two processes.
    const auto needs = [](const Json& reason) {
      const std::string text = reason.get<std::string>();
      return text.substr(0, text.rfind("; "));
    };
    EXPECT_EQ(needs(verdict["reason"]), needs(record["reason"])) << name;
    EXPECT_NE(record["reason"].get<std::string>().find(" TiB"), std::string::npos) << record["reason"];
  }
  const CommandResult text = run_attnbench("list --threads 1 " + huge);
  EXPECT_NE(text.output.find("cpu.standard     skipped: needs "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find(" available"), std::string::npos) << text.output;
}

TEST_F(CliMeasurement, TheQuickScenarioGivesItsOwnGateEnoughSamples) {
  // One real run, and the same run with every sample 0.1% slower: their
  // comparison judges every one of the 24 cells (none inconclusive for lack
  // of samples, whatever the machine's load did to the run; its noise is
  // judged too, --allow-noisy: noise has tests of its own), and passes.
  const CommandResult run = run_attnbench("run " + scenario_path("quick.json") + " -o " + out("base.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  Json next = read_json(path("base.json"));
  for (Json& record : next["records"]) {
    EXPECT_GE(record["timing"]["samples_seconds"].size(), 10u) << record["case_key"];
    for (Json& sample : record["timing"]["samples_seconds"]) sample = sample.get<double>() * 1.001;
  }
  write_json(path("new.json"), next);
  const CommandResult compare =
      run_attnbench("compare " + out("base.json") + " " + out("new.json") + " --allow-noisy --json " + out("compare.json"));
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  const Json json = read_json(path("compare.json"));
  EXPECT_EQ(json["summary"]["cells"], 24);
  EXPECT_EQ(json["summary"]["inconclusive"], 0) << compare.output;
  for (const Json& cell : json["cells"]) EXPECT_EQ(cell["metrics"]["time"]["verdict"], "pass") << cell["case_key"];
}

}  // namespace
}  // namespace attnbench
