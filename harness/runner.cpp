#include "runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "accuracy.hpp"
#include "backend.hpp"
#include "errors.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "json_text.hpp"
#include "measure.hpp"
#include "npy.hpp"
#include "problem_json.hpp"
#include "profiler.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "session.hpp"
#include "trace.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::vector<Implementation*> resolve_implementations(const std::vector<std::string>& requested,
                                                     const std::string& requested_by) {
  auto& registry = ImplementationRegistry::instance();
  std::vector<Implementation*> selected;
  if (requested.empty()) {
    std::vector<Implementation*> accelerated, cpu;
    for (Implementation* implementation : registry.all()) {
      if (!implementation->availability().ok) continue;
      (implementation->device() == "cpu" ? cpu : accelerated).push_back(implementation);
    }
    return accelerated.empty() ? cpu : accelerated;
  }
  std::vector<Diagnostic> unknown;
  for (const auto& name : requested) {
    Implementation* implementation = registry.find(name);
    if (!implementation) {
      std::string known;
      for (const auto& n : registry.names()) known += (known.empty() ? "" : ", ") + n;
      unknown.push_back({requested_by, "", "unknown implementation \"" + name + "\"; known: " + known});
      continue;
    }
    selected.push_back(implementation);
  }
  if (!unknown.empty()) throw InputError(unknown);
  return selected;
}

std::vector<Implementation*> select_implementations(const std::vector<std::string>& requested,
                                                    const std::string& requested_by) {
  const std::vector<Implementation*> selected = resolve_implementations(requested, requested_by);
  for (Implementation* implementation : selected) {
    const Verdict available = implementation->availability();
    if (!available.ok) {
      throw EnvironmentError(std::string(implementation->name()) + " was requested (" + requested_by +
                             ") but cannot run on this machine: " + available.reason +
                             ". Choose others with --impl (see `attnbench info`).");
    }
  }
  return selected;
}

std::string short_case_label(const nlohmann::ordered_json& p) {
  const auto number = [&](const char* key) { return std::to_string(p[key].get<std::int64_t>()); };
  std::string label = "b" + number("batch") + " h" + number("heads");
  if (p["kv_heads"] != p["heads"]) label += "/" + number("kv_heads");
  label += " q" + number("seqlen_q") + " k" + number("seqlen_k") + " d" + number("head_dim") + " " +
           p["dtype"].get<std::string>() + " " + p["direction"].get<std::string>();
  const std::string align = p["align"] == "bottom_right" ? ".br" : ".tl";
  if (p["causal"].get<bool>()) label += " causal" + align;
  if (!p["window"].is_null()) label += " win" + align + p["window"].dump();
  if (p["padding"]["kind"] != "none") label += " pad";
  if (p["dropout"]["p"].get<double>() > 0) label += " drop" + format_fixed(p["dropout"]["p"].get<double>(), 2);
  if (p["layout"] == "bhsd") label += " bhsd";
  return label;
}

