#include "harness/run/runner.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "harness/measure/accuracy.hpp"
#include "harness/backend.hpp"
#include "harness/blas.hpp"
#include "harness/errors.hpp"
#include "harness/results/file_lock.hpp"
#include "harness/format.hpp"
#include "harness/host_info.hpp"
#include "harness/machine_check.hpp"
#include "harness/measure/inputs.hpp"
#include "harness/measure/noise.hpp"
#include "harness/results/interruption.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/measure/protocol.hpp"
#include "harness/message_text.hpp"
#include "harness/plugin/call_audit.hpp"
#include "harness/plugin/loader.hpp"
#include "harness/results/npy.hpp"
#include "harness/common/problem_json.hpp"
#include "harness/measure/profiler.hpp"
#include "harness/run/case_estimate.hpp"
#include "harness/run/progress.hpp"
#include "harness/run/selection.hpp"
#include "harness/run/summary.hpp"
#include "harness/measure/calibration.hpp"
#include "harness/results/document.hpp"
#include "harness/results/output.hpp"
#include "harness/results/run_identity.hpp"
#include "harness/measure/session.hpp"
#include "harness/measure/statistics.hpp"
#include "harness/measure/timing_methods.hpp"
#include "harness/measure/trace.hpp"
#include "harness/user_paths.hpp"
#include "harness/measure/traffic_model.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

Json measure_settings_json(const MeasureSettings& m) {
  return Json{{"warmup_min_iterations", m.warmup_min_iterations},
              {"warmup_min_seconds", m.warmup_min_seconds},
              {"warmup_window", m.warmup_window},
              {"warmup_max_seconds", m.warmup_max_seconds},
              {"min_samples", m.min_samples},
              {"max_samples", m.max_samples},
              {"min_seconds", m.min_seconds},
              {"max_seconds", m.max_seconds},
              {"target_ci_width", m.target_ci_width},
              {"cache", m.cold_cache ? "cold" : "hot"},
              {"timing", timing_method_names(m.timing)},
              {"graph_calls", m.graph_calls},
              {"clock_mark_share", m.clock_mark_share}};
}

Json accuracy_settings_json(const AccuracySettings& a) {
  return Json{{"check", a.check},
              {"max_oracle_macs", a.max_oracle_macs},
              {"seed", a.seed},
              {"floor_factor", a.floor_factor},
              {"bound", {{"fp64", a.bound.at(ElementType::f64)},
                         {"fp32", a.bound.at(ElementType::f32)},
                         {"fp16", a.bound.at(ElementType::f16)},
                         {"bf16", a.bound.at(ElementType::bf16)}}}};
}

Json bytes_json(double read, double write) { return Json{{"read_bytes", read}, {"write_bytes", write}}; }

// Why samples that span a stop of the process are not like the others.
std::string stopped_samples_warning(const Measurement& measurement) {
  std::string numbers;
  double longest = 0;
  for (std::size_t index : measurement.stopped_samples) {
    numbers += (numbers.empty() ? "" : ", ") + std::to_string(index);
    longest = std::max(longest, measurement.samples_seconds[index]);
  }
  // Numbered as timing.stopped_samples lists them: indices into samples_seconds, from 0.
  return "the process was stopped (SIGSTOP or Ctrl-Z) during samples_seconds[" + numbers + "] (" +
         format_seconds(longest) +
         "; the median is " + format_seconds(measurement.statistics.p50) +
         "): kept, the median and its interval are robust to it, the mean, max and stddev are not";
}

// What one scenario runs with, after command-line overrides.
struct PlannedScenario {
  const Scenario* scenario;
  std::vector<Implementation*> implementations;
  MeasureSettings measure;
  std::vector<std::size_t> cases;  // indices into scenario->cases that pass --filter
  Json settings;                   // what each of its records carries (record_settings)
};

std::vector<std::int64_t> tensor_shape(const Problem& p, std::int64_t seqlen, std::int64_t heads) {
  if (p.layout == Layout::bshd) return {p.batch, seqlen, heads, p.head_dim};
  return {p.batch, heads, seqlen, p.head_dim};
}

std::string dump_index_path(const std::string& directory) { return (fs::path(directory) / "index.json").string(); }

class CaseDumper {
 public:
  // Takes the lock of the index. When resuming, the arrays an earlier run
  // listed stay in the index; otherwise an existing index is replaced only
  // with --overwrite.
  // Each scenario's arrays go in a subdirectory named after it, made (or
  // found) here, before anything is measured: one that is a symbolic link, or
  // not a directory, is refused.
  CaseDumper(std::string directory, ExistingResults existing, const std::vector<PlannedScenario>& plan)
      : directory_(std::move(directory)) {
    if (!enabled()) return;
    const std::string index = dump_index_path(directory_);
    lock_.emplace(index, "--dump " + directory_);
    remove_stale_temporaries(index);
    for (const PlannedScenario& planned : plan) open_scenario_directory(planned.scenario->name);
    if (existing == ExistingResults::refuse && fs::exists(index)) {
      throw InputError("--dump " + directory_ + ": holds the arrays of an earlier run (" + index +
                       "); continue that run with --resume, or replace them with --overwrite");
    }
    if (existing != ExistingResults::resume || !fs::exists(index)) return;
    std::vector<Diagnostic> diagnostics;
    const Json previous = parse_json_file(index, kResultsFileBound, diagnostics);  // a file attnbench wrote
    if (!diagnostics.empty()) throw InputError(diagnostics);
    if (previous.contains("arrays") && previous["arrays"].is_array()) index_ = previous["arrays"];
  }
  CaseDumper(const CaseDumper&) = delete;
  CaseDumper& operator=(const CaseDumper&) = delete;
  ~CaseDumper() {
    for (const auto& [name, descriptor] : scenario_directories_) close(descriptor);
  }
  bool enabled() const { return !directory_.empty(); }
  void keep_lock_across_exec() {
    if (lock_) lock_->keep_across_exec();
  }
  void release_lock() {
    if (lock_) lock_->release();
  }

  void write(const std::string& scenario, std::size_t case_index, const std::string& case_key,
             const std::string& implementation, const std::string& tensor, const TensorBuffer& buffer,
             const std::vector<std::int64_t>& shape, const std::string& layout) {
    if (!enabled() || buffer.elements == 0) return;
    const std::string name = "case" + std::to_string(case_index) + "." + implementation + "." + tensor + ".npy";
    const std::string relative = scenario + "/" + name;
    write_npy(scenario_directories_.at(scenario), name, (fs::path(directory_) / relative).string(), buffer.data,
              buffer.type, shape);
    index_.push_back(Json{{"file", relative},
                          {"scenario", scenario},
                          {"case_index", case_index},
                          {"case_key", case_key},
                          {"implementation", implementation},
                          {"tensor", tensor},
                          {"shape", shape},
                          {"layout", layout},
                          {"dtype", element_type_name(buffer.type)},
                          {"npy_descr", npy_descr(buffer.type)}});
  }

  void write_index() const {
    if (!enabled()) return;
    write_file_atomically(dump_index_path(directory_),
                          Json{{"schema", "attnbench.dump/1"},
                               {"note", "bf16 arrays are stored as their raw uint16 bits"},
                               {"arrays", index_}}
                                  .dump(1) +
                              "\n");
  }

