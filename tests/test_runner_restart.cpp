// A device error that loses the context (an illegal address on a GPU) must not
// lose finished results nor stop the sweep: the runner records the failure,
// saves the results file, keeps its lock for the restarted process (the same
// process after exec) and asks for a restart that resumes the run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "harness/errors.hpp"
#include "harness/results/file_lock.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/run/call_watchdog.hpp"
#include "harness/run/runner.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;

// A test double whose first forward call ever throws what throw_error()
// throws; it counts every call.
class FailsOnFirstCall : public Implementation {
 public:
  std::string_view device() const override { return "cpu"; }
  Verdict supports(const Problem&) const override { return Verdict::yes(); }
  ElementType output_type(const Problem&) const override { return ElementType::f32; }
  std::size_t workspace_bytes(const Problem&, const ExecutionContext&) const override { return 0; }
  void forward(const Problem&, const AttentionBuffers&, ExecutionContext&) override {
    if (calls_++ == 0) throw_error();
  }
  void backward(const Problem&, const AttentionBuffers&, ExecutionContext&) override {}

 protected:
  // `calls`: the subclass's count, kept across the instances a registry makes.
  explicit FailsOnFirstCall(int& calls) : calls_(calls) {}

 private:
  [[noreturn]] virtual void throw_error() const = 0;
  int& calls_;
};

// Loses its "context": a sticky device error.
class LosesContextOnce final : public FailsOnFirstCall {
 public:
  static inline int calls = 0;
  LosesContextOnce() : FailsOnFirstCall(calls) {}
  std::string_view name() const override { return "test.loses_context"; }
  std::string_view summary() const override { return "test double: a sticky device error on its first call"; }

 private:
  [[noreturn]] void throw_error() const override { throw DeviceError("kernel launch: cudaErrorIllegalAddress (test)", true); }
};

// Its device work "never finishes" (what the cuda backend's limited wait reports).
class TimesOutOnce final : public FailsOnFirstCall {
 public:
  static inline int calls = 0;
  TimesOutOnce() : FailsOnFirstCall(calls) {}
  std::string_view name() const override { return "test.times_out"; }
  std::string_view summary() const override {
    return "test double: device work past the wait limit on its first call";
  }

 private:
  [[noreturn]] void throw_error() const override {
    throw DeviceTimeout("the GPU did not finish the stream's work within 1 s (test)");
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<LosesContextOnce>(); }};
const ImplementationRegistration kTimeoutRegistration{[] { return std::make_unique<TimesOutOnce>(); }};

