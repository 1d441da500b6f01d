// The benchmark body of the Google Benchmark front end; see case_benchmark.hpp.
#include "harness/gbench/case_benchmark.hpp"

#include <cstdint>

namespace attnbench::gbench {

std::string benchmark_name(const Scenario& scenario, const ScenarioCase& scenario_case,
                           const Implementation& implementation) {
  return scenario.name + "/" + std::string(implementation.name()) + "/" + scenario_case.key;
}

void CaseBenchmarks::run(benchmark::State& state, const Scenario& scenario, std::size_t case_index,
                         Implementation& implementation) {
  if (scenario.measure.timing != std::vector<TimingMethod>{TimingMethod::events}) {
    state.SkipWithError("this front end times by events only; the scenario's measure.timing names another method "
                        "(attnbench run gives cupti and graph, docs/design.md section 4.1)");
    return;
  }
  Prepared& prepared = prepare(scenario, case_index, implementation);
  if (!prepared.skip_reason.empty()) {
    state.SkipWithError(prepared.skip_reason.c_str());
    return;
  }
  ImplementationSession& session = *prepared.session;
  const bool cold_cache = scenario.measure.cold_cache;
  try {
    for (auto _ : state) {
      session.before_sample(cold_cache);  // outside the timed interval
      prepared.timer->start();
      session.sample_call();
      state.SetIterationTime(prepared.timer->stop());
    }
  } catch (const std::exception& error) {
    prepared.skip_reason = std::string("error: ") + error.what();
    any_failed_ = true;
    state.SkipWithError(prepared.skip_reason.c_str());
    return;
  }
  report_counters(state, prepared);
}

CaseBenchmarks::Prepared& CaseBenchmarks::prepare(const Scenario& scenario, std::size_t case_index,
                                                  Implementation& implementation) {
  if (prepared_ && prepared_->scenario == &scenario && prepared_->case_index == case_index &&
      prepared_->implementation == &implementation) {
    return *prepared_;
  }
  prepared_.reset();  // before the case data its session refers to
  if (!data_ || data_scenario_ != &scenario || data_case_index_ != case_index) {
    accuracy_.clear();
    data_.reset();
    data_ = std::make_unique<CaseData>(scenario.cases[case_index].problem, scenario.accuracy, threads_);
    data_scenario_ = &scenario;
    data_case_index_ = case_index;
  }
  prepared_ = std::make_unique<Prepared>();
  prepared_->scenario = &scenario;
  prepared_->case_index = case_index;
  prepared_->implementation = &implementation;
  try {
    open_and_check(*prepared_, implementation);
  } catch (const std::exception& error) {
    prepared_->session.reset();
    prepared_->skip_reason = std::string("error: ") + error.what();
    any_failed_ = true;
  }
  return *prepared_;
}

// Validate, then time: the checked call and the accuracy check run once, before
// the first timed iteration.
void CaseBenchmarks::open_and_check(Prepared& prepared, Implementation& implementation) {
  std::unique_ptr<ImplementationSession> session =
      ImplementationSession::open(implementation, *data_, threads_, prepared.skip_reason);
  if (!session) return;
  prepared.counted = session->checked_call();
  if (!session->call_checks().failure.empty()) throw std::runtime_error(session->call_checks().failure);
  const Scenario& scenario = *prepared.scenario;
  if (scenario.accuracy.check && !implementation.is_oracle()) {
    const HostOutputs outputs = session->copy_outputs();
    AccuracyResult accuracy = session->check_accuracy(outputs);
    const Problem& problem = data_->problem();
    if (const AccuracyResult* baseline = baseline_accuracy(implementation)) {
      apply_baseline_rule(accuracy, *baseline, implementation.output_type(problem), scenario.accuracy);
    }
    if (accuracy.status == "failed") {
      prepared.skip_reason = "accuracy: " + accuracy.reason;
      any_failed_ = true;
      return;
    }
    accuracy_[std::string(implementation.name())] = std::move(accuracy);
  }
  prepared.timer = session->backend().make_timer();
  session->prepare_for_timing();
  prepared.session = std::move(session);
}

// The accuracy of `implementation`'s baseline on the current case, checked now
// when its own benchmark has not checked it yet; nullptr when it has none, or
// it cannot run here (then only the per-dtype bound applies, as in `run`).
const AccuracyResult* CaseBenchmarks::baseline_accuracy(const Implementation& implementation) {
  const std::string name(implementation.accuracy_baseline());
  if (name.empty()) return nullptr;
  if (const auto known = accuracy_.find(name); known != accuracy_.end()) return &known->second;
  Implementation* baseline = ImplementationRegistry::instance().find(name);
  std::string unused_reason;
  std::unique_ptr<ImplementationSession> session =
      baseline ? ImplementationSession::open(*baseline, *data_, threads_, unused_reason) : nullptr;
  if (!session) return nullptr;
  session->checked_call();
  return &(accuracy_[name] = session->check_accuracy(session->copy_outputs()));
}

void CaseBenchmarks::report_counters(benchmark::State& state, const Prepared& prepared) const {
  using benchmark::Counter;
  const auto bytes = [](double value) { return Counter(value, Counter::kDefaults, Counter::kIs1024); };
  const Problem& problem = data_->problem();
  const ByteCount compulsory = compulsory_bytes(problem);
  // FLOPs of one call, as a rate over the manual time: FLOP/s.
  state.counters["flops"] = Counter(flop_count(problem).total, Counter::kIsIterationInvariantRate);
  state.counters["compulsory_bytes"] = bytes(compulsory.total());
  state.SetBytesProcessed(static_cast<std::int64_t>(compulsory.total() * static_cast<double>(state.iterations())));
  if (prepared.counted) {
    state.counters["counted_read_bytes"] = bytes(prepared.counted->read);
    state.counters["counted_write_bytes"] = bytes(prepared.counted->write);
  }
  const ImplementationSession& session = *prepared.session;
  const MemoryPlan& memory = session.memory();
  state.counters["peak_bytes"] = bytes(static_cast<double>(session.peak_bytes()));
  state.counters["extra_bytes"] = bytes(static_cast<double>(session.peak_bytes() - memory.inputs - memory.outputs));
}

}  // namespace attnbench::gbench
