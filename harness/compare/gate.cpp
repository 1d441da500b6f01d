// The regression gate: matching, device identity, per-metric verdicts and the
// Holm-corrected time verdicts (see harness/compare/gate.hpp and docs/compare.md).
#include "harness/compare/gate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "harness/measure/accuracy.hpp"
#include "harness/measure/statistics.hpp"
#include "harness/common/measure_settings.hpp"
#include "harness/compare/statistics.hpp"
#include "harness/embedded_schemas.hpp"
#include "harness/errors.hpp"
#include "harness/format.hpp"
#include "harness/machine_check.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
using CellKey = std::tuple<std::string, std::string, std::string>;  // scenario, case_key, implementation

// Floor of the accuracy rule, in fp32 unit roundoffs at the tensor's magnitude
// (max(1, max |oracle|)): the same allowance the run's own accuracy rule gives.
constexpr double kAccuracyFloorRoundoffs = AccuracySettings::kAccumulationRoundoffs;
constexpr double kFp32UnitRoundoff = 0x1p-24;

Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

std::string signed_percent(double fraction) {
  return (fraction >= 0 ? "+" : "") + format_fixed(100.0 * fraction, 1) + "%";
}

std::string signed_bytes(double bytes) { return (bytes >= 0 ? "+" : "-") + format_bytes(std::abs(bytes)); }

CellKey key_of(const Json& record) {
  return {record["scenario"].get<std::string>(), record["case_key"].get<std::string>(),
          record["implementation"].get<std::string>()};
}

UnmatchedCell unmatched(const Json& record) {
  return {record["scenario"].get<std::string>(), record["case_key"].get<std::string>(),
          record["implementation"].get<std::string>(), record["status"].get<std::string>()};
}

// The highest 1-minute load of a load_average entry, or nullopt.
std::optional<double> highest_of(const Json& load_average, std::optional<double> highest) {
  if (!load_average.is_object()) return highest;
  for (const char* when : {"run_start", "run_end"}) {
    if (!load_average[when].is_array()) continue;
    const double load = load_average[when][0].get<double>();
    highest = highest ? std::max(*highest, load) : load;
  }
  return highest;
}

CompareInput describe_input(const Json& document, const std::string& path) {
  CompareInput input;
  input.path = path;
  input.git_revision = document["tool"]["git_revision"].get<std::string>();
  input.started_at = document["started_at"].get<std::string>();
  input.records = document["records"].size();
  input.complete = document["complete"].get<bool>();
  if (document.contains("plugins") && document["plugins"].is_array()) input.plugins = document["plugins"];
  input.highest_load = highest_of(document.value("load_average", Json()), std::nullopt);
  if (document.contains("merged_from") && document["merged_from"].is_array()) {
    for (const Json& part : document["merged_from"]) {
      input.highest_load = highest_of(part.value("load_average", Json()), input.highest_load);
    }
  }
  input.available_cpus = document["host"].value("available_cpus", 0);
  for (const Json& record : document["records"]) {
    if (record["timing"].is_object() && record["timing"].contains("noise") && record["timing"]["noise"]["noisy"] == true) {
      ++input.noisy_records;
    }
  }
  if (document.contains("machine")) input.machine_warnings = findings_lines(document["machine"]["findings"], true);
  return input;
}

// Record positions by cell; a results file holds each cell once.
std::map<CellKey, std::size_t> index_records(const Json& document, const std::string& path) {
  std::map<CellKey, std::size_t> index;
  std::vector<Diagnostic> diagnostics;
  const Json& records = document["records"];
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto [found, inserted] = index.emplace(key_of(records[i]), i);
    if (!inserted) {
      diagnostics.push_back({path, "records[" + std::to_string(i) + "]",
                             "same (scenario, case_key, implementation) as records[" + std::to_string(found->second) +
                                 "]; a results file holds each cell once"});
    }
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return index;
}

// The tolerance keys an object (the configuration, an override, the flags) sets.
ToleranceOverride read_tolerances(const Json& object) {
  ToleranceOverride values;
  if (object.contains("time_threshold")) values.time_threshold = object["time_threshold"].get<double>();
  if (object.contains("min_effect")) values.min_effect = object["min_effect"].get<double>();
  if (object.contains("hbm_tolerance")) values.hbm_tolerance = object["hbm_tolerance"].get<double>();
  if (object.contains("memory_slack")) values.memory_slack = object["memory_slack"].get<std::uint64_t>();
  if (object.contains("accuracy_factor")) values.accuracy_factor = object["accuracy_factor"].get<double>();
  return values;
}

void apply(const ToleranceOverride& values, Tolerances& tolerances) {
  tolerances.time_threshold = values.time_threshold.value_or(tolerances.time_threshold);
  tolerances.min_effect = values.min_effect.value_or(tolerances.min_effect);
  tolerances.hbm_tolerance = values.hbm_tolerance.value_or(tolerances.hbm_tolerance);
  tolerances.memory_slack = values.memory_slack.value_or(tolerances.memory_slack);
  tolerances.accuracy_factor = values.accuracy_factor.value_or(tolerances.accuracy_factor);
}