// Whether another process can take the lock of `target` now.
bool another_process_can_lock(const std::string& target) {
  const pid_t child = fork();
  if (child == 0) {
    try {
      const FileLock lock(target, "-o " + target);
    } catch (const InputError&) {
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A fresh directory named after `stem` holding scenario `name` (sweeping
// `sweep`, one sample per record, no accuracy check) of cpu.flash and
// `implementation`, and the options of `attnbench run` on it, -o in it.
RunOptions restart_run(const std::string& stem, const std::string& name, const std::string& defaults,
                       const std::string& sweep, const std::string& implementation) {
  const fs::path directory = fs::path(::testing::TempDir()) / (stem + "_" + std::to_string(getpid()));
  fs::remove_all(directory);
  fs::create_directories(directory);
  const fs::path scenario = directory / (name + ".json");
  std::ofstream(scenario) << R"({"name": ")" << name << R"(", "description": "a sweep",
    "defaults": )" << defaults << R"(, "sweep": )" << sweep << R"(,
    "implementations": ["cpu.flash", ")" << implementation << R"("],
    "accuracy": {"check": false},
    "measure": {"cache": "hot", "warmup_min_iterations": 0, "warmup_min_seconds": 0, "min_samples": 1,
                "max_samples": 1, "min_seconds": 0, "max_seconds": 1}})";
  RunOptions options;
  options.scenario_paths = {scenario.string()};
  options.output_path = (directory / "results.json").string();
  options.threads = 1;
  options.command_line = {"attnbench", "run"};
  return options;
}

TEST(RunnerRestart, ALostContextSavesTheRecordsAndAsksToResume) {
  RunOptions options = restart_run("attnbench_restart", "lost",
                                   R"({"batch": 1, "heads": 1, "head_dim": 8, "seqlen": 16})",
                                   R"({"causal": [false, true]})", "test.loses_context");

  try {
    run_scenarios(options);
    FAIL() << "expected RestartRequired";
  } catch (const RestartRequired& restart) {
    EXPECT_EQ(restart.results_path(), options.output_path);
  }
  const auto saved = load_results_file(options.output_path);
  ASSERT_EQ(saved["records"].size(), 2u) << "the first case, including the failed record, is saved";
  EXPECT_EQ(saved["records"][1]["status"], "failed");
  EXPECT_NE(saved["records"][1]["reason"].get<std::string>().find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_FALSE(saved["complete"].get<bool>());
  EXPECT_FALSE(fs::exists(journal_path(options.output_path))) << "the results file holds everything";
  EXPECT_FALSE(another_process_can_lock(options.output_path)) << "the lock is kept for the restarted process";

  options.resume = true;  // what the restarted process runs
  EXPECT_EQ(run_scenarios(options), kExitGateFailed) << "one record failed";
  const auto finished = load_results_file(options.output_path);
  EXPECT_TRUE(finished["complete"].get<bool>());
  ASSERT_EQ(finished["records"].size(), 4u);
  EXPECT_EQ(finished["records"][3]["status"], "ok") << "the sweep went on after the restart";
  EXPECT_TRUE(another_process_can_lock(options.output_path)) << "released at the end";
  EXPECT_FALSE(fs::exists(lock_file_path(options.output_path)));
  fs::remove_all(fs::path(options.output_path).parent_path());
}

// A kernel that never ends fails its case as a timeout and, after the restart,
// the implementation's later cases fail without being run (each would wait the
// whole limit again), while the other implementations go on.
TEST(RunnerRestart, AfterATimeoutTheImplementationsLaterCasesFailWithoutRunning) {
  RunOptions options = restart_run("attnbench_timeout", "hang", R"({"batch": 1, "heads": 1, "head_dim": 8})",
                                   R"({"seqlen": [16, 24, 32]})", "test.times_out");

  EXPECT_THROW(run_scenarios(options), RestartRequired);
  const auto saved = load_results_file(options.output_path);
  ASSERT_EQ(saved["records"].size(), 2u);
  const std::string first_case = "hang/" + saved["records"][1]["case_key"].get<std::string>();
  EXPECT_EQ(saved["records"][1]["status"], "failed");
  EXPECT_EQ(saved["records"][1]["reason"], "timeout: the GPU did not finish the stream's work within 1 s (test)");

  options.resume = true;  // what the restarted process runs
  EXPECT_EQ(run_scenarios(options), kExitGateFailed);
  EXPECT_EQ(TimesOutOnce::calls, 1) << "no later case of the implementation that timed out was run";
  const auto finished = load_results_file(options.output_path);
  ASSERT_EQ(finished["records"].size(), 6u);
  for (const auto& record : finished["records"]) {
    if (record["implementation"] == "cpu.flash") {
      EXPECT_EQ(record["status"], "ok") << record["case_key"];
    } else if (record["case_index"] != 0) {
      EXPECT_EQ(record["status"], "failed");
      EXPECT_EQ(record["reason"], "timeout: not run: test.times_out's case " + first_case +
                                      " did not finish within its time limit (the device wait limit or "
                                      "--call-limit) earlier in this run, so none of its later cases are run");
    }
  }
  fs::remove_all(fs::path(options.output_path).parent_path());
}

// The host call limit's watchdog fires only when no call finishes within the
// limit: calls that beat it in time never trip it, however long they take
// together; a stretch with no beat does, once, naming what it watched.
TEST(CallWatchdog, FiresOnlyWhenNoCallFinishesWithinTheLimit) {
  std::mutex mutex;
  std::vector<std::pair<std::string, double>> expired;
  CallWatchdog watchdog([&](const std::string& what, double limit) {
    const std::lock_guard<std::mutex> guard(mutex);
    expired.emplace_back(what, limit);
  });
  {
    const CallWatchdog::Scope calls(&watchdog, "beating calls", 0.4);
    for (int call = 0; call < 16; ++call) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      calls.beat();
    }
  }
  {
    const CallWatchdog::Scope unwatched(&watchdog, "no limit", 0);
    const CallWatchdog::Scope no_watchdog(nullptr, "no watchdog", 0.01);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  {
    const std::lock_guard<std::mutex> guard(mutex);
    EXPECT_TRUE(expired.empty());
  }
  {
    const CallWatchdog::Scope stuck(&watchdog, "a stuck call", 0.05);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  const std::lock_guard<std::mutex> guard(mutex);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].first, "a stuck call");
  EXPECT_DOUBLE_EQ(expired[0].second, 0.05);
}

}  // namespace
}  // namespace attnbench
