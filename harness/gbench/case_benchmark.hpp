// The body of the Google Benchmark front end's benchmarks: one per (scenario
// case, implementation), named "<scenario>/<implementation>/<case_key>". A body
// sets its case up on first use, through the same CaseData and
// ImplementationSession as `attnbench run` (so filtered-out cases cost nothing),
// validates before it times (one checked call on poisoned outputs, then the
// accuracy check, including the fused-versus-baseline rule), and then times one
// sample per iteration with the backend's own timer as manual time, the cache
// flush (cold mode) outside the timed interval. A case that cannot run here, or
// fails its check, is reported with SkipWithError and the run goes on.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <benchmark/benchmark.h>

#include "harness/implementation.hpp"
#include "harness/scenario/scenario.hpp"
#include "harness/measure/session.hpp"

namespace attnbench::gbench {

std::string benchmark_name(const Scenario& scenario, const ScenarioCase& scenario_case,
                           const Implementation& implementation);

// Holds the set-up of one (case, implementation) at a time: Google Benchmark
// calls a body several times in a row (to size the iteration count, and once
// per repetition), and moves on to the next benchmark only after that.
class CaseBenchmarks {
 public:
  explicit CaseBenchmarks(int threads) : threads_(threads) {}

  void run(benchmark::State& state, const Scenario& scenario, std::size_t case_index, Implementation& implementation);

  // Whether a case failed its accuracy check or raised an error (a case that
  // cannot run here is not a failure).
  bool any_failed() const { return any_failed_; }

 private:
  struct Prepared {
    const Scenario* scenario = nullptr;
    std::size_t case_index = 0;
    const Implementation* implementation = nullptr;
    std::string skip_reason;  // non-empty: reported with SkipWithError
    std::unique_ptr<ImplementationSession> session;
    std::unique_ptr<SampleTimer> timer;
    std::optional<ByteCount> counted;
  };

  Prepared& prepare(const Scenario& scenario, std::size_t case_index, Implementation& implementation);
  void open_and_check(Prepared& prepared, Implementation& implementation);
  const AccuracyResult* baseline_accuracy(const Implementation& implementation);
  void report_counters(benchmark::State& state, const Prepared& prepared) const;

  int threads_;
  bool any_failed_ = false;
  // The current case (inputs, oracle, the accuracy of the implementations checked
  // on it), then the current (case, implementation); the session refers to the data.
  const Scenario* data_scenario_ = nullptr;
  std::size_t data_case_index_ = 0;
  std::unique_ptr<CaseData> data_;
  std::map<std::string, AccuracyResult> accuracy_;
  std::unique_ptr<Prepared> prepared_;
};

}  // namespace attnbench::gbench