// ---- devices ----

std::vector<Json> identities_of_kind(const Json& document, const std::string& kind) {
  std::vector<Json> identities;
  for (const Json& device : document["devices"]) {
    if (device["kind"] == kind) identities.push_back(device_identity(device));
  }
  std::sort(identities.begin(), identities.end(), [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  return identities;
}

std::string describe_value(const Json& object, const std::string& field) {
  return object.contains(field) ? object[field].dump() : "(absent)";
}

std::vector<DeviceDifference> compare_devices(const Json& base, const Json& next, const std::set<std::string>& kinds) {
  std::vector<DeviceDifference> differences;
  for (const std::string& kind : kinds) {
    const std::vector<Json> base_devices = identities_of_kind(base, kind);
    const std::vector<Json> new_devices = identities_of_kind(next, kind);
    // A file without a device of this kind (its records of it were all skipped) agrees with any.
    if (base_devices.empty() || new_devices.empty() || base_devices == new_devices) continue;
    if (base_devices.size() != 1 || new_devices.size() != 1) {
      differences.push_back({kind, "devices", Json(base_devices).dump(), Json(new_devices).dump()});
      continue;
    }
    std::set<std::string> fields;
    for (const Json* identity : {&base_devices[0], &new_devices[0]}) {
      for (const auto& [field, value] : identity->items()) fields.insert(field);
    }
    for (const std::string& field : fields) {
      const Json missing;
      const Json& a = base_devices[0].contains(field) ? base_devices[0][field] : missing;
      const Json& b = new_devices[0].contains(field) ? new_devices[0][field] : missing;
      if (a != b) {
        differences.push_back(
            {kind, field, describe_value(base_devices[0], field), describe_value(new_devices[0], field)});
      }
    }
  }
  return differences;
}

// ---- run settings ----

const Json* scenario_entry(const Json& document, const std::string& name) {
  for (const Json& scenario : document["scenarios"]) {
    if (scenario["name"] == name) return &scenario;
  }
  return nullptr;
}

// A record's timing.cache or timing.method; a record from before the method
// existed was timed by events.
Json timing_field(const Json& timing, const char* field) {
  if (timing.contains(field)) return timing[field];
  return std::string(field) == "method" ? Json("events") : Json();
}

// The settings that shape the matched records' timings and differ: the host
// threads (when a matched record ran on the host), each scenario's effective
// measure settings, and the cache mode of records whose scenarios agree on it
// (a run continued with --hot, say).
std::vector<SettingDifference> compare_run_settings(const Json& base, const Json& next,
                                                    const std::vector<std::pair<const Json*, const Json*>>& matched) {
  std::vector<SettingDifference> differences;
  bool host_records = false;
  std::vector<std::string> scenarios;
  for (const auto& [before, after] : matched) {
    host_records = host_records || (*before)["device"] == "cpu" || (*after)["device"] == "cpu";
    const std::string name = (*before)["scenario"];
    if (std::find(scenarios.begin(), scenarios.end(), name) == scenarios.end()) scenarios.push_back(name);
  }
  if (host_records && base["threads"] != next["threads"]) {
    differences.push_back({"threads", base["threads"].dump(), next["threads"].dump()});
  }
  // Per scenario, the measure keys whose difference the records' own timing
  // keys would repeat (timing.cache, timing.method).
  std::map<std::string, std::set<std::string>> measure_differs;
  for (const std::string& name : scenarios) {
    const Json* before = scenario_entry(base, name);
    const Json* after = scenario_entry(next, name);
    if (!before || !after) continue;
    const Json base_measure = with_default_timing((*before)["measure"]);
    const Json new_measure = with_default_timing((*after)["measure"]);
    std::set<std::string> keys;
    for (const Json* measure : {&base_measure, &new_measure}) {
      for (const auto& [key, value] : measure->items()) keys.insert(key);
    }
    for (const std::string& key : keys) {
      if (base_measure.value(key, Json()) == new_measure.value(key, Json())) continue;
      differences.push_back(
          {name + " measure." + key, describe_value(base_measure, key), describe_value(new_measure, key)});
      measure_differs[name].insert(key);
    }
  }
  // The cache mode and the timing method of each matched pair whose
  // scenarios agree on them: a run continued with --hot, a fallback order
  // that fell back on one side only.
  for (const auto& [field, measure_key] : {std::pair<const char*, const char*>{"cache", "cache"},
                                            std::pair<const char*, const char*>{"method", "timing"}}) {
    std::size_t mixed_cells = 0;
    std::string example, base_value, new_value;
    for (const auto& [before, after] : matched) {
      if (!(*before)["timing"].is_object() || !(*after)["timing"].is_object()) continue;
      if (measure_differs[(*before)["scenario"].get<std::string>()].count(measure_key)) continue;
      const Json a = timing_field((*before)["timing"], field);
      const Json b = timing_field((*after)["timing"], field);
      if (a == b) continue;
      if (mixed_cells++ == 0) {
        example = (*before)["scenario"].get<std::string>() + "/" + (*before)["case_key"].get<std::string>() + " " +
                  (*before)["implementation"].get<std::string>();
        base_value = a.dump();
        new_value = b.dump();
      }
    }
    if (mixed_cells > 0) {
      differences.push_back({std::string("timing.") + field + " of " + std::to_string(mixed_cells) + " record(s), e.g. " +
                                 example,
                             base_value, new_value});
    }
  }
  return differences;
}

// ---- metrics ----

MetricComparison metric(std::string name, CompareVerdict verdict, std::string summary, Json details = Json::object()) {
  details["verdict"] = to_string(verdict);
  return {std::move(name), verdict, std::move(summary), std::move(details)};
}

// A verdict from the records' statuses when they are not both "ok" (then the
// measurements are not compared); nullopt when both are.
std::optional<MetricComparison> compare_statuses(const Json& base, const Json& next) {
  const std::string before = base["status"], after = next["status"];
  if (before == "ok" && after == "ok") return std::nullopt;
  const std::string new_reason = next["reason"];
  const Json details = {{"base", before}, {"new", after}, {"base_reason", base["reason"]}, {"new_reason", new_reason}};
  const bool new_accuracy_failed = next["accuracy"].is_object() && next["accuracy"]["status"] == "failed";
  if (after == "failed") {
    if (before != "failed") return metric("status", CompareVerdict::regression, "NEW failed: " + new_reason, details);
    if (new_accuracy_failed) {
      return metric("status", CompareVerdict::regression, "NEW failed accuracy (BASE failed too): " + new_reason,
                    details);
    }
    return metric("status", CompareVerdict::inconclusive, "failed in BASE and NEW: " + new_reason, details);
  }
  if (after == "ok") {
    return metric("status", CompareVerdict::improvement, "BASE " + before + ", NEW ok", details);
  }
  if (before == "skipped") {
    return metric("status", CompareVerdict::pass, "skipped in BASE and NEW: nothing to compare", details);
  }
  return metric("status", CompareVerdict::inconclusive, "NEW skipped: " + new_reason, details);
}

// Whether a record's time comes from the simulator (cudasim), not a GPU.
bool is_simulated(const Json& record) {
  return record["timing"].is_object() && record["timing"].value("simulated", false);
}

// Why the time of a cell cannot be judged, or "" when it can.
std::string time_not_comparable(const Json& base, const Json& next) {
  if (!base["timing"].is_object() || !next["timing"].is_object()) {
    if (base["timing"].is_object()) return "no timing in NEW";
    return next["timing"].is_object() ? "no timing in BASE" : "no timing in BASE and NEW";
  }
  std::string throttled;
  if (base["timing"]["throttled"] == true) throttled = "BASE";
  if (next["timing"]["throttled"] == true) throttled += throttled.empty() ? "NEW" : " and NEW";
  if (!throttled.empty()) return "throttled (" + throttled + ")";
  return "";
}

// Why these samples cannot be compared, or "" when they can.
std::string samples_not_comparable(const TimeSamples& samples) {
  const std::size_t m = samples.base_seconds.size(), n = samples.new_seconds.size();
  if (std::min(m, n) < kMinimumTimeSamples) {
    return std::to_string(m) + " and " + std::to_string(n) + " samples; at least " +
           std::to_string(kMinimumTimeSamples) + " on each side are needed";
  }
  for (const auto* side : {&samples.base_seconds, &samples.new_seconds}) {
    for (double seconds : *side) {
      if (!(seconds > 0) || !std::isfinite(seconds)) {
        return "a sample of " + format_seconds(seconds) + " (no ratio can be taken)";
      }
    }
  }
  return "";
}

std::vector<double> logarithms(const std::vector<double>& values) {
  std::vector<double> logs;
  for (double value : values) logs.push_back(std::log(value));
  return logs;
}

// One round of a record's samples (merge --rounds), or all of a plain record's.
struct RoundOfRecord {
  int round = 1;
  std::vector<double> samples;
  bool noisy = false;
  std::string noise;  // its noise verdict
};

// A noise verdict without its notes: what made it noisy.
std::string without_notes(const std::string& verdict) { return verdict.substr(0, verdict.find("; notes: ")); }

std::vector<RoundOfRecord> rounds_of(const Json& record) {
  const Json& timing = record["timing"];
  const auto samples = timing["samples_seconds"].get<std::vector<double>>();
  if (!timing.contains("rounds")) {
    const bool noisy = timing.contains("noise") && timing["noise"]["noisy"].get<bool>();
    return {{1, samples, noisy, timing.contains("noise") ? without_notes(timing["noise"]["verdict"]) : ""}};
  }
  std::vector<RoundOfRecord> rounds;
  std::size_t next = 0;
  for (const Json& round : timing["rounds"]) {
    const std::size_t count = std::min(round["samples"].get<std::size_t>(), samples.size() - next);
    rounds.push_back({round["round"].get<int>(),
                      std::vector<double>(samples.begin() + static_cast<std::ptrdiff_t>(next),
                                          samples.begin() + static_cast<std::ptrdiff_t>(next + count)),
                      round["noisy"].get<bool>(), without_notes(round["noise"].get<std::string>())});
    next += count;
  }
  return rounds;
}

// The samples of a cell's rounds that are clean on both sides, paired by round
// number (a record of one run is round 1 of 1 and pairs with any other such).
// Fills `samples` and returns "" when enough rounds are clean, or why the
// cell is noisy: fewer than half of the paired rounds clean, or none.
std::string clean_rounds(const Json& base, const Json& next, bool allow_noisy, TimeSamples& samples) {
  std::vector<RoundOfRecord> before = rounds_of(base), after = rounds_of(next);
  if (before.size() == 1 || after.size() == 1) {  // one side unrounded: compare the pooled samples
    const auto pool = [](const std::vector<RoundOfRecord>& rounds) {
      RoundOfRecord pooled{1, {}, false, ""};
      for (const RoundOfRecord& round : rounds) {
        pooled.samples.insert(pooled.samples.end(), round.samples.begin(), round.samples.end());
        pooled.noisy = pooled.noisy || round.noisy;
        if (round.noisy) pooled.noise += (pooled.noise.empty() ? "" : "; ") + round.noise;
      }
      return std::vector<RoundOfRecord>{pooled};
    };
    if (before.size() != 1) before = pool(before);
    if (after.size() != 1) after = pool(after);
  }
  std::vector<std::string> noisy;
  std::size_t paired = 0;
  for (const RoundOfRecord& a : before) {
    const auto b = std::find_if(after.begin(), after.end(), [&](const RoundOfRecord& r) {
      return r.round == a.round || (before.size() == 1 && after.size() == 1);
    });
    if (b == after.end() || a.samples.empty() || b->samples.empty()) continue;
    ++paired;
    const std::string round = before.size() == 1 ? "" : " round " + std::to_string(a.round);
    if (a.noisy) noisy.push_back("BASE" + round + " " + a.noise);
    if (b->noisy) noisy.push_back("NEW" + round + " " + b->noise);
    if ((a.noisy || b->noisy) && !allow_noisy) continue;
    samples.base_seconds.insert(samples.base_seconds.end(), a.samples.begin(), a.samples.end());
    samples.new_seconds.insert(samples.new_seconds.end(), b->samples.begin(), b->samples.end());
    samples.rounds.push_back({a.round, median_of(a.samples), median_of(b->samples)});
  }
  if (paired > 0 && 2 * samples.rounds.size() >= paired && !samples.rounds.empty()) return "";
  std::string text = paired == 0 ? "no round of BASE has a counterpart in NEW" : "";
  for (const std::string& item : noisy) text += (text.empty() ? "" : "; ") + item;
  return text;
}

std::optional<MetricComparison> compare_hbm_bytes(const Json& base, const Json& next, double tolerance) {
  std::string source;
  // A traffic entry with bytes: counted, or measured with status ok (a
  // measured entry may instead say why the profiler did not collect).
  const auto has_bytes = [](const Json& entry) {
    return entry.is_object() && entry.contains("read_bytes") && entry["read_bytes"].is_number() &&
           entry.contains("write_bytes") && entry["write_bytes"].is_number();
  };
  for (const char* candidate : {"measured", "counted"}) {
    if (has_bytes(base["traffic"][candidate]) && has_bytes(next["traffic"][candidate])) {
      source = candidate;
      break;
    }
  }
  if (source.empty()) return std::nullopt;
  const auto total = [&](const Json& record) {
    const Json& bytes = record["traffic"][source];
    return bytes["read_bytes"].get<double>() + bytes["write_bytes"].get<double>();
  };
  const double before = total(base), after = total(next);
  const double from_zero = after > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  const double change = before > 0 ? (after - before) / before : from_zero;
  CompareVerdict verdict = CompareVerdict::pass;
  std::string summary = "HBM bytes (" + source + ") " + (before > 0 ? signed_percent(change) : "from 0 B");
  if (change > tolerance) {
    verdict = CompareVerdict::regression;
    summary += " > " + format_fixed(100.0 * tolerance, 2) + "%";
  } else if (change < -tolerance) {
    verdict = CompareVerdict::improvement;
  }
  summary += " (" + format_bytes(before) + " -> " + format_bytes(after) + ")";
  return metric("hbm_bytes", verdict, summary,
                {{"source", source}, {"base_bytes", before}, {"new_bytes", after},
                 {"relative_change", finite_or_null(change)}, {"tolerance", tolerance}});
}

std::optional<MetricComparison> compare_peak_memory(const Json& base, const Json& next, std::uint64_t slack) {
  if (!base["memory"].is_object() || !next["memory"].is_object()) return std::nullopt;
  const auto before = base["memory"]["peak_bytes"].get<std::uint64_t>();
  const auto after = next["memory"]["peak_bytes"].get<std::uint64_t>();
  const double growth = static_cast<double>(after) - static_cast<double>(before);
  CompareVerdict verdict = CompareVerdict::pass;
  std::string summary = "peak memory " + signed_bytes(growth);
  if (after > before && after - before > slack) {
    verdict = CompareVerdict::regression;
    summary += " > slack " + format_bytes(static_cast<double>(slack));
  } else if (before > after && before - after > slack) {
    verdict = CompareVerdict::improvement;
  }
  summary += " (" + format_bytes(static_cast<double>(before)) + " -> " + format_bytes(static_cast<double>(after)) + ")";
  return metric("peak_memory", verdict, summary,
                {{"base_bytes", before}, {"new_bytes", after}, {"growth_bytes", growth}, {"slack_bytes", slack}});
}

std::optional<MetricComparison> compare_accuracy(const Json& base, const Json& next, double factor) {
  if (!base["accuracy"].is_object() || !next["accuracy"].is_object()) return std::nullopt;
  const Json& before = base["accuracy"];
  const Json& after = next["accuracy"];
  if (after["status"] == "failed") {
    return metric("accuracy", CompareVerdict::regression,
                  "accuracy failed in NEW: " + after["reason"].get<std::string>(), {{"new_status", "failed"}});
  }
  Json tensors = Json::object();
  std::vector<std::string> failures;
  for (const auto& [tensor, base_error] : before["tensors"].items()) {
    if (!after["tensors"].contains(tensor)) continue;
    const double base_max = base_error["max_abs_error"].get<double>();
    const double new_max = after["tensors"][tensor]["max_abs_error"].get<double>();
    const double floor =
        kAccuracyFloorRoundoffs * kFp32UnitRoundoff * std::max(1.0, base_error["oracle_max_abs"].get<double>());
    const double limit = factor * base_max + floor;
    const bool passed = new_max <= limit;
    tensors[tensor] = {
        {"base_max_abs_error", base_max}, {"new_max_abs_error", new_max}, {"limit", limit}, {"passed", passed}};
    if (!passed) {
      failures.push_back(tensor + " max abs error " + format_scientific(new_max) + " > " + format_fixed(factor, 1) +
                         " x " + format_scientific(base_max) + " + " + format_scientific(floor));
    }
  }
  if (tensors.empty()) return std::nullopt;
  std::string summary = "accuracy";
  for (std::size_t i = 0; i < failures.size(); ++i) summary += (i ? "; " : " ") + failures[i];
  return metric("accuracy", failures.empty() ? CompareVerdict::pass : CompareVerdict::regression,
                failures.empty() ? "accuracy within " + format_fixed(factor, 1) + " x BASE's error" : summary,
                {{"factor", factor}, {"tensors", tensors}});
}

// A candidate regression or improvement (the interval cleared the threshold)
// checked against the effect across rounds (gate.hpp, compare_times).
MetricComparison backed_by_rounds(const TimeSamples& samples, CompareVerdict candidate, double pooled_ratio,
                                  std::string summary, Json details) {
  const bool slower = candidate == CompareVerdict::regression;
  const double limit = slower ? 1.0 + samples.min_effect : 1.0 / (1.0 + samples.min_effect);
  std::vector<double> ratios;
  Json rounds = Json::array();
  std::string listed;
  for (const RoundMedians& round : samples.rounds) {
    const double ratio = round.new_p50 / round.base_p50;
    ratios.push_back(ratio);
    rounds.push_back({{"round", round.round}, {"base_p50", round.base_p50}, {"new_p50", round.new_p50},
                      {"ratio", finite_or_null(ratio)}});
    listed += (listed.empty() ? "" : ", ") + signed_percent(ratio - 1.0);
  }
  const double effect = ratios.size() > 1 ? median_of(ratios) : pooled_ratio;
  details["rounds"] = rounds;
  details["min_effect"] = samples.min_effect;
  details["effect"] = finite_or_null(effect);
  const bool disagree = std::any_of(ratios.begin(), ratios.end(), [&](double r) { return slower ? !(r > 1) : !(r < 1); });
  const std::string per_round = ratios.size() > 1 ? "; rounds " + listed : "";
  if (ratios.size() > 1 && disagree) {
    return metric("time", CompareVerdict::inconclusive,
                  summary + ": the rounds disagree in direction (" + listed + ")", std::move(details));
  }
  const std::string minimum = (slower ? "+" : "-") + format_fixed(100.0 * samples.min_effect, 1) + "%";
  if (slower ? !(effect > limit) : !(effect < limit)) {
    return metric("time", CompareVerdict::pass,
                  summary + ": effect " + signed_percent(effect - 1.0) + " within the minimum effect " + minimum +
                      per_round,
                  std::move(details));
  }
  const bool short_of = std::any_of(ratios.begin(), ratios.end(), [&](double r) { return slower ? !(r > limit) : !(r < limit); });
  if (ratios.size() > 1 && short_of) {
    return metric("time", CompareVerdict::inconclusive,
                  summary + ": not every round shows the minimum effect " + minimum + " (" + listed + ")",
                  std::move(details));
  }
  const double threshold = samples.time_threshold;
  const std::string bound = slower ? " > " + signed_percent(threshold) : " < " + signed_percent(1.0 / (1.0 + threshold) - 1.0);
  return metric("time", candidate, summary + bound + per_round, std::move(details));
}

MetricComparison time_verdict(const TimeSamples& samples, const ShiftComparison& comparison,
                              const HolmDecision& decision) {
  const std::size_t m = samples.base_seconds.size(), n = samples.new_seconds.size();
  const double ratio = std::exp(comparison.estimate());
  const double slower = samples.time_threshold;       // ratio above 1 + threshold: regression
  Json details = {{"base_samples", m},
                  {"new_samples", n},
                  {"threshold", slower},
                  {"ratio", finite_or_null(ratio)},
                  {"ratio_low", nullptr},
                  {"ratio_high", nullptr},
                  {"confidence", 1.0 - 2.0 * decision.level},
                  {"one_sided_level", decision.level},
                  {"p_value", comparison.p_value()},
                  {"holm_adjusted_p_value", decision.adjusted_p},
                  {"holm_rejected", decision.rejected},
                  {"u_statistic", comparison.u_statistic()},
                  {"method", comparison.exact() ? "exact" : "normal"}};
  const std::optional<ShiftInterval> interval = comparison.interval(decision.level);
  if (!interval) {
    return metric("time", CompareVerdict::inconclusive,
                  "time " + signed_percent(ratio - 1.0) + ": " + std::to_string(m) + " and " + std::to_string(n) +
                      " samples give no interval at the Holm level " + format_scientific(decision.level),
                  details);
  }
  const double low = std::exp(interval->lower), high = std::exp(interval->upper);
  details["ratio_low"] = finite_or_null(low);
  details["ratio_high"] = finite_or_null(high);
  std::string summary = "time " + signed_percent(ratio - 1.0) + " [" + signed_percent(low - 1.0) + ", " +
                        signed_percent(high - 1.0) + "]";
  // The lower bound lies above 1 + threshold exactly when Holm rejects (same
  // null distribution, same level), so the candidate verdict follows the test;
  // the rounds must then back it with an effect of at least min_effect.
  CompareVerdict candidate = CompareVerdict::pass;
  if (decision.rejected) {
    candidate = CompareVerdict::regression;
  } else if (interval->upper < -std::log1p(slower)) {
    candidate = CompareVerdict::improvement;
  }
  if (candidate == CompareVerdict::pass) return metric("time", CompareVerdict::pass, summary, details);
  return backed_by_rounds(samples, candidate, ratio, std::move(summary), std::move(details));
}

// How to get `needed` samples a side, for an inconclusive verdict's summary.
std::string more_samples_advice(std::size_t needed) {
  return "; rerun both with --min-samples " + std::to_string(needed) + " (measure.min_samples) or more";
}

}  // namespace

std::vector<MetricComparison> compare_times(const std::vector<TimeSamples>& cells, double alpha) {
  // Samples per side that give an interval at the smallest level Holm may use
  // on a family of every cell, and that pass the minimum.
  const double smallest_level = alpha / static_cast<double>(std::max<std::size_t>(1, cells.size()));
  const std::size_t needed = std::max(kMinimumTimeSamples, samples_for_an_interval(smallest_level));
  std::vector<MetricComparison> verdicts(cells.size());
  std::vector<std::size_t> family;  // cells judged
  std::vector<ShiftComparison> comparisons;
  std::vector<double> p_values;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string unjudgeable = samples_not_comparable(cells[i]);
    if (!unjudgeable.empty()) {
      const bool too_few = std::min(cells[i].base_seconds.size(), cells[i].new_seconds.size()) < kMinimumTimeSamples;
      const std::string summary = "time: " + unjudgeable + (too_few ? more_samples_advice(needed) : "");
      Json details = {{"reason", unjudgeable}};
      if (too_few) details["samples_needed"] = needed;
      verdicts[i] = metric("time", CompareVerdict::inconclusive, summary, details);
      continue;
    }
    family.push_back(i);
    comparisons.emplace_back(logarithms(cells[i].base_seconds), logarithms(cells[i].new_seconds),
                             std::log1p(cells[i].time_threshold));
    p_values.push_back(comparisons.back().p_value());
  }
  const std::vector<HolmDecision> decisions = holm_step_down(p_values, alpha);
  for (std::size_t k = 0; k < family.size(); ++k) {
    MetricComparison& verdict = verdicts[family[k]] = time_verdict(cells[family[k]], comparisons[k], decisions[k]);
    if (verdict.verdict == CompareVerdict::inconclusive && verdict.details["ratio_low"].is_null()) {
      // no interval at the cell's Holm level
      verdict.summary += more_samples_advice(needed);
      verdict.details["samples_needed"] = needed;
    }
  }
  return verdicts;
}