 private:
  void open_scenario_directory(const std::string& scenario) {
    if (scenario_directories_.count(scenario)) return;
    const std::string shown = (fs::path(directory_) / scenario).string();
    if (mkdirat(lock_->directory(), scenario.c_str(), 0755) != 0 && errno != EEXIST) {
      throw InputError("--dump " + directory_ + ": cannot make " + shown + " (" + std::strerror(errno) + ")");
    }
    const int descriptor = openat(lock_->directory(), scenario.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (descriptor < 0) {
      const int error = errno;
      lock_->refuse_symbolic_link(scenario, "--dump " + directory_);
      throw InputError("--dump " + directory_ + ": cannot open " + shown + " as a directory (" +
                       std::strerror(error) + ")");
    }
    scenario_directories_.emplace(scenario, descriptor);
  }

  std::string directory_;
  std::optional<FileLock> lock_;
  std::map<std::string, int> scenario_directories_;  // each scenario's subdirectory, opened without following links
  Json index_ = Json::array();
};

struct ProfileSettings {
  bool enabled = true;
  bool per_kernel = false;
};

// --memory-only calls an implementation once only when that call takes at
// most this long (at its rate on earlier cases, or the host calibration's);
// otherwise its memory is the arena plan.
constexpr double kMemoryOnlyCallSeconds = 20;

// The reason of a record whose device work did not finish within the wait
// limit (DeviceTimeout), or whose host call did not return within the call
// limit, starts with this, as does that of each later case of the
// implementation, which the run records without running.
constexpr std::string_view kTimeoutReason = "timeout: ";

class ScenarioRunner {
 public:
  // `restart(why)` restarts the process to resume the run, from the call
  // limit's watchdog thread; it does not return.
  ScenarioRunner(int threads, ProfileSettings profile, bool memory_only, ResultsOutput& results, CaseDumper& dumper,
                 std::optional<double> host_gemm_rate, double call_limit_seconds,
                 std::function<void(const std::string& why)> restart)
      : threads_(threads),
        profile_(profile),
        memory_only_(memory_only),
        results_(results),
        dumper_(dumper),
        estimator_(host_gemm_rate),
        call_limit_seconds_(call_limit_seconds),
        restart_(std::move(restart)),
        watchdog_([this](const std::string& what, double limit) { restart_after_timeout(what, limit); }) {
    // A resumed run knows its timeouts from the records it continues.
    for (const Json& record : results_.document().json()["records"]) {
      const auto reason = record.find("reason");
      if (record["status"] == "failed" && reason != record.end() && reason->is_string() &&
          reason->get<std::string>().starts_with(kTimeoutReason)) {
        timed_out_in_.emplace(record["implementation"].get<std::string>(),
                              record["scenario"].get<std::string>() + "/" + record["case_key"].get<std::string>());
      }
    }
  }

  // The backends this run used, for their clocks at the end of the run.
  const std::vector<Backend*>& backends_used() const { return backends_used_; }

  // Runs every implementation on one case; returns its records.
  std::vector<Json> run_case(const PlannedScenario& planned, std::size_t case_index, Progress& progress) {
    const Scenario& scenario = *planned.scenario;
    const ScenarioCase& scenario_case = scenario.cases[case_index];
    CaseData data(scenario_case.problem, scenario.accuracy, threads_);
    bool inputs_dumped = false;
    const TraceRange case_range("case " + scenario.name + "#" + std::to_string(case_index));

    std::vector<Json> records;
    std::vector<std::pair<Implementation*, AccuracyResult>> accuracy;
    for (Implementation* implementation : planned.implementations) {
      if (results_.has_record(scenario.name, scenario_case.key, std::string(implementation->name()))) continue;
      progress.start_implementation(std::string(implementation->name()));
      const std::string label = scenario.name + "#" + std::to_string(case_index);
      const TraceRange implementation_range(std::string(implementation->name()));
      Json record = base_record(planned, case_index, *implementation);
      const std::string name(implementation->name());
      if (const Json* crash = results_.crashed_in(scenario.name, scenario_case.key, name)) {
        record["status"] = "failed";
        if (crash->contains("timeout_seconds")) {
          record["reason"] = std::string(kTimeoutReason) + name + " did not return from a call of this case within " +
                             format_seconds((*crash)["timeout_seconds"].get<double>()) +
                             " (--call-limit) in the run --resume continued, which restarted itself; it is recorded "
                             "as failed instead of being run again";
          timed_out_in_.emplace(name, scenario.name + "/" + scenario_case.key);
        } else {
          const int signal = (*crash)["signal"].get<int>();
          record["reason"] = "the process died in this case of signal " + std::to_string(signal) + " (" +
                             strsignal(signal) + ") while " + name +
                             " ran, in the run --resume continued; it is recorded as failed instead of being run "
                             "again";
        }
        records.push_back(std::move(record));
        continue;
      }
      if (const auto timed_out = timed_out_in_.find(name); timed_out != timed_out_in_.end()) {
        record["status"] = "failed";
        record["reason"] = std::string(kTimeoutReason) + "not run: " + name + "'s case " + timed_out->second +
                           " did not finish within its time limit (the device wait limit or --call-limit) earlier "
                           "in this run, so none of its later cases are run";
        records.push_back(std::move(record));
        continue;
      }
      crash_note_ = results_.note_crashes_in(scenario.name, scenario_case.key, name);
      const int calls = memory_only_ ? 1 : minimum_calls(planned.measure);
      const std::string kind = rate_kind(std::string(implementation->name()), scenario_case.problem);
      const bool on_host = implementation->device() == "cpu";
      const double flops = flop_count(scenario_case.problem).total;
      // Only for a case that runs: a small case of one that crashed or timed out before would meet the same.
      if (on_host) measure_small_case(*implementation, scenario, scenario_case.problem, calls, label, progress);
      const std::optional<CaseEstimate> estimate = estimator_.estimate(kind, on_host, flops, calls);
      if (estimate && !memory_only_) progress.expect_remaining(estimate->seconds);
      // (--memory-only plans a call that long instead of making it.)
      if (!memory_only_ && estimate && estimate->seconds > kLongCaseSeconds) {
        progress.note(long_case_note(label, std::string(implementation->name()), *estimate));
      }
      std::optional<AccuracyResult> checked;
      try {
        const std::string not_run = memory_only_ ? reason_not_to_call(*implementation, scenario_case.problem, estimate)
                                                 : std::string();
        std::string skip_reason;
        std::unique_ptr<ImplementationSession> session;
        if (not_run.empty()) {
          const TraceRange setup_range("setup");
          const CallWatchdog::Scope watched = watch(*implementation, "set-up (supports, workspace_bytes)", label);
          session = ImplementationSession::open(*implementation, data, threads_, skip_reason);
        }
        if (!not_run.empty()) {
          record_planned_memory(*implementation, scenario_case.problem, record, not_run);
        } else if (!session) {
          record["status"] = "skipped";
          record["reason"] = skip_reason;
        } else {
          note_device(session->backend(), planned.measure);
          if (!inputs_dumped) dump_inputs(scenario, data, case_index, scenario_case.key);
          inputs_dumped = true;
          checked = memory_only_ ? measure_memory(planned, *session, record, case_index, scenario_case.key, progress)
                                 : measure_implementation(planned, *session, record, case_index, scenario_case.key,
                                                          progress, estimate);
        }
      } catch (const DeviceTimeout& error) {
        record["status"] = "failed";
        record["reason"] = std::string(kTimeoutReason) + error.what();
        context_lost_ = true;  // the restarted process reads the timeout from this record
      } catch (const DeviceError& error) {
        record["status"] = "failed";
        record["reason"] = std::string("error: ") + error.what();
        context_lost_ = context_lost_ || error.context_lost();
      } catch (const std::exception& error) {
        record["status"] = "failed";
        record["reason"] = std::string("error: ") + error.what();
      }
      crash_note_.reset();
      if (checked) accuracy.emplace_back(implementation, std::move(*checked));
      records.push_back(std::move(record));
      if (context_lost_) break;  // nothing more can run in this process
    }
    settle_accuracy(scenario, scenario_case.problem, accuracy, records);
    return records;
  }