namespace {

Json measure_settings_json(const MeasureSettings& m) {
  return Json{{"warmup_min_iterations", m.warmup_min_iterations},
              {"warmup_min_seconds", m.warmup_min_seconds},
              {"min_samples", m.min_samples},
              {"max_samples", m.max_samples},
              {"min_seconds", m.min_seconds},
              {"max_seconds", m.max_seconds},
              {"target_ci_width", m.target_ci_width},
              {"cache", m.cold_cache ? "cold" : "hot"}};
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

Json statistics_json(const SampleStatistics& s) {
  return Json{{"count", s.count},   {"min", s.min},   {"p10", s.p10},   {"p25", s.p25},
              {"p50", s.p50},       {"p75", s.p75},   {"p90", s.p90},   {"p99", s.p99},
              {"max", s.max},       {"mean", s.mean}, {"stddev", s.stddev},
              {"median_ci_low", s.median_ci_low},     {"median_ci_high", s.median_ci_high},
              {"median_ci_confidence", s.confidence}, {"median_ci_defined", s.median_ci_defined}};
}

// What one scenario runs with, after command-line overrides.
struct PlannedScenario {
  const Scenario* scenario;
  std::vector<Implementation*> implementations;
  MeasureSettings measure;
  std::vector<std::size_t> cases;  // indices into scenario->cases that pass --filter
};

std::vector<std::int64_t> tensor_shape(const Problem& p, std::int64_t seqlen, std::int64_t heads) {
  if (p.layout == Layout::bshd) return {p.batch, seqlen, heads, p.head_dim};
  return {p.batch, heads, seqlen, p.head_dim};
}

class CaseDumper {
 public:
  // When resuming, the arrays an earlier run listed stay in the index.
  CaseDumper(std::string directory, bool resume) : directory_(std::move(directory)) {
    const fs::path index = fs::path(directory_) / "index.json";
    if (!enabled() || !resume || !fs::exists(index)) return;
    std::vector<Diagnostic> diagnostics;
    std::string text;
    if (read_text_file(index.string(), text, diagnostics)) {
      const Json previous = parse_json_document(text, index.string(), diagnostics);
      if (diagnostics.empty() && previous.contains("arrays") && previous["arrays"].is_array()) {
        index_ = previous["arrays"];
      }
    }
    if (!diagnostics.empty()) throw InputError(diagnostics);
  }
  bool enabled() const { return !directory_.empty(); }

  void write(const std::string& scenario, std::size_t case_index, const std::string& case_key,
             const std::string& implementation, const std::string& tensor, const TensorBuffer& buffer,
             const std::vector<std::int64_t>& shape, const std::string& layout) {
    if (!enabled() || buffer.elements == 0) return;
    const std::string relative =
        scenario + "/case" + std::to_string(case_index) + "." + implementation + "." + tensor + ".npy";
    fs::create_directories(fs::path(directory_) / scenario);
    write_npy((fs::path(directory_) / relative).string(), buffer.data, buffer.type, shape);
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
    write_file_atomically((fs::path(directory_) / "index.json").string(),
                          Json{{"schema", "attnbench.dump/1"},
                               {"note", "bf16 arrays are stored as their raw uint16 bits"},
                               {"arrays", index_}}
                                  .dump(1) +
                              "\n");
  }

 private:
  std::string directory_;
  Json index_ = Json::array();
};

struct ProfileSettings {
  bool enabled = true;
  bool per_kernel = false;
};

class ScenarioRunner {
 public:
  ScenarioRunner(int threads, ProfileSettings profile, ResultsDocument& results, CaseDumper& dumper)
      : threads_(threads), profile_(profile), results_(results), dumper_(dumper) {}

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
      const TraceRange implementation_range(std::string(implementation->name()));
      Json record = base_record(scenario, case_index, *implementation);
      std::optional<AccuracyResult> checked;
      try {
        std::string skip_reason;
        std::unique_ptr<ImplementationSession> session;
        {
          const TraceRange setup_range("setup");
          session = ImplementationSession::open(*implementation, data, threads_, skip_reason);
        }
        if (!session) {
          record["status"] = "skipped";
          record["reason"] = skip_reason;
        } else {
          note_device(session->backend());
          if (!inputs_dumped) dump_inputs(scenario, data, case_index, scenario_case.key);
          inputs_dumped = true;
          checked = measure_implementation(planned, *session, record, case_index, scenario_case.key);
        }
      } catch (const DeviceError& error) {
        record["status"] = "failed";
        record["reason"] = std::string("error: ") + error.what();
        context_lost_ = context_lost_ || error.context_lost();
      } catch (const std::exception& error) {
        record["status"] = "failed";
        record["reason"] = std::string("error: ") + error.what();
      }
      if (checked) accuracy.emplace_back(implementation, std::move(*checked));
      records.push_back(std::move(record));
      if (context_lost_) break;  // nothing more can run in this process
    }
    settle_accuracy(scenario, scenario_case.problem, accuracy, records);
    return records;
  }