// ---- settings ----

const Json& compare_config_schema() {
  static const Json schema = Json::parse(embedded_compare_schema());
  return schema;
}

Tolerances CompareSettings::for_cell(const std::string& scenario, const std::string& case_key,
                                     const std::string& implementation) const {
  Tolerances tolerances = defaults;
  const std::string cell = scenario + "/" + case_key + "/" + implementation;
  for (const ToleranceOverride& override_ : overrides) {
    if (override_.pattern->search(cell)) apply(override_, tolerances);
  }
  return tolerances;
}

CompareSettings parse_compare_config(const Json& document, const std::string& file) {
  static const JsonSchema schema(compare_config_schema());
  std::vector<Diagnostic> diagnostics;
  for (const SchemaError& error : schema.validate(document)) diagnostics.push_back({file, error.path, error.message});
  if (!diagnostics.empty()) throw InputError(diagnostics);

  CompareSettings settings;
  settings.config_path = file;
  apply(read_tolerances(document), settings.defaults);
  settings.alpha = document.value("alpha", settings.alpha);
  settings.allow_different_devices = document.value("allow_different_devices", false);
  settings.allow_noisy = document.value("allow_noisy", false);
  settings.allow_different_settings = document.value("allow_different_settings", false);
  const Json overrides = document.value("overrides", Json::array());
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    ToleranceOverride entry = read_tolerances(overrides[i]);
    entry.match = overrides[i]["match"].get<std::string>();
    try {
      entry.pattern.emplace(entry.match);
    } catch (const RegexError& error) {
      diagnostics.push_back({file, "overrides[" + std::to_string(i) + "].match", error.what()});
      continue;
    }
    settings.overrides.push_back(std::move(entry));
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return settings;
}