 private:
  Json base_record(const PlannedScenario& planned, std::size_t case_index, const Implementation& implementation) {
    const Scenario& scenario = *planned.scenario;
    const ScenarioCase& scenario_case = scenario.cases[case_index];
    const Problem& p = scenario_case.problem;
    const ByteCount compulsory = compulsory_bytes(p);
    const std::optional<TrafficModel> modelled = implementation.modelled_traffic(p);
    Json record{{"scenario", scenario.name},
                {"case_index", case_index},
                {"case_key", scenario_case.key},
                {"case_origin", scenario_case.origin},
                {"implementation", implementation.name()},
                {"device", implementation.device()},
                {"settings", planned.settings},
                {"problem", problem_to_json(p)},
                {"status", "ok"},
                {"reason", ""},
                {"configuration", Json::object()},
                {"flops", flops_to_json(p)},
                {"timing", nullptr},
                {"memory", nullptr},
                {"traffic", {{"compulsory", bytes_json(compulsory.read, compulsory.write)},
                             {"counted", nullptr},
                             {"measured", nullptr},
                             {"modelled", modelled ? modelled->to_json() : Json(nullptr)},
                             {"ratio_to_modelled", {{"measured", nullptr}, {"counted", nullptr}}}}},
                {"accuracy", nullptr}};
    if (Json plugin = implementation.plugin_identity(); !plugin.is_null()) record["plugin"] = std::move(plugin);
    return record;
  }

  // The device's description and its clocks, when the run first uses it.
  // Where the run may time with "cupti", what CUPTI's activity records cost
  // a launch, measured once.
  void note_device(Backend& backend, const MeasureSettings& settings) {
    if (std::find(backends_used_.begin(), backends_used_.end(), &backend) == backends_used_.end()) {
      backends_used_.push_back(&backend);
      Json description = backend.describe();
      const bool cupti = std::find(settings.timing.begin(), settings.timing.end(), TimingMethod::cupti) !=
                         settings.timing.end();
      if (cupti && !memory_only_ && backend.timing_method(TimingMethod::cupti).ok) {
        description["kernel_timer_cost"] = backend.kernel_timer_cost();
      }
      results_.note_device(description, backend.read_clocks());
    }
  }

  // traffic.measured: null for host implementations (nothing to profile);
  // otherwise what the profiling pass collected, or why it did not run.
  Json profile_implementation(ImplementationSession& session) {
    Backend& backend = session.backend();
    if (backend.kind() == BackendKind::host) return nullptr;
    if (!profile_.enabled) return measured_traffic_json(ProfileResult::not_collected("skipped", "--no-profile"));
    DeviceProfiler* profiler = backend.profiler();
    if (!profiler) {
      return measured_traffic_json(ProfileResult::not_collected(
          "unavailable", "the " + std::string(backend.device()) + " backend has no hardware-counter profiler"));
    }
    return measured_traffic_json(session.profile(*profiler, profile_.per_kernel));
  }

  // The checked call and the accuracy check into `record`: the accuracy
  // result when the outputs were checked against the oracle, and how long the
  // call took.
  struct Checked {
    std::optional<AccuracyResult> accuracy;
    double call_seconds = 0;
  };
  Checked check_implementation(const PlannedScenario& planned, ImplementationSession& session, Json& record,
                               std::size_t case_index, const std::string& case_key, Progress& progress) {
    const Scenario& scenario = *planned.scenario;
    const Implementation& implementation = session.implementation();
    const Problem& p = scenario.cases[case_index].problem;
    record["configuration"] = session.configuration();
    progress.set_phase("check");
    Checked checked;
    const auto start = std::chrono::steady_clock::now();
    {
      const CallWatchdog::Scope watched =
          watch(implementation, "checked call", scenario.name + "#" + std::to_string(case_index));
      if (const std::optional<ByteCount> counted = session.checked_call()) {
        record["traffic"]["counted"] = bytes_json(counted->read, counted->write);
      }
    }
    checked.call_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const CallChecks& checks = session.call_checks();
    if (!checks.findings.is_null()) record["plugin"]["checks"] = checks.findings;
    for (const std::string& warning : checks.warnings) record["warnings"].push_back(warning);
    if (!checks.failure.empty()) throw std::runtime_error(checks.failure);
    const bool check = scenario.accuracy.check && !implementation.is_oracle();
    if (check || dumper_.enabled()) {
      const HostOutputs host = session.copy_outputs();
      dump_outputs(scenario, p, case_index, case_key, implementation, host);
      if (check) checked.accuracy = session.check_accuracy(host);
    }
    if (!check) {
      record["accuracy"] = not_checked(implementation.is_oracle() ? "oracle" : "not_checked",
                                       implementation.is_oracle() ? "this implementation is the oracle"
                                                                  : "accuracy.check is false");
    }
    return checked;
  }

  static Json not_checked(const std::string& status, const std::string& reason) {
    AccuracyResult result;
    result.status = status;
    result.reason = reason;
    Json accuracy = result.to_json();
    accuracy["sample"] = nullptr;
    return accuracy;
  }

  // The record's memory: the plan's parts and the peak, measured (the arena's
  // high-water mark) or planned (the plan, not run).
  static Json memory_json(const MemoryPlan& plan, std::size_t peak_bytes, const char* source) {
    return Json{{"peak_bytes", peak_bytes},
                {"input_bytes", plan.inputs},
                {"output_bytes", plan.outputs},
                {"workspace_bytes", plan.workspace},
                {"extra_bytes", peak_bytes - plan.inputs - plan.outputs},
                {"source", source}};
  }

  static void set_traffic_ratios(Json& record, const Implementation& implementation, const Problem& p) {
    Json& traffic = record["traffic"];
    const std::optional<TrafficModel> modelled = implementation.modelled_traffic(p);
    traffic["ratio_to_modelled"] = Json{{"measured", traffic_ratio(traffic["measured"], modelled)},
                                        {"counted", traffic_ratio(traffic["counted"], modelled)}};
  }

  // The implementation's own rate on a small case of the same kind
  // (small_case_of), before a case of a kind no case of representative size
  // has measured yet and that the host's GEMM rate says may take long: one
  // untimed call, then one timed. Whatever fails here, the case itself will
  // meet and record; the estimate then falls back on the GEMM rate.
  void measure_small_case(Implementation& implementation, const Scenario& scenario, const Problem& problem, int calls,
                          const std::string& label, Progress& progress) {
    const std::string kind = rate_kind(std::string(implementation.name()), problem);
    if (!estimator_.needs_small_case(kind, flop_count(problem).total, calls)) return;
    if (!small_cases_tried_.insert(kind).second) return;
    const std::optional<Problem> small = small_case_of(problem);
    if (!small) return;
    progress.set_phase("its rate on a small case");
    try {
      const CallWatchdog::Scope watched = watch(implementation, "calls on a small case of the same kind", label);
      CaseData data(*small, scenario.accuracy, threads_);
      std::string skip_reason;
      const std::unique_ptr<ImplementationSession> session =
          ImplementationSession::open(implementation, data, threads_, skip_reason);
      if (!session) return;
      session->checked_call();
      session->prepare_for_timing();
      const auto start = std::chrono::steady_clock::now();
      session->sample_call();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      estimator_.record(kind, flop_count(*small).total, seconds,
                        "a small case of the same kind (" + short_case_label(problem_to_json(*small)) +
                            ", measured first)");
    } catch (const std::exception&) {
      return;
    }
  }