 private:
  Json base_record(const Scenario& scenario, std::size_t case_index, const Implementation& implementation) {
    const ScenarioCase& scenario_case = scenario.cases[case_index];
    const Problem& p = scenario_case.problem;
    const ByteCount compulsory = compulsory_bytes(p);
    const std::optional<TrafficModel> modelled = implementation.modelled_traffic(p);
    return Json{{"scenario", scenario.name},
                {"case_index", case_index},
                {"case_key", scenario_case.key},
                {"case_origin", scenario_case.origin},
                {"implementation", implementation.name()},
                {"device", implementation.device()},
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
  }

  // The device's description and its clocks, when the run first uses it.
  void note_device(Backend& backend) {
    if (std::find(backends_used_.begin(), backends_used_.end(), &backend) == backends_used_.end()) {
      backends_used_.push_back(&backend);
      const Json description = backend.describe();
      results_.add_device(description);
      results_.set_device_clocks(description, "run_start", backend.read_clocks());
    }
  }

  // traffic.measured: null for host implementations (nothing to profile);
  // otherwise what the profiling pass collected, or why it did not run.
  Json profile_implementation(ImplementationSession& session) {
    Backend& backend = session.backend();
    if (backend.device() == "cpu") return nullptr;
    if (!profile_.enabled) return measured_traffic_json(ProfileResult::not_collected("skipped", "--no-profile"));
    DeviceProfiler* profiler = backend.profiler();
    if (!profiler) {
      return measured_traffic_json(ProfileResult::not_collected(
          "unavailable", "the " + std::string(backend.device()) + " backend has no hardware-counter profiler"));
    }
    return measured_traffic_json(session.profile(*profiler, profile_.per_kernel));
  }

  // Checks and times one implementation into `record`; returns the accuracy
  // result when the outputs were checked against the oracle.
  std::optional<AccuracyResult> measure_implementation(const PlannedScenario& planned, ImplementationSession& session,
                                                       Json& record, std::size_t case_index,
                                                       const std::string& case_key) {
    const Scenario& scenario = *planned.scenario;
    const Implementation& implementation = session.implementation();
    const Problem& p = scenario.cases[case_index].problem;
    record["configuration"] = session.configuration();

    if (const std::optional<ByteCount> counted = session.checked_call()) {
      record["traffic"]["counted"] = bytes_json(counted->read, counted->write);
    }
    std::optional<AccuracyResult> accuracy;
    const bool check = scenario.accuracy.check && !implementation.is_oracle();
    if (check || dumper_.enabled()) {
      const HostOutputs host = session.copy_outputs();
      dump_outputs(scenario, p, case_index, case_key, implementation, host);
      if (check) accuracy = session.check_accuracy(host);
    }
    if (!check) {
      AccuracyResult result;
      result.status = implementation.is_oracle() ? "oracle" : "not_checked";
      result.reason = implementation.is_oracle() ? "this implementation is the oracle" : "accuracy.check is false";
      record["accuracy"] = result.to_json();
      record["accuracy"]["sample"] = nullptr;
    }

    const MeasureSettings& settings = planned.measure;
    const Json clocks_before = session.backend().read_clocks();
    const Measurement measurement = session.measure(settings);
    const Json clocks_after = session.backend().read_clocks();
    const ThrottleVerdict throttling = judge_throttling(clocks_before, clocks_after);
    const double median = measurement.statistics.p50;
    const FlopCount flops = flop_count(p);
    const ByteCount compulsory = compulsory_bytes(p);
    record["timing"] = Json{{"clock", session.backend().clock_name()},
                            {"cache", settings.cold_cache ? "cold" : "hot"},
                            {"cache_flush_bytes", settings.cold_cache ? session.backend().cache_flush_bytes() : 0},
                            {"warmup_iterations", measurement.warmup_iterations},
                            {"warmup_seconds", measurement.warmup_seconds},
                            {"samples_seconds", measurement.samples_seconds},
                            {"converged", measurement.converged},
                            {"stop_reason", measurement.stop_reason},
                            {"wall_seconds", measurement.wall_seconds},
                            {"throttled", throttling.throttled},
                            {"clocks", {{"before", clocks_before}, {"after", clocks_after}}},
                            {"statistics", statistics_json(measurement.statistics)},
                            {"tflops", median > 0 ? flops.total / median / 1e12 : 0.0},
                            {"compulsory_bandwidth_gb_per_s", median > 0 ? compulsory.total() / median / 1e9 : 0.0}};
    const MemoryPlan& memory = session.memory();
    record["memory"] = Json{{"peak_bytes", session.peak_bytes()},
                            {"input_bytes", memory.inputs},
                            {"output_bytes", memory.outputs},
                            {"workspace_bytes", memory.workspace},
                            {"extra_bytes", session.peak_bytes() - memory.inputs - memory.outputs}};
    if (!throttling.warnings.empty()) record["warnings"] = throttling.warnings;

    Json& traffic = record["traffic"];
    traffic["measured"] = profile_implementation(session);
    const std::optional<TrafficModel> modelled = implementation.modelled_traffic(p);
    traffic["ratio_to_modelled"] = Json{{"measured", traffic_ratio(traffic["measured"], modelled)},
                                        {"counted", traffic_ratio(traffic["counted"], modelled)}};
    return accuracy;
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

  int threads_;
  ProfileSettings profile_;
  std::vector<Backend*> backends_used_;
  ResultsDocument& results_;
  CaseDumper& dumper_;
  bool context_lost_ = false;

 public:
  // A device error left the device unusable: the process must restart.
  bool context_lost() const { return context_lost_; }
};

// Makes sure a file can be created in `directory` (creating the directory), so
// an unusable -o or --dump is bad input found before anything is written.
void require_writable_directory(const fs::path& directory, const std::string& option) {
  std::error_code error;
  if (!directory.empty()) fs::create_directories(directory, error);
  const fs::path probe = (directory.empty() ? fs::path(".") : directory) / (".attnbench-probe-" + std::to_string(getpid()));
  std::ofstream out(probe);
  const bool writable = static_cast<bool>(out);
  out.close();
  fs::remove(probe, error);
  if (!writable) {
    throw InputError(option + ": cannot write into \"" + (directory.empty() ? std::string(".") : directory.string()) +
                     "\" (" + (error ? error.message() : std::string("permission denied or not a directory")) + ")");
  }
}

// The results file to write, checked before the run starts: not a directory,
// in a writable place, and not an unfinished run that only --resume may touch.
void check_output_path(const std::string& output, bool resume) {
  if (fs::is_directory(output)) throw InputError("-o " + output + ": is a directory; give a file name");
  require_writable_directory(fs::path(output).parent_path(), "-o");
  if (resume || !fs::exists(output)) return;
  std::vector<Diagnostic> diagnostics;
  std::string text;
  if (!read_text_file(output, text, diagnostics)) throw InputError(diagnostics);
  const Json existing = parse_json_document(text, output, diagnostics);
  if (diagnostics.empty() && existing.is_object() && existing.value("schema", "") == kResultsSchemaId &&
      !existing.value("complete", true)) {
    throw InputError("-o " + output + ": holds an unfinished run; continue it with --resume or remove the file");
  }
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

// The worst tensor error of a record, relative to the oracle's magnitude: "dK 4.5e-07".
std::string worst_error(const Json& accuracy) {
  if (accuracy.is_null() || accuracy["tensors"].empty()) return "-";
  std::string worst = "-";
  double largest = -1;
  for (const auto& [tensor, error] : accuracy["tensors"].items()) {
    const double relative =
        error["max_abs_error"].get<double>() / std::max(1.0, error["oracle_max_abs"].get<double>());
    const bool broken = error["nan"].get<std::size_t>() || error["inf"].get<std::size_t>() ||
                        error["infinity_mismatch"].get<std::size_t>();
    if (broken) return tensor + " NaN/Inf";
    if (relative > largest) {
      largest = relative;
      worst = tensor + " " + format_scientific(relative, 1);
    }
  }
  return worst;
}

// The summary table: one block per case, one row per implementation, fitting
// 80 columns for names of up to 17 characters (cuda.flash.simple); the reason
// of a record that is not ok follows on wrapped lines of its own.
void print_summary(const ResultsDocument& results) {
  const Json& records = results.json()["records"];
  int name_width = 14;
  for (const auto& record : records) {
    name_width = std::max(name_width, static_cast<int>(record["implementation"].get<std::string>().size()));
  }
  std::string current_case;
  for (const auto& record : records) {
    const std::string case_label = record["scenario"].get<std::string>() + "#" +
                                   std::to_string(record["case_index"].get<std::size_t>());
    if (case_label != current_case) {
      current_case = case_label;
      const std::string label = short_case_label(record["problem"]);
      if (case_label.size() + 2 + label.size() <= 80) {
        std::printf("\n%s  %s\n", case_label.c_str(), label.c_str());
      } else {
        std::printf("\n%s\n  %s\n", case_label.c_str(), label.c_str());
      }
      std::printf("  %-*s %-7s %9s %6s %13s %10s %s\n", name_width, "implementation", "status", "median", "+-CI/2",
                  "throughput", "peak mem", "rel. error");
    }
    const Json& timing = record["timing"];
    std::string median = "-", spread = "-", throughput = "-", peak = "-";
    if (!timing.is_null()) {
      const Json& statistics = timing["statistics"];
      const double p50 = statistics["p50"].get<double>();
      median = format_seconds(p50);
      if (p50 > 0 && statistics["median_ci_defined"].get<bool>()) {
        const double half_width =
            (statistics["median_ci_high"].get<double>() - statistics["median_ci_low"].get<double>()) / 2 / p50;
        spread = format_fixed(100 * half_width, 1) + "%";
      }
      if (p50 > 0) throughput = format_flops_rate(record["flops"]["total"].get<double>() / p50);
    }
    if (!record["memory"].is_null()) peak = format_bytes(record["memory"]["peak_bytes"].get<double>());
    std::printf("  %-*s %-7s %9s %6s %13s %10s %s\n", name_width, record["implementation"].get<std::string>().c_str(),
                record["status"].get<std::string>().c_str(), median.c_str(), spread.c_str(), throughput.c_str(),
                peak.c_str(), worst_error(record["accuracy"]).c_str());
    if (record["status"] != "ok") {
      for (const std::string& line : wrap_words(record["reason"].get<std::string>(), 80, "    ")) {
        std::printf("%s\n", line.c_str());
      }
    }
  }
}

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
  std::vector<Scenario> scenarios = load_scenarios(options.scenario_paths);
  scenarios.insert(scenarios.end(), options.built_scenarios.begin(), options.built_scenarios.end());
  std::optional<std::regex> filter;
  if (!options.filter.empty()) {
    try {
      filter.emplace(options.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      throw InputError("--filter: not a valid regular expression (" + std::string(error.what()) + ")");
    }
  }
  std::vector<PlannedScenario> plan;
  std::size_t total_cases = 0;
  for (const Scenario& scenario : scenarios) {
    PlannedScenario planned{&scenario, {}, scenario.measure, {}};
    planned.implementations = options.implementations.empty()
                                  ? select_implementations(scenario.implementations, scenario.path + ": implementations")
                                  : select_implementations(options.implementations, "--impl");
    if (options.cold_cache) planned.measure.cold_cache = *options.cold_cache;
    for (std::size_t i = 0; i < scenario.cases.size(); ++i) {
      if (!filter || std::regex_search(scenario.name + "/" + scenario.cases[i].key, *filter)) planned.cases.push_back(i);
    }
    total_cases += planned.cases.size();
    plan.push_back(std::move(planned));
  }
  if (total_cases == 0) throw InputError("--filter \"" + options.filter + "\" matches no case");
  if (options.shard) total_cases = keep_shard(plan, *options.shard);
  if (options.resume && options.output_path.empty()) {
    throw InputError("--resume needs -o FILE naming the results file to continue");
  }
  const int threads = options.threads > 0 ? options.threads
                                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string output = options.output_path.empty() ? default_output_path(scenarios) : options.output_path;
  check_output_path(output, options.resume);
  if (!options.dump_dir.empty()) require_writable_directory(options.dump_dir, "--dump");
  CaseDumper dumper(options.dump_dir, options.resume);
  ResultsDocument results = options.resume && std::filesystem::exists(output)
                                ? ResultsDocument::resume(output, options.command_line, threads, scenarios, options.shard)
                                : ResultsDocument(options.command_line, threads);
  results.set_shard(options.shard);

  Json scenario_json = Json::array();
  for (const PlannedScenario& planned : plan) {
    Json names = Json::array();
    for (Implementation* implementation : planned.implementations) names.push_back(implementation->name());
    scenario_json.push_back(Json{{"path", planned.scenario->path},
                                 {"name", planned.scenario->name},
                                 {"description", planned.scenario->description},
                                 {"source", planned.scenario->source},
                                 {"implementations", names},
                                 {"measure", measure_settings_json(planned.measure)},
                                 {"accuracy", accuracy_settings_json(planned.scenario->accuracy)},
                                 {"case_count", planned.scenario->cases.size()}});
  }
  results.set_scenarios(scenario_json);
  results.checkpoint(output);

  ScenarioRunner runner(threads, ProfileSettings{options.profile, options.profile_kernels}, results, dumper);
  Progress progress(total_cases, options.interactive);
  std::size_t number = 0;
  for (const PlannedScenario& planned : plan) {
    for (std::size_t case_index : planned.cases) {
      const ScenarioCase& scenario_case = planned.scenario->cases[case_index];
      progress.start_case(++number, planned.scenario->name + "#" + std::to_string(case_index) + " " +
                                        short_case_label(problem_to_json(scenario_case.problem)));
      std::vector<Json> records = runner.run_case(planned, case_index, progress);
      std::string outcome;
      for (auto& record : records) {
        outcome += (outcome.empty() ? "" : ", ") + record["implementation"].get<std::string>() + " " +
                   record["status"].get<std::string>();
        results.add_record(std::move(record));
      }
      results.checkpoint(output);
      dumper.write_index();
      progress.finish_case(outcome.empty() ? "already in the results file" : outcome);
      if (runner.context_lost()) {
        progress.finish();
        throw RestartRequired("the device context was lost (recorded on the failed case); continuing in a new process",
                              output);
      }
    }
  }
  progress.finish();
  for (Backend* backend : runner.backends_used()) {
    results.set_device_clocks(backend->describe(), "run_end", backend->read_clocks());
  }
  results.finish(output);

  print_summary(results);
  std::size_t failed = 0;
  for (const auto& record : results.json()["records"]) failed += record["status"] == "failed" ? 1 : 0;
  std::printf("\n%s. Results: %s\n", record_counts(results.json()["records"]).c_str(), output.c_str());
  if (dumper.enabled()) std::printf("Arrays: %s\n", (fs::path(options.dump_dir) / "index.json").string().c_str());
  return failed ? kExitGateFailed : kExitSuccess;
}

}  // namespace attnbench