CompareSettings load_compare_config(const std::string& path) {
  std::vector<Diagnostic> diagnostics;
  std::string text;
  if (!read_text_file(path, text, diagnostics)) throw InputError(diagnostics);
  const Json document = parse_json_document(text, path, diagnostics);
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return parse_compare_config(document, path);
}

void apply_command_line_settings(CompareSettings& settings, const Json& flags) {
  static const JsonSchema schema(compare_config_schema());
  const auto flag_of = [](std::string key) {
    std::replace(key.begin(), key.end(), '_', '-');
    return "--" + key;
  };
  std::vector<Diagnostic> diagnostics;
  for (const auto& [key, value] : flags.items()) {  // a file cannot hold these, a command line can
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      diagnostics.push_back({"", flag_of(key), "must be a finite number"});
    }
  }
  if (diagnostics.empty()) {
    for (const SchemaError& error : schema.validate(flags)) {
      diagnostics.push_back({"", flag_of(error.path), error.message});
    }
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
  apply(read_tolerances(flags), settings.defaults);
  settings.alpha = flags.value("alpha", settings.alpha);
  if (flags.value("allow_different_devices", false)) settings.allow_different_devices = true;
  if (flags.value("allow_noisy", false)) settings.allow_noisy = true;
  if (flags.value("allow_different_settings", false)) settings.allow_different_settings = true;
}