  // --memory-only: why `implementation` is not called on `problem` (its
  // memory is planned instead), or "" when it runs once: its device is absent,
  // or one call would take longer than kMemoryOnlyCallSeconds. A problem it
  // does not support is neither (the session's pre-flight skips it).
  std::string reason_not_to_call(const Implementation& implementation, const Problem& problem,
                                 const std::optional<CaseEstimate>& one_call) const {
    if (!implementation.supports(problem).ok) return "";
    const Verdict available = implementation.availability();
    if (!available.ok) return "its device is not here (" + available.reason + ")";
    if (one_call && one_call->seconds > kMemoryOnlyCallSeconds) {
      // Where it would not fit either, say so: the paper's tables show that as OOM.
      const std::string fit = preflight(implementation, problem, threads_, true).skip_reason;
      return "one call would take " + std::string(one_call->lower_bound ? "at least " : "about ") +
             format_duration(one_call->seconds) + " (" +
             format_scientific(one_call->flops_per_call) + " FLOP at " + format_flops_rate(one_call->flops_per_second) +
             ", " + one_call->rate_source + ")" + (fit.empty() ? "" : "; nor would it fit here: " + fit);
    }
    return "";
  }

  // --memory-only, not called: the arena plan as the record's memory.
  void record_planned_memory(const Implementation& implementation, const Problem& problem, Json& record,
                             const std::string& why) {
    const MemoryPlan plan = plan_memory(implementation, problem, threads_);
    record["memory"] = memory_json(plan, plan.total(), "planned");
    record["reason"] = "memory planned, not run: " + why;
    record["accuracy"] = not_checked("not_checked", "not run (--memory-only): its memory is the arena plan");
    set_traffic_ratios(record, implementation, problem);
  }

  // --memory-only, called: the checked call once with its accuracy check, the
  // arena's high-water mark as the memory, no timing.
  std::optional<AccuracyResult> measure_memory(const PlannedScenario& planned, ImplementationSession& session,
                                               Json& record, std::size_t case_index, const std::string& case_key,
                                               Progress& progress) {
    const Problem& p = planned.scenario->cases[case_index].problem;
    const Checked checked = check_implementation(planned, session, record, case_index, case_key, progress);
    record["memory"] = memory_json(session.memory(), session.peak_bytes(), "measured");
    estimator_.record(rate_kind(std::string(session.implementation().name()), p), flop_count(p).total,
                      checked.call_seconds);
    set_traffic_ratios(record, session.implementation(), p);
    return checked.accuracy;
  }

  // Checks and times one implementation into `record`; returns the accuracy
  // result when the outputs were checked against the oracle. `estimate` is
  // what was said before (or nullopt): a first call far longer is said too.
  std::optional<AccuracyResult> measure_implementation(const PlannedScenario& planned, ImplementationSession& session,
                                                       Json& record, std::size_t case_index,
                                                       const std::string& case_key, Progress& progress,
                                                       const std::optional<CaseEstimate>& estimate) {
    const Scenario& scenario = *planned.scenario;
    const Implementation& implementation = session.implementation();
    const std::string name(implementation.name());
    const Problem& p = scenario.cases[case_index].problem;
    const MeasureSettings settings = session.timing_settings(planned.measure);

    const Checked checked = check_implementation(planned, session, record, case_index, case_key, progress);
    const int calls_left = minimum_calls(settings) - 1;
    const double seconds_left = checked.call_seconds * calls_left;
    progress.expect_remaining(seconds_left);
    const bool announced = estimate && estimate->seconds > kLongCaseSeconds;
    if (seconds_left > kLongCaseSeconds && (!announced || seconds_left > 2 * estimate->seconds)) {
      progress.note(
          long_call_note(scenario.name + "#" + std::to_string(case_index), name, checked.call_seconds, calls_left));
    }

    const Json clocks_before = session.backend().read_clocks();
    const HostActivityProbe host_probe;
    const std::string of_samples = " of at least " + std::to_string(settings.min_samples);
    Measurement measurement;
    try {
      const CallWatchdog::Scope watched =
          watch(implementation, "warm-up and timed calls", scenario.name + "#" + std::to_string(case_index));
      measurement = session.measure(planned.measure, [&](int warmup_calls, int samples) {
        watched.beat();  // between calls, outside the timed samples
        progress.set_phase(samples == 0 ? "warm-up call " + std::to_string(warmup_calls)
                                        : "sample " + std::to_string(samples) + of_samples);
      });
    } catch (const CaptureRefused& refused) {
      record["status"] = "skipped";
      record["reason"] = std::string("timing: ") + refused.what();
      return checked.accuracy;
    }
    const Json clocks_after = session.backend().read_clocks();
    const HostActivity host_activity = host_probe.finish();
    const NoiseAssessment noise = assess_noise(measurement.samples_seconds, host_activity);
    ThrottleVerdict throttling = judge_throttling(clocks_before, clocks_after);
    const ClockMarks marks = mark_clocks(measurement.sm_mhz, highest_sm_mhz_, settings.clock_mark_share);
    highest_sm_mhz_ = marks.highest_mhz;
    add_clock_marks(throttling, marks, measurement.sm_mhz);
    const double median = measurement.statistics.p50;
    const FlopCount flops = flop_count(p);
    const ByteCount compulsory = compulsory_bytes(p);
    record["timing"] = Json{{"clock", session.backend().clock_name()},
                            {"method", std::string(to_string(measurement.method))},
                            {"simulated", session.backend().kind() == BackendKind::simulator},
                            {"cache", settings.cold_cache ? "cold" : "hot"},
                            {"cache_flush_bytes", settings.cold_cache ? session.backend().cache_flush_bytes() : 0},
                            {"warmup_iterations", measurement.warmup_iterations},
                            {"warmup_seconds", measurement.warmup_seconds},
                            {"warmup_stop", measurement.warmup_stop},
                            {"samples_seconds", measurement.samples_seconds},
                            {"converged", measurement.converged},
                            {"stop_reason", measurement.stop_reason},
                            {"wall_seconds", measurement.wall_seconds},
                            {"throttled", throttling.throttled},
                            {"noise", noise.to_json()},
                            {"host_activity", host_activity_json(host_activity)},
                            {"clocks", {{"before", clocks_before}, {"after", clocks_after}}},
                            {"statistics", statistics_json(measurement.statistics)},
                            {"tflops", median > 0 ? flops.total / median / 1e12 : 0.0},
                            {"compulsory_bandwidth_gb_per_s", median > 0 ? compulsory.total() / median / 1e9 : 0.0}};
    Json& timing = record["timing"];
    if (!measurement.passed_over.empty()) timing["methods_passed_over"] = measurement.passed_over;
    if (measurement.method == TimingMethod::cupti) {
      const std::optional<double> overhead =
          launch_overhead_seconds(measurement.events_seconds, measurement.samples_seconds);
      timing["cupti"] = Json{{"events_samples_seconds", measurement.events_seconds},
                             {"events_p50", measurement.events_seconds.empty()
                                                ? Json(nullptr)
                                                : Json(median_of(measurement.events_seconds))},
                             {"launch_overhead_seconds", overhead ? Json(*overhead) : Json(nullptr)}};
    }
    for (const auto& [key, value] : measurement.method_details.items()) timing[key] = value;
    if (marks.read > 0) {
      Json clocks = Json::array();
      for (const std::optional<double>& mhz : measurement.sm_mhz) clocks.push_back(mhz ? Json(*mhz) : Json(nullptr));
      timing["sm_clock_mhz"] = std::move(clocks);
      timing["clock_marks"] = marks.to_json(settings.clock_mark_share);
    }
    record["memory"] = memory_json(session.memory(), session.peak_bytes(), "measured");
    const Json outside_arena = implementation.memory_outside_arena();
    if (!outside_arena.is_null()) record["memory"]["outside_arena"] = outside_arena;
    for (const std::string& warning : throttling.warnings) record["warnings"].push_back(warning);
    if (!measurement.stopped_samples.empty()) {
      record["timing"]["stopped_samples"] = measurement.stopped_samples;
      record["warnings"].push_back(stopped_samples_warning(measurement));
    }
    // After the stop's warning: a stop is the noise's likelier cause.
    if (noise.noisy()) record["warnings"].push_back(noise.verdict());
    estimator_.record(rate_kind(name, p), flops.total, median);

    progress.set_phase("profiling");
    record["traffic"]["measured"] = profile_implementation(session);
    set_traffic_ratios(record, implementation, p);
    return checked.accuracy;
  }

  // The fused-versus-baseline rule needs every implementation of the case.
  static void settle_accuracy(const Scenario& scenario, const Problem& problem,
                              std::vector<std::pair<Implementation*, AccuracyResult>>& results,
                              std::vector<Json>& records) {
    std::map<std::string, const AccuracyResult*> by_name;
    for (const auto& [implementation, result] : results) by_name[std::string(implementation->name())] = &result;
    for (auto& [implementation, result] : results) {
      if (!result.baseline.empty()) {
        const auto baseline = by_name.find(result.baseline);
        if (baseline != by_name.end()) {
          apply_baseline_rule(result, *baseline->second, implementation->output_type(problem),
                              scenario.accuracy);
        } else {
          result.note += std::string(result.note.empty() ? "" : "; ") + "baseline " + result.baseline +
                         " did not run in this case, so only the per-dtype bound applied";
          result.reason += std::string(result.reason.empty() ? "" : "; ") + result.note;
        }
      }
      for (auto& record : records) {
        if (record["implementation"] != implementation->name()) continue;
        record["accuracy"] = result.to_json();
        if (result.status == "failed" && record["status"] == "ok") {
          record["status"] = "failed";
          record["reason"] = "accuracy: " + result.reason;
        }
      }
    }
  }

  void dump_inputs(const Scenario& scenario, CaseData& data, std::size_t case_index, const std::string& key) {
    if (!dumper_.enabled()) return;
    const Problem& p = data.problem();
    const HostInputs& inputs = data.inputs();
    const std::string layout = to_string(p.layout);
    dumper_.write(scenario.name, case_index, key, "inputs", "Q", inputs.q.buffer, tensor_shape(p, p.seqlen_q, p.heads), layout);
    dumper_.write(scenario.name, case_index, key, "inputs", "K", inputs.k.buffer, tensor_shape(p, p.seqlen_k, p.kv_heads), layout);
    dumper_.write(scenario.name, case_index, key, "inputs", "V", inputs.v.buffer, tensor_shape(p, p.seqlen_k, p.kv_heads), layout);
    dumper_.write(scenario.name, case_index, key, "inputs", "dO", inputs.d_out.buffer, tensor_shape(p, p.seqlen_q, p.heads), layout);
  }

  void dump_outputs(const Scenario& scenario, const Problem& p, std::size_t case_index, const std::string& key,
                    const Implementation& implementation, const HostOutputs& host) {
    if (!dumper_.enabled()) return;
    const std::string name(implementation.name());
    const std::string layout = to_string(p.layout);
    dumper_.write(scenario.name, case_index, key, name, "O", host.out.buffer, tensor_shape(p, p.seqlen_q, p.heads), layout);
    dumper_.write(scenario.name, case_index, key, name, "LSE", host.lse.buffer, {p.batch, p.heads, p.seqlen_q}, "bhs");
    dumper_.write(scenario.name, case_index, key, name, "dQ", host.d_q.buffer, tensor_shape(p, p.seqlen_q, p.heads), layout);
    dumper_.write(scenario.name, case_index, key, name, "dK", host.d_k.buffer, tensor_shape(p, p.seqlen_k, p.kv_heads), layout);
    dumper_.write(scenario.name, case_index, key, name, "dV", host.d_v.buffer, tensor_shape(p, p.seqlen_k, p.kv_heads), layout);
  }

  // The call limit's scope for calls of `implementation` (`calls`, in case
  // `label`): host implementations only (a GPU's waits have their own limit).
  CallWatchdog::Scope watch(const Implementation& implementation, const std::string& calls, const std::string& label) {
    const bool on_host = implementation.device() == "cpu";
    return CallWatchdog::Scope(on_host ? &watchdog_ : nullptr,
                               std::string(implementation.name()) + "'s " + calls + " in case " + label,
                               call_limit_seconds_);
  }

  // On the watchdog's thread, while the run's thread is stuck in the call:
  // the timeout goes in the journal, and the process restarts to resume.
  void restart_after_timeout(const std::string& what, double limit_seconds) {
    const std::string why = what + " did not return within " + format_seconds(limit_seconds) +
                            " (--call-limit): recorded as a timeout; continuing in a new process";
    try {
      crash_note_->note_timeout(limit_seconds);
    } catch (const FileWriteError& failure) {
      std::fprintf(stderr, "\nattnbench: error: %s, but the journal could not note it: %s\n", why.c_str(),
                   failure.what());
      std::_Exit(kExitEnvironment);
    }
    restart_(why);
  }

  int threads_;
  ProfileSettings profile_;
  bool memory_only_;
  std::vector<Backend*> backends_used_;
  ResultsOutput& results_;
  CaseDumper& dumper_;
  CaseTimeEstimator estimator_;
  std::set<std::string> small_cases_tried_;    // the kinds measure_small_case ran (or could not run) a small case of
  double call_limit_seconds_;
  std::function<void(const std::string&)> restart_;
  std::unique_ptr<CrashNote> crash_note_;  // of the implementation and case running now
  CallWatchdog watchdog_;                  // last: its thread uses the members above
  bool context_lost_ = false;
  double highest_sm_mhz_ = 0;  // the run's highest SM clock read after a sample (ClockMarks)
  // Implementation -> "<scenario>/<case key>" of its case whose device work
  // did not finish within the wait limit earlier in this run (in a process
  // this one resumes), if any.
  std::map<std::string, std::string> timed_out_in_;