// ---- the gate ----

const char* to_string(CompareVerdict verdict) {
  switch (verdict) {
    case CompareVerdict::pass: return "pass";
    case CompareVerdict::improvement: return "improvement";
    case CompareVerdict::inconclusive: return "inconclusive";
    case CompareVerdict::regression: return "regression";
  }
  return "?";
}

const MetricComparison* CellComparison::metric(const std::string& name) const {
  for (const MetricComparison& entry : metrics) {
    if (entry.metric == name) return &entry;
  }
  return nullptr;
}

std::string CompareInput::machine_text() const {
  std::vector<std::string> parts;
  if (highest_load) {
    parts.push_back("load average up to " + format_fixed(*highest_load, 1) +
                    (available_cpus > 0 ? " on " + count_of(static_cast<std::size_t>(available_cpus), "CPU") : ""));
  }
  if (noisy_records > 0) parts.push_back(count_of(noisy_records, "noisy record"));
  parts.insert(parts.end(), machine_warnings.begin(), machine_warnings.end());
  return join(parts, "; ");
}

std::string DeviceDifference::format() const {
  return kind + " " + field + ": " + base + " (BASE) vs " + next + " (NEW)";
}

std::string SettingDifference::format() const { return setting + ": " + base + " (BASE) vs " + next + " (NEW)"; }