 public:
  // A device error left the device unusable: the process must restart.
  bool context_lost() const { return context_lost_; }
};

// A run calibrates the host (without --calibrate) when its host work is at
// least this many FLOPs: seconds at the few GFLOP/s per core the host
// implementations reach, beside the calibration's fraction of a second.
constexpr double kCalibrationWorthFlops = 1e10;

// The FLOPs the host implementations of the plan compute at least: each
// case they can run's FLOPs times the calls the protocol makes at least (one
// with --memory-only).
double minimum_host_flops(const std::vector<PlannedScenario>& plan, bool memory_only, int threads) {
  double flops = 0;
  for (const PlannedScenario& planned : plan) {
    for (std::size_t case_index : planned.cases) {
      const Problem& problem = planned.scenario->cases[case_index].problem;
      for (const Implementation* implementation : planned.implementations) {
        if (implementation->device() != "cpu") continue;
        // Only the calls that will be made: not those the pre-flight skips (too
        // large to fit), nor those of a plug-in whose callback fails here (its
        // record fails with that error when the case runs).
        try {
          if (!preflight(*implementation, problem, threads, true).skip_reason.empty()) continue;
        } catch (const PluginCallError&) {
          continue;
        }
        flops += flop_count(problem).total * (memory_only ? 1 : minimum_calls(planned.measure));
      }
    }
  }
  return flops;
}

// The files a run writes, checked before anything is: -o not a directory, in a
// writable place, and no output (the results file, its journal and lock, the
// dump's index and arrays) one of the scenario files it reads.
void check_outputs(const std::string& output, const RunOptions& options, const std::vector<Scenario>& scenarios) {
  if (fs::is_directory(output)) throw InputError("-o " + output + ": is a directory; give a file name");
  prepare_output_directory(output, "-o");
  if (!options.dump_dir.empty()) prepare_directory(options.dump_dir, "--dump");
  std::vector<Diagnostic> problems;
  for (const Scenario& scenario : scenarios) {
    for (const std::string& written : {output, journal_path(output), lock_file_path(output)}) {
      if (same_file(scenario.path, written)) {
        problems.push_back({scenario.path, "", "is a scenario file of this run and would be overwritten by -o " +
                                                   output + "; write the results to another file"});
      }
    }
    if (options.dump_dir.empty()) continue;
    const fs::path index = dump_index_path(options.dump_dir);
    const fs::path arrays = fs::weakly_canonical(fs::path(options.dump_dir) / scenario.name);
    const fs::path input = fs::weakly_canonical(scenario.path);
    const bool under_arrays = std::mismatch(arrays.begin(), arrays.end(), input.begin(), input.end()).first == arrays.end();
    if (same_file(scenario.path, index.string()) || under_arrays) {
      problems.push_back({scenario.path, "", "is where --dump " + options.dump_dir +
                                                 " writes its index or arrays; dump into another directory"});
    }
  }
  if (!options.dump_dir.empty() && same_file(output, dump_index_path(options.dump_dir))) {
    problems.push_back({"", "", "-o " + output + ": is the index of --dump " + options.dump_dir +
                                    "; write the results to another file"});
  }
  if (!problems.empty()) throw InputError(problems);
}

// Keeps only the cases of `shard`; returns how many remain. Cost is estimated
// by the case's FLOPs (plus a constant for its fixed overheads), the same for
// every implementation, so each shard computes the same split.
std::size_t keep_shard(std::vector<PlannedScenario>& plan, const Shard& shard) {
  std::vector<double> costs;
  for (const PlannedScenario& planned : plan) {
    for (std::size_t case_index : planned.cases) {
      costs.push_back(flop_count(planned.scenario->cases[case_index].problem).total + 1e6);
    }
  }
  const std::vector<int> shard_of = assign_to_shards(costs, shard.count);
  std::size_t item = 0, kept = 0;
  for (PlannedScenario& planned : plan) {
    std::vector<std::size_t> mine;
    for (std::size_t case_index : planned.cases) {
      if (shard_of[item++] == shard.index - 1) mine.push_back(case_index);
    }
    kept += mine.size();
    planned.cases = std::move(mine);
  }
  return kept;
}

std::string default_output_path(const std::vector<Scenario>& scenarios) {
  std::string stamp = utc_timestamp();
  stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
  return "results/" + scenarios.front().name + "-" + stamp + ".json";
}

// The `scenarios` block of the results file.
Json scenarios_json(const std::vector<PlannedScenario>& plan) {
  Json scenarios = Json::array();
  for (const PlannedScenario& planned : plan) {
    Json names = Json::array();
    for (Implementation* implementation : planned.implementations) names.push_back(implementation->name());
    scenarios.push_back(Json{{"path", escape_invalid_utf8(planned.scenario->path)},
                             {"name", planned.scenario->name},
                             {"description", planned.scenario->description},
                             {"source", planned.scenario->source},
                             {"implementations", names},
                             {"measure", planned.settings["measure"]},
                             {"accuracy", planned.settings["accuracy"]},
                             {"case_count", planned.scenario->cases.size()}});
  }
  return scenarios;
}

// The records this run may continue from: its planned cases and
// implementations, measured with its settings.
ExpectedRecords expected_records(const std::vector<PlannedScenario>& plan) {
  ExpectedRecords expected;
  for (const PlannedScenario& planned : plan) {
    ExpectedScenarioRecords& scenario = expected[planned.scenario->name];
    for (std::size_t case_index : planned.cases) {
      scenario.case_index_by_key.emplace(planned.scenario->cases[case_index].key, case_index);
    }
    for (Implementation* implementation : planned.implementations) {
      scenario.implementations.emplace(implementation->name());
    }
    scenario.settings = planned.settings;
  }
  return expected;
}

// The names of every planned implementation, once each.
std::vector<std::string> planned_implementation_names(const std::vector<PlannedScenario>& plan) {
  std::vector<std::string> names;
  for (const PlannedScenario& planned : plan) {
    for (const Implementation* implementation : planned.implementations) {
      const std::string name(implementation->name());
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

// The descriptions of the devices the planned implementations run on.
std::vector<Json> devices_planned(const std::vector<PlannedScenario>& plan) {
  std::set<std::string> kinds;
  for (const PlannedScenario& planned : plan) {
    for (const Implementation* implementation : planned.implementations) kinds.emplace(implementation->device());
  }
  std::vector<Json> devices;
  for (const std::string& kind : kinds) {
    if (Backend* backend = BackendRegistry::instance().get(kind)) devices.push_back(backend->describe());
  }
  return devices;
}

// How many planned cases have a record of every planned implementation.
std::size_t cases_saved(const std::vector<PlannedScenario>& plan, const ResultsDocument& document) {
  std::size_t saved = 0;
  for (const PlannedScenario& planned : plan) {
    for (std::size_t case_index : planned.cases) {
      const std::string& key = planned.scenario->cases[case_index].key;
      saved += std::all_of(planned.implementations.begin(), planned.implementations.end(),
                           [&](const Implementation* implementation) {
                             return document.has_record(planned.scenario->name, key,
                                                        std::string(implementation->name()));
                           })
                   ? 1
                   : 0;
    }
  }
  return saved;
}

// A write that failed mid-run (a full or read-only disk, the output's
// directory deleted): the finished records are saved where they can be, and
// the error says where and how to go on.
EnvironmentError write_failure(const FileWriteError& failure, ResultsOutput& output,
                               const std::vector<PlannedScenario>& plan, std::size_t total_cases) {
  const SavedRecords saved = output.save_where_possible();
  const std::string finished = "The " + std::to_string(cases_saved(plan, output.document())) + " of " +
                               std::to_string(total_cases) + " cases finished so far are safe in " + saved.where;
  if (saved.rescued) {
    return EnvironmentError(std::string(failure.what()) + ". Nothing more is written there. " + finished +
                            "; continue with the same command and " + saved.how_to_continue());
  }
  return EnvironmentError(std::string(failure.what()) + ". " + finished +
                          "; make room on the disk (or make it writable) and continue with the same command and "
                          "--resume");
}

// What a resume continues from, and what runs now.
void print_resume_note(const ResultsOutput& output, const ResumedRecords& resumed, std::size_t cases_done,
                       std::size_t total_cases) {
  if (resumed.from_results_file == 0 && resumed.from_journal == 0 && resumed.journal_entries == 0) return;
  std::string note = "resuming " + output.path() + ": " + count_of(resumed.from_results_file, "record") +
                     " in it, " + std::to_string(resumed.from_journal) + " from its journal";
  if (resumed.journal_entries > 0) note += " (entries 1-" + std::to_string(resumed.journal_entries) + ", in sequence)";
  note += "; " + std::to_string(total_cases - cases_done) + " of " + std::to_string(total_cases) +
          " cases have no record in either and run now";
  if (const std::size_t crashes = resumed.crashes - resumed.timeouts; crashes > 0) {
    note += "; " + count_of(crashes, "implementation") + " crashed the process in a case before and " +
            (crashes == 1 ? "is" : "are") + " recorded as failed there, not run again";
  }
  if (resumed.timeouts > 0) {
    note += "; " + count_of(resumed.timeouts, "implementation") +
            " did not return from a call within --call-limit in a case before and " +
            (resumed.timeouts == 1 ? "is" : "are") + " recorded as failed (timeout) there, not run again";
  }
  if (resumed.torn_tail) {
    note += "; the journal's last line was cut short (the run was killed while writing it) and is ignored, so its "
            "case is among them";
  }
  std::fprintf(stderr, "attnbench: note: %s\n", note.c_str());
}

// What the devices of `planned`'s available implementations cannot give, found
// before the run: a timing order none of whose methods a device gives (with
// each method's reason), and a cold cache whose flush cannot evict the
// device's last-level cache.
void check_timing(const PlannedScenario& planned) {
  std::vector<Diagnostic> problems;
  std::set<Backend*> checked;
  const std::string where = planned.scenario->path;
  for (Implementation* implementation : planned.implementations) {
    if (!implementation->availability().ok) continue;  // its records say it is unavailable
    Backend* backend = BackendRegistry::instance().get(implementation->device());
    if (!backend || !backend->availability().ok || !checked.insert(backend).second) continue;
    std::string reasons;
    bool given = false;
    for (TimingMethod method : planned.measure.timing) {
      const Verdict verdict = backend->timing_method(method);
      given = given || verdict.ok;
      if (!verdict.ok) reasons += (reasons.empty() ? "" : "; ") + std::string(to_string(method)) + ": " + verdict.reason;
    }
    if (!given) {
      problems.push_back({where, "measure.timing",
                          "the " + std::string(backend->device()) + " device of " + std::string(implementation->name()) +
                              " cannot time with " + join(timing_method_names(planned.measure.timing), ", ") + " (" +
                              reasons + "); give --timing with a method it has, or an order to fall back through "
                              "(e.g. --timing cupti,events)"});
    }
    if (planned.measure.cold_cache) {
      const std::string refusal =
          eviction_refusal("the cache flush", backend->cache_flush_bytes(), backend->last_level_cache_bytes());
      if (!refusal.empty()) problems.push_back({where, "measure.cache", "cold on " + std::string(backend->device()) + ": " + refusal});
    }
  }
  if (!problems.empty()) throw InputError(problems);
}

// --lock-clocks: the clocks of each GPU the plan uses, held from the start of
// the run and given back when it ends, fails, or (restore(), from the
// interrupt watcher) is interrupted. A GPU whose clocks this process may not
// lock runs unlocked, which its device record and the summary say.
class ClockLocks {
 public:
  explicit ClockLocks(const std::vector<PlannedScenario>& plan) {
    for (const PlannedScenario& planned : plan) {
      for (Implementation* implementation : planned.implementations) {
        Backend* backend = BackendRegistry::instance().get(implementation->device());
        if (!backend || backend->kind() != BackendKind::accelerator || !backend->availability().ok) continue;
        if (std::find(tried_.begin(), tried_.end(), backend) != tried_.end()) continue;
        tried_.push_back(backend);
        if (const std::string refused = backend->lock_clocks(); !refused.empty()) {
          std::fprintf(stderr, "attnbench: --lock-clocks: the %s device's clocks stay unlocked: %s\n",
                       std::string(backend->device()).c_str(), refused.c_str());
        }
      }
    }
  }
  ~ClockLocks() { restore(); }
  ClockLocks(const ClockLocks&) = delete;
  ClockLocks& operator=(const ClockLocks&) = delete;
  void restore() {
    for (Backend* backend : tried_) backend->restore_clocks();
  }

 private:
  std::vector<Backend*> tried_;
};

// "24 records: 20 ok, 3 skipped, 1 failed"
std::string record_counts(const Json& records) {
  std::map<std::string, std::size_t> by_status;
  for (const auto& record : records) ++by_status[record["status"].get<std::string>()];
  std::string text = count_of(records.size(), "record");
  std::string parts;
  for (const char* status : {"ok", "skipped", "failed"}) {
    parts += std::string(parts.empty() ? "" : ", ") + std::to_string(by_status[status]) + " " + status;
  }
  return text + ": " + parts;
}

}  // namespace

int run_scenarios(const RunOptions& options) {
  // Everything that can be wrong with the request is found before any output.
  // --impl replaces the scenarios' lists: a scenario naming a plug-in that is
  // not loaded runs with the implementations --impl names.
  std::vector<Scenario> scenarios = load_scenarios(
      options.scenario_paths,
      options.implementations.empty() ? ImplementationNames::registered : ImplementationNames::any);
  scenarios.insert(scenarios.end(), options.built_scenarios.begin(), options.built_scenarios.end());
  const std::optional<Regex> filter = case_filter(options.filter);
  const CpuAvailability cpus = available_cpus();
  const int threads = options.threads > 0 ? options.threads : cpus.count;
  const Json profile{{"enabled", options.profile}, {"per_kernel", options.profile_kernels}};
  std::vector<PlannedScenario> plan;
  std::size_t total_cases = 0;
  for (const Scenario& scenario : scenarios) {
    PlannedScenario planned{&scenario, {}, scenario.measure, {}, {}};
    // --memory-only plans the memory of an implementation whose device is absent
    // instead of refusing it.
    const auto choose = options.memory_only ? resolve_implementations : select_implementations;
    planned.implementations = options.implementations.empty()
                                  ? choose(scenario.implementations, scenario.path + ": implementations")
                                  : choose(options.implementations, "--impl");
    planned.measure = options.measurement.applied_to(scenario.measure, scenario.path);
    planned.settings = record_settings(measure_settings_json(planned.measure), accuracy_settings_json(scenario.accuracy),
                                       threads, profile);
    if (!options.memory_only) check_timing(planned);
    if (options.memory_only) planned.settings["memory_only"] = true;
    for (std::size_t i = 0; i < scenario.cases.size(); ++i) {
      if (!filter || filter->search(scenario.name + "/" + scenario.cases[i].key)) planned.cases.push_back(i);
    }
    total_cases += planned.cases.size();
    plan.push_back(std::move(planned));
  }
  if (total_cases == 0) throw InputError("--filter " + quote(options.filter) + " matches no case");
  if (options.shard) total_cases = keep_shard(plan, *options.shard);
  if (options.resume && options.output_path.empty()) {
    throw InputError("--resume needs -o FILE naming the results file to continue");
  }
  if (options.resume && options.overwrite) throw InputError("--resume and --overwrite cannot both be given");
  const std::string output_path = options.output_path.empty() ? default_output_path(scenarios) : options.output_path;
  check_outputs(output_path, options, scenarios);
  const ExistingResults existing = options.resume      ? ExistingResults::resume
                                   : options.overwrite ? ExistingResults::overwrite
                                                       : ExistingResults::refuse;
  ResultsOutput output(output_path, existing);
  CaseDumper dumper(options.dump_dir, existing, plan);

  std::optional<ClockLocks> clock_locks;
  std::optional<InterruptGuard> interrupts;
  interrupts.emplace([&](int signal) {
    if (clock_locks) clock_locks->restore();
    if (options.interactive) std::fputs("\r\033[K", stderr);
    SavedRecords saved;
    const StopState state = output.save_and_stop(saved);
    dumper.release_lock();
    switch (state) {
      case StopState::before_start:
        std::fprintf(stderr, "attnbench: interrupted (%s) before the first case; %s is as it was\n",
                     strsignal(signal), output.path().c_str());
        return;
      case StopState::finished:
        std::fprintf(stderr, "attnbench: interrupted (%s) after the run finished; %s is complete\n",
                     strsignal(signal), output.path().c_str());
        return;
      case StopState::saved:
        std::fprintf(stderr, "attnbench: interrupted: %zu of %zu cases saved in %s; continue with %s\n",
                     cases_saved(plan, output.document()), total_cases, saved.where.c_str(),
                     saved.how_to_continue().c_str());
        return;
    }
  });

  if (options.lock_clocks) clock_locks.emplace(plan);
  ResultsDocument document(options.command_line, threads);
  document.set_shard(options.shard);
  document.set_filter(options.filter);
  document.set_blas(blas::library_json());
  document.set_threads_source(options.threads > 0 ? "command_line" : "available_cpus");
  document.set_load_average("run_start", load_average());
  const Json machine = findings_json(check_machine(threads, kRunMachineCheckSeconds));
  document.set_machine(machine);
  if (options.check_machine) {
    for (const std::string& line : findings_lines(machine, false)) {
      std::fprintf(stderr, "attnbench: machine: %s\n", line.c_str());
    }
  }
  // The host calibration: the roofline's CPU ceilings and the rate a first long
  // host case is estimated at. Worth its fraction of a second only when the
  // host has that much to do, or when asked.
  std::optional<HostCalibration> calibration;
  if (options.calibrate || minimum_host_flops(plan, options.memory_only, threads) >= kCalibrationWorthFlops) {
    calibration = calibrate_host(threads, read_host_info().last_level_cache.bytes);
  }
  document.set_host_calibration(calibration ? calibration->to_json() : Json(nullptr));
  document.set_scenarios(scenarios_json(plan));
  document.set_plugins(plugins_json(planned_implementation_names(plan)));
  if (options.resume) {
    const ResumedRecords resumed = output.continue_saved_run(document, expected_records(plan), devices_planned(plan));
    print_resume_note(output, resumed, cases_saved(plan, document), total_cases);
  }
  try {
    output.start(std::move(document));
  } catch (const FileWriteError& failure) {
    throw EnvironmentError(std::string(failure.what()) + "; nothing was run");
  }

  // After a host call past the call limit (from the watchdog's thread, the
  // run's own stuck in the call): the journal holds every finished case.
  const auto restart = [&](const std::string& why) {
    if (options.interactive) std::fputs("\r\033[K", stderr);
    output.keep_lock_across_exec();
    dumper.keep_lock_across_exec();
    const RestartRequired restart_required(why, output.path());
    if (options.restart_now) options.restart_now(restart_required);
    std::fprintf(stderr, "\nattnbench: %s; continue with -o %s --resume\n", why.c_str(), output.path().c_str());
    std::fflush(nullptr);
    std::_Exit(kExitGateFailed);
  };
  ScenarioRunner runner(threads, ProfileSettings{options.profile, options.profile_kernels}, options.memory_only, output,
                        dumper, calibration ? std::optional<double>(calibration->gemm_flops_per_second) : std::nullopt,
                        options.call_limit_seconds, restart);
  Progress progress(total_cases, options.interactive);
  std::size_t number = 0;
  for (const PlannedScenario& planned : plan) {
    for (std::size_t case_index : planned.cases) {
      const ScenarioCase& scenario_case = planned.scenario->cases[case_index];
      progress.start_case(++number, planned.scenario->name + "#" + std::to_string(case_index) + " " +
                                        short_case_label(problem_to_json(scenario_case.problem)));
      std::vector<Json> records = runner.run_case(planned, case_index, progress);
      std::string outcome;
      for (const auto& record : records) {
        outcome += (outcome.empty() ? "" : ", ") + record["implementation"].get<std::string>() + " " +
                   record["status"].get<std::string>();
      }
      try {
        if (!records.empty()) output.add_case(std::move(records));
        dumper.write_index();
      } catch (const FileWriteError& failure) {
        progress.finish();
        throw write_failure(failure, output, plan, total_cases);
      }
      progress.finish_case(outcome.empty() ? "already in the results file" : outcome);
      if (runner.context_lost()) {
        progress.finish();
        try {
          output.save();
        } catch (const FileWriteError& failure) {
          throw write_failure(failure, output, plan, total_cases);
        }
        output.keep_lock_across_exec();
        dumper.keep_lock_across_exec();
        throw RestartRequired("the device context was lost (recorded on the failed case); continuing in a new process",
                              output.path());
      }
    }
  }
  progress.finish();
  // A host record faster than the calibrated GEMM rate contradicts the roof
  // (the calibration ran while other work was busy): calibrated again, the
  // faster of each rate is kept.
  if (calibration && calibration->outrun_by(output.document().json()["records"])) {
    calibration->keep_faster(calibrate_host(threads, read_host_info().last_level_cache.bytes));
    output.set_host_calibration(calibration->to_json());
  }
  for (Backend* backend : runner.backends_used()) {
    output.set_device_clocks(backend->describe(), "run_end", backend->read_clocks());
  }
  if (clock_locks) clock_locks->restore();
  output.set_load_average("run_end", load_average());
  try {
    output.finish();
  } catch (const FileWriteError& failure) {
    throw write_failure(failure, output, plan, total_cases);
  }
  // The watcher goes before the locks: no signal may make this process write
  // once another may hold them.
  interrupts.reset();
  output.release();
  dumper.release_lock();

  const ResultsDocument& results = output.document();
  print_summary(results);
  if (const std::string warning = load_warning(results.json()["load_average"], threads, cpus); !warning.empty()) {
    for (const std::string& line : wrap_words(warning, 80, "  ")) std::printf("%s\n", line.c_str());
  }
  std::size_t failed = 0;
  for (const auto& record : results.json()["records"]) failed += record["status"] == "failed" ? 1 : 0;
  std::printf("\n%s. Results: %s\n", record_counts(results.json()["records"]).c_str(), output.path().c_str());
  if (dumper.enabled()) std::printf("Arrays: %s\n", dump_index_path(options.dump_dir).c_str());
  return failed ? kExitGateFailed : kExitSuccess;
}

}  // namespace attnbench