CompareReport::TimeSummary CompareReport::time_summary() const {
  TimeSummary summary;
  double log_sum = 0;
  for (const CellComparison& cell : cells) {
    const MetricComparison* time = cell.metric("time");
    if (!time || !time->details.contains("ratio") || !time->details["ratio"].is_number()) continue;
    const double ratio = time->details["ratio"].get<double>();
    if (!(ratio > 0) || !std::isfinite(ratio)) continue;
    log_sum += std::log(ratio);
    ++summary.cells;
  }
  if (summary.cells > 0) summary.geometric_mean_ratio = std::exp(log_sum / static_cast<double>(summary.cells));
  return summary;
}

std::size_t CompareReport::count(CompareVerdict verdict) const {
  return static_cast<std::size_t>(
      std::count_if(cells.begin(), cells.end(), [&](const CellComparison& cell) { return cell.verdict == verdict; }));
}

std::vector<std::string> CompareReport::unfinished() const {
  std::vector<std::string> sides;
  if (!base.complete) sides.push_back("BASE");
  if (!next.complete) sides.push_back("NEW");
  return sides;
}

bool CompareReport::measured_anything() const {
  for (const CellComparison& cell : cells) {
    for (const MetricComparison& entry : cell.metrics) {
      if (entry.metric != "status" || entry.verdict != CompareVerdict::pass) return true;
    }
  }
  return false;
}

CompareReport compare_results(const Json& base, const Json& next, const CompareSettings& settings,
                              const std::string& base_path, const std::string& new_path) {
  CompareReport report;
  report.base = describe_input(base, base_path);
  report.next = describe_input(next, new_path);
  report.settings = settings;
  const auto base_records = index_records(base, base_path);
  const auto new_records = index_records(next, new_path);

  std::set<std::string> device_kinds;
  std::vector<std::pair<const Json*, const Json*>> matched;
  for (const Json& record : base["records"]) {
    const auto found = new_records.find(key_of(record));
    const bool ran = record["status"] == "ok";
    if (found == new_records.end()) {
      report.only_in_base.push_back(unmatched(record));
      if (ran) {
        const auto& [scenario, case_key, implementation] = key_of(record);
        report.missing.push_back({scenario, case_key, implementation, "absent", ""});
      }
      continue;
    }
    const Json& counterpart = next["records"][found->second];
    if (ran && counterpart["status"] == "skipped") {
      const auto& [scenario, case_key, implementation] = key_of(record);
      report.missing.push_back({scenario, case_key, implementation, "skipped", counterpart["reason"]});
      continue;
    }
    matched.emplace_back(&record, &counterpart);
    device_kinds.insert(record["device"].get<std::string>());
    device_kinds.insert(counterpart["device"].get<std::string>());
  }
  for (const Json& record : next["records"]) {
    if (!base_records.count(key_of(record))) report.only_in_new.push_back(unmatched(record));
  }

  report.device_differences = compare_devices(base, next, device_kinds);
  report.setting_differences = compare_run_settings(base, next, matched);
  if ((!report.device_differences.empty() && !settings.allow_different_devices) ||
      (!report.setting_differences.empty() && !settings.allow_different_settings)) {
    report.refused = true;
    report.exit_code = kExitNotComparable;
    return report;
  }

  std::vector<TimeSamples> timed;          // cells whose time can be judged…
  std::vector<std::size_t> timed_cells;    // …and where they are in report.cells
  for (const auto& [before, after] : matched) {
    CellComparison cell;
    std::tie(cell.scenario, cell.case_key, cell.implementation) = key_of(*before);
    cell.tolerances = settings.for_cell(cell.scenario, cell.case_key, cell.implementation);
    if (std::optional<MetricComparison> status = compare_statuses(*before, *after)) {
      cell.metrics.push_back(std::move(*status));
    } else {
      const std::string unjudgeable = time_not_comparable(*before, *after);
      if (is_simulated(*before) || is_simulated(*after)) {
        // A simulator's clock says nothing about a GPU's speed: no verdict either way.
        cell.metrics.push_back(metric("time", CompareVerdict::pass, "time: not judged (simulated on the CPU)",
                                      {{"reason", "simulated"}}));
      } else if (is_oracle_record(*before) || is_oracle_record(*after)) {
        // The fp64 oracle is the yardstick of accuracy, not a subject of the gate.
        cell.metrics.push_back(metric("time", CompareVerdict::pass, "time: not judged (the fp64 oracle)",
                                      {{"reason", "oracle"}}));
      } else if (unjudgeable.empty()) {
        TimeSamples samples;
        samples.time_threshold = cell.tolerances.time_threshold;
        samples.min_effect = cell.tolerances.min_effect;
        if (const std::string noisy = clean_rounds(*before, *after, settings.allow_noisy, samples); !noisy.empty()) {
          cell.metrics.push_back(metric("time", CompareVerdict::inconclusive, "time: " + noisy,
                                        {{"reason", "noisy"}, {"noise", noisy}}));
        } else {
          timed.push_back(std::move(samples));
          timed_cells.push_back(report.cells.size());
        }
      } else {
        cell.metrics.push_back(
            metric("time", CompareVerdict::inconclusive, "time: " + unjudgeable, {{"reason", unjudgeable}}));
      }
      for (auto measured : {compare_hbm_bytes(*before, *after, cell.tolerances.hbm_tolerance),
                            compare_peak_memory(*before, *after, cell.tolerances.memory_slack),
                            compare_accuracy(*before, *after, cell.tolerances.accuracy_factor)}) {
        if (measured) cell.metrics.push_back(std::move(*measured));
      }
    }
    report.cells.push_back(std::move(cell));
  }
  std::vector<MetricComparison> times = compare_times(timed, settings.alpha);
  for (std::size_t i = 0; i < times.size(); ++i) {
    auto& metrics = report.cells[timed_cells[i]].metrics;
    metrics.insert(metrics.begin(), std::move(times[i]));
  }

  for (CellComparison& cell : report.cells) {
    for (const MetricComparison& entry : cell.metrics) cell.verdict = std::max(cell.verdict, entry.verdict);
  }
  if (report.count(CompareVerdict::regression) > 0) {
    report.exit_code = kExitGateFailed;
  } else if ((report.incomplete() && !settings.allow_missing) || report.count(CompareVerdict::inconclusive) > 0 ||
             !report.measured_anything()) {
    report.exit_code = kExitNotComparable;
  } else {
    report.exit_code = kExitSuccess;
  }
  return report;
}

}  // namespace attnbench
