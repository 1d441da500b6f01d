// `attnbench merge`: see harness/results/merge.hpp for the rules and docs/results.md for the
// merged file. Every check runs before anything is written, and each reports
// all it finds at once.
#include "harness/results/merge.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "harness/results/file_lock.hpp"
#include "harness/user_paths.hpp"
#include "harness/message_text.hpp"
#include "harness/format.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/results/run_identity.hpp"
#include "harness/measure/noise.hpp"
#include "harness/measure/statistics.hpp"
#include "harness/measure/timing_methods.hpp"
#include "harness/results/derived_figures.hpp"
#include "harness/scenario/scenario.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string shard_label(const Json& shard) {
  return std::to_string(shard["index"].get<int>()) + "/" + std::to_string(shard["count"].get<int>());
}

// "name (\"A\" vs \"B\"), logical_cpus (8 vs 16)": the fields in which `here` and `there` differ.
std::string differing_fields(const Json& here, const Json& there) {
  std::set<std::string> keys;
  for (const auto& [key, value] : here.items()) keys.insert(key);
  for (const auto& [key, value] : there.items()) keys.insert(key);
  std::string text;
  for (const std::string& key : keys) {
    const Json mine = here.contains(key) ? here[key] : Json("(absent)");
    const Json theirs = there.contains(key) ? there[key] : Json("(absent)");
    if (mine != theirs) text += (text.empty() ? "" : ", ") + key + " (" + mine.dump() + " vs " + theirs.dump() + ")";
  }
  return text;
}

// Devices are compared per kind: every input that used a "cpu" device must have
// used one of the same identity. An input with no device of a kind (all its
// records skipped) agrees with any.
std::vector<Diagnostic> device_differences(const std::vector<MergeInput>& inputs) {
  std::map<std::string, std::pair<const MergeInput*, Json>> first_of_kind;
  std::vector<Diagnostic> differences;
  for (const MergeInput& input : inputs) {
    for (const Json& device : input.document["devices"]) {
      const Json identity = device_identity(device);
      const auto [first, inserted] = first_of_kind.try_emplace(device["kind"].get<std::string>(), &input, identity);
      const auto& [first_input, first_identity] = first->second;
      if (inserted || first_identity == identity) continue;
      differences.push_back({input.path, "devices",
                             "its " + first->first + " device differs from " + first_input->path + "'s: " +
                                 differing_fields(identity, first_identity) +
                                 " (--allow-mixed-devices merges them anyway)"});
    }
  }
  return differences;
}

// One description per distinct device identity: the first input's.
Json merged_devices(const std::vector<MergeInput>& inputs) {
  Json devices = Json::array();
  std::set<std::string> identities;
  for (const MergeInput& input : inputs) {
    for (const Json& device : input.document["devices"]) {
      if (identities.insert(device_identity(device).dump()).second) devices.push_back(device);
    }
  }
  return devices;
}

std::string scenario_names(const Json& document) {
  std::string names;
  for (const Json& scenario : document["scenarios"]) {
    names += (names.empty() ? "\"" : ", \"") + scenario["name"].get<std::string>() + "\"";
  }
  return names.empty() ? "no scenario" : names;
}

void check_scenarios(const std::vector<MergeInput>& inputs, std::vector<Diagnostic>& problems) {
  const MergeInput& first = inputs.front();
  std::map<std::string, const Json*> first_by_name;
  std::set<std::string> first_names;
  for (const Json& scenario : first.document["scenarios"]) {
    first_by_name[scenario["name"].get<std::string>()] = &scenario;
    first_names.insert(scenario["name"].get<std::string>());
  }
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const MergeInput& input = inputs[i];
    std::set<std::string> names;
    for (const Json& scenario : input.document["scenarios"]) names.insert(scenario["name"].get<std::string>());
    if (names != first_names) {
      problems.push_back({input.path, "scenarios",
                          "holds " + scenario_names(input.document) + " but " + first.path + " holds " +
                              scenario_names(first.document) + " (--allow-mixed-scenarios merges them anyway)"});
      continue;
    }
    for (const Json& scenario : input.document["scenarios"]) {
      const std::string name = scenario["name"].get<std::string>();
      const std::vector<std::string> differences = scenario_definition_differences(*first_by_name[name], scenario);
      if (differences.empty()) continue;
      problems.push_back({input.path, "scenarios",
                          "scenario \"" + name + "\" differs from " + first.path + "'s in " +
                              join_differences(differences) + " (--allow-mixed-scenarios merges them anyway)"});
    }
  }
}

// Every distinct scenario definition once, in order of appearance, with the
// implementations of all the inputs that used it.
Json merged_scenarios(const std::vector<MergeInput>& inputs) {
  Json scenarios = Json::array();
  for (const MergeInput& input : inputs) {
    for (const Json& scenario : input.document["scenarios"]) {
      const auto same = std::find_if(scenarios.begin(), scenarios.end(), [&](const Json& kept) {
        return kept["name"] == scenario["name"] && scenario_definition_differences(kept, scenario).empty();
      });
      if (same == scenarios.end()) {
        scenarios.push_back(scenario);
        continue;
      }
      Json& implementations = (*same)["implementations"];
      for (const Json& name : scenario["implementations"]) {
        if (std::find(implementations.begin(), implementations.end(), name) == implementations.end()) {
          implementations.push_back(name);
        }
      }
    }
  }
  return scenarios;
}

// The CPU implementations' BLAS is part of a build's identity: records of two
// do not mix (another git revision alone only earns a note). A file that
// records none (an older one, or a peer's such as scripts/torch_peer.py's)
// merges with any.
void check_blas(const std::vector<MergeInput>& inputs, std::vector<Diagnostic>& problems) {
  const MergeInput* first = nullptr;
  for (const MergeInput& input : inputs) {
    const Json blas = blas_identity(input.document);
    if (blas.is_null()) continue;
    if (!first) {
      first = &input;
      continue;
    }
    const Json expected = blas_identity(first->document);
    if (blas == expected) continue;
    problems.push_back({input.path, "tool.blas",
                        "was made with BLAS " + blas.get<std::string>() + " but " + first->path + " with " +
                            expected.get<std::string>() + ": records of two BLAS libraries do not mix"});
  }
}

// Shard counts and indices; returns the missing shards of a sharded run.
std::vector<std::string> check_shards(const std::vector<MergeInput>& inputs, std::vector<Diagnostic>& problems) {
  const MergeInput* first_sharded = nullptr;
  std::map<int, const MergeInput*> by_index;
  for (const MergeInput& input : inputs) {
    const Json& shard = input.document["shard"];
    if (shard.is_null()) continue;
    if (!first_sharded) first_sharded = &input;
    const Json& expected = first_sharded->document["shard"];
    if (shard["count"] != expected["count"]) {
      problems.push_back({input.path, "shard",
                          "is shard " + shard_label(shard) + " but " + first_sharded->path + " is shard " +
                              shard_label(expected) + ": shards of runs split into different counts"});
      continue;
    }
    const auto [owner, inserted] = by_index.try_emplace(shard["index"].get<int>(), &input);
    if (!inserted) {
      problems.push_back(
          {input.path, "shard", "is shard " + shard_label(shard) + ", and so is " + owner->second->path});
    }
  }
  std::vector<std::string> missing;
  if (!first_sharded) return missing;
  const int count = first_sharded->document["shard"]["count"].get<int>();
  for (int index = 1; index <= count; ++index) {
    if (!by_index.count(index)) {
      missing.push_back("shard " + std::to_string(index) + "/" + std::to_string(count) + " is missing");
    }
  }
  return missing;
}

// For each scenario whose records do not cover every case with every listed
// implementation, how many are missing.
std::vector<std::string> coverage_gaps(const Json& scenarios, const Json& records) {
  std::map<std::string, std::set<std::pair<std::size_t, std::string>>> present;
  for (const Json& record : records) {
    present[record["scenario"].get<std::string>()].emplace(record["case_index"].get<std::size_t>(),
                                                           record["implementation"].get<std::string>());
  }
  std::vector<std::string> gaps;
  for (const Json& scenario : scenarios) {
    const std::string name = scenario["name"].get<std::string>();
    const std::size_t expected = scenario["case_count"].get<std::size_t>() * scenario["implementations"].size();
    std::size_t found = 0;
    for (const auto& [case_index, implementation] : present[name]) {
      const bool listed = std::find(scenario["implementations"].begin(), scenario["implementations"].end(),
                                    implementation) != scenario["implementations"].end();
      found += case_index < scenario["case_count"].get<std::size_t>() && listed ? 1 : 0;
    }
    if (found < expected) {
      gaps.push_back("scenario " + name + ": " + std::to_string(expected - found) + " of " +
                     std::to_string(expected) + " (case, implementation) records are missing");
    }
  }
  return gaps;
}

// Every record of an input must belong to a case and an implementation of that
// input's scenario, once, measured with its settings. The cases are those its
// `source` expands to.
void check_records_belong(const std::vector<MergeInput>& inputs, std::vector<Diagnostic>& problems) {
  std::map<std::string, std::map<std::string, std::size_t>> cases_by_source;
  for (const MergeInput& input : inputs) {
    ExpectedRecords expected;
    std::set<std::string> unchecked;
    for (std::size_t i = 0; i < input.document["scenarios"].size(); ++i) {
      const Json& entry = input.document["scenarios"][i];
      const std::string name = entry["name"].get<std::string>();
      const std::string source = entry["source"].dump();
      auto cases = cases_by_source.find(source);
      if (cases == cases_by_source.end()) {
        std::vector<Diagnostic> diagnostics;
        const Scenario scenario = parse_scenario(source, input.path + ": scenarios[" + std::to_string(i) + "].source",
                                                 diagnostics, ImplementationNames::any);
        if (!diagnostics.empty()) {
          problems.push_back({input.path, "scenarios[" + std::to_string(i) + "].source",
                              "is no longer a valid scenario (" + diagnostics.front().message +
                                  "), so its records cannot be checked"});
          unchecked.insert(name);
          continue;
        }
        std::map<std::string, std::size_t> keys;
        for (std::size_t c = 0; c < scenario.cases.size(); ++c) keys.emplace(scenario.cases[c].key, c);
        cases = cases_by_source.emplace(source, std::move(keys)).first;
      }
      ExpectedScenarioRecords& scenario = expected[name];
      scenario.case_index_by_key = cases->second;
      for (const Json& implementation : entry["implementations"]) {
        scenario.implementations.insert(implementation.get<std::string>());
      }
      scenario.settings = Json{{"measure", entry["measure"]}, {"accuracy", entry["accuracy"]}};
      scenario.settings_required = false;  // files from before records carried settings merge as they did
    }
    std::vector<LocatedRecord> records;
    for (std::size_t i = 0; i < input.document["records"].size(); ++i) {
      const Json& record = input.document["records"][i];
      if (unchecked.count(record["scenario"].get<std::string>())) continue;
      records.push_back({&record, input.path, "records[" + std::to_string(i) + "]"});
    }
    // Files from before records carried their run merge as they did.
    const RecordRuns runs = record_runs_of(input.document, false);
    const std::vector<Diagnostic> misplaced = record_problems(records, expected, runs);
    problems.insert(problems.end(), misplaced.begin(), misplaced.end());
  }
}

// Each (scenario, case_key, implementation) may come from one input only; the
// problems are reported per pair of files, with one example. (A record twice in
// one file is check_records_belong's.)
void check_duplicates(const std::vector<MergeInput>& inputs, std::vector<Diagnostic>& problems) {
  std::map<std::tuple<std::string, std::string, std::string>, const MergeInput*> owner;
  struct Overlap {
    std::size_t count = 0;
    std::string example;
  };
  std::map<std::pair<const MergeInput*, const MergeInput*>, Overlap> overlaps;
  for (const MergeInput& input : inputs) {
    for (const Json& record : input.document["records"]) {
      const auto key = std::make_tuple(record["scenario"].get<std::string>(), record["case_key"].get<std::string>(),
                                       record["implementation"].get<std::string>());
      const auto [first, inserted] = owner.try_emplace(key, &input);
      if (inserted || first->second == &input) continue;
      Overlap& overlap = overlaps[{first->second, &input}];
      if (overlap.count++ == 0) {
        overlap.example = std::get<0>(key) + " / " + std::get<1>(key) + " / " + std::get<2>(key);
      }
    }
  }
  for (const auto& [files, overlap] : overlaps) {
    problems.push_back({files.second->path, "records",
                        std::to_string(overlap.count) + " record(s) of the same (scenario, case_key, implementation) "
                            "are also in " + files.first->path + ", e.g. " + overlap.example});
  }
}

// One implementation's records must all come from one build of it: a plug-in
// rebuilt between two runs makes records that do not belong in one column.
void check_plugin_builds(const std::vector<MergeInput>& inputs, std::vector<Diagnostic>& problems) {
  std::map<std::string, std::pair<const MergeInput*, Json>> first_build;
  std::set<std::pair<std::string, const MergeInput*>> reported;
  for (const MergeInput& input : inputs) {
    for (const Json& record : input.document["records"]) {
      const std::string name = record["implementation"].get<std::string>();
      const Json build = record.contains("plugin") ? Json{{name, {{"path", record["plugin"]["path"]},
                                                                  {"sha256", record["plugin"]["sha256"]},
                                                                  {"version", record["plugin"]["version"]}}}}
                                                   : Json::object();
      const auto [first, inserted] = first_build.try_emplace(name, &input, build);
      if (inserted) continue;
      const std::vector<std::string> differences = plugin_build_differences(first->second.second, build);
      if (differences.empty() || !reported.emplace(name, &input).second) continue;
      problems.push_back({input.path, "records",
                          join_differences(differences) + " (" + first->second.first->path +
                              "'s vs this file's); records of two builds of a plug-in do not merge into one "
                              "implementation"});
    }
  }
}

// Every plug-in of the inputs once (by path and SHA-256), in order of appearance.
Json merged_plugins(const std::vector<MergeInput>& inputs) {
  Json plugins = Json::array();
  for (const MergeInput& input : inputs) {
    if (!input.document.contains("plugins")) continue;
    for (const Json& plugin : input.document["plugins"]) {
      if (std::find(plugins.begin(), plugins.end(), plugin) == plugins.end()) plugins.push_back(plugin);
    }
  }
  return plugins;
}

Json merged_from_entry(const MergeInput& input) {
  const Json& document = input.document;
  return Json{{"path", escape_invalid_utf8(input.path)},
              {"load_average", document.contains("load_average") ? document["load_average"] : Json(nullptr)},
              {"run_id", document.contains("run_id") ? document["run_id"] : Json(nullptr)},
              {"shard", document["shard"]},
              {"complete", document["complete"]},
              {"started_at", document["started_at"]},
              {"finished_at", document["finished_at"]},
              {"git_revision", document["tool"]["git_revision"]},
              {"hostname", document["host"]["hostname"]},
              {"threads", document["threads"]},
              {"records", document["records"].size()}};
}

// Values the merge takes from the first input; a note says when others differ.
std::vector<std::string> first_input_notes(const std::vector<MergeInput>& inputs) {
  std::set<std::string> revisions, filters;
  std::set<int> threads;
  for (const MergeInput& input : inputs) {
    revisions.insert(input.document["tool"]["git_revision"].get<std::string>());
    threads.insert(input.document["threads"].get<int>());
    filters.insert(input.document.contains("filter") ? input.document["filter"].dump() : "null");
  }
  std::vector<std::string> notes;
  if (revisions.size() > 1) {
    std::string list;
    for (const std::string& revision : revisions) list += (list.empty() ? "" : ", ") + revision;
    notes.push_back("the inputs were made by different builds (git " + list + "); \"tool\" is " +
                    inputs.front().path + "'s");
  }
  if (threads.size() > 1) {
    notes.push_back("the inputs ran with different --threads; \"threads\" is " + inputs.front().path + "'s");
  }
  if (filters.size() > 1) {
    notes.push_back("the inputs ran with different --filter; \"filter\" is " + inputs.front().path + "'s");
  }
  return notes;
}

// The command line as recorded: arguments are bytes, JSON strings are UTF-8.
Json escaped_command_line(const std::vector<std::string>& command_line) {
  Json arguments = Json::array();
  for (const std::string& argument : command_line) arguments.push_back(escape_invalid_utf8(argument));
  return arguments;
}

// Every distinct machine finding of the inputs (by check and message).
Json merged_machine(const std::vector<MergeInput>& inputs) {
  Json merged;
  for (const MergeInput& input : inputs) {
    if (!input.document.contains("machine")) continue;
    if (merged.is_null()) merged = Json{{"checked_at", input.document["machine"]["checked_at"]}, {"findings", Json::array()}};
    for (const Json& finding : input.document["machine"]["findings"]) {
      Json& kept = merged["findings"];
      if (std::find(kept.begin(), kept.end(), finding) == kept.end()) kept.push_back(finding);
    }
  }
  return merged;
}

// The highest load average of the inputs at the start and at the end of their runs.
Json highest_load_average(const std::vector<MergeInput>& inputs) {
  Json highest = {{"run_start", nullptr}, {"run_end", nullptr}};
  for (const MergeInput& input : inputs) {
    if (!input.document.contains("load_average")) continue;
    for (const char* when : {"run_start", "run_end"}) {
      const Json& loads = input.document["load_average"][when];
      if (!loads.is_array()) continue;
      if (highest[when].is_null()) {
        highest[when] = loads;
        continue;
      }
      for (std::size_t i = 0; i < 3; ++i) highest[when][i] = std::max(highest[when][i].get<double>(), loads[i].get<double>());
    }
  }
  return highest;
}

// --rounds: each cell once, its rounds joined (join_rounds).
Json joined_round_records(std::vector<MergeInput>& inputs) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::vector<std::pair<int, const Json*>>> by_cell;
  std::vector<Key> order;
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    sources.push_back(escape_invalid_utf8(inputs[i].path));
    for (const Json& record : inputs[i].document["records"]) {
      const Key key{record["scenario"].get<std::string>(), record["case_key"].get<std::string>(),
                    record["implementation"].get<std::string>()};
      auto& rounds = by_cell[key];
      if (rounds.empty()) order.push_back(key);
      rounds.emplace_back(static_cast<int>(i) + 1, &record);
    }
  }
  Json records = Json::array();
  for (const Key& key : order) records.push_back(join_rounds(by_cell[key], sources));
  return records;
}

// The per-sample companions of the rounds' samples, joined in the same order:
// cupti's events times (and the launch overhead from them), graph's launch
// times, and the SM clocks with their marks re-indexed.
void join_method_details(const std::vector<std::pair<int, const Json*>>& rounds, Json& timing) {
  const auto joined_array = [&](std::initializer_list<const char*> path) {
    Json all = Json::array();
    for (const auto& [round, record] : rounds) {
      const Json* at = &(*record)["timing"];
      for (const char* key : path) at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
      if (!at) return Json(nullptr);
      for (const Json& value : *at) all.push_back(value);
      (void)round;
    }
    return all;
  };
  if (timing.contains("cupti")) {
    const Json events = joined_array({"cupti", "events_samples_seconds"});
    const Json kernels = joined_array({"samples_seconds"});
    if (events.is_array() && !events.empty()) {
      timing["cupti"]["events_samples_seconds"] = events;
      timing["cupti"]["events_p50"] = median_of(events.get<std::vector<double>>());
      const std::optional<double> overhead =
          launch_overhead_seconds(events.get<std::vector<double>>(), kernels.get<std::vector<double>>());
      timing["cupti"]["launch_overhead_seconds"] = overhead ? Json(*overhead) : Json(nullptr);
    }
  }
  if (timing.contains("graph")) {
    for (const char* key : {"graph_seconds", "flush_graph_seconds"}) {
      const Json all = joined_array({"graph", key});
      if (all.is_array()) timing["graph"][key] = all;
    }
  }
  if (timing.contains("sm_clock_mhz")) {
    const Json clocks = joined_array({"sm_clock_mhz"});
    Json marked = Json::array();
    std::size_t offset = 0, read = 0;
    for (const auto& [round, record] : rounds) {
      const Json& round_timing = (*record)["timing"];
      if (round_timing.contains("clock_marks") && round_timing["clock_marks"].is_object()) {
        for (const Json& index : round_timing["clock_marks"]["marked"]) marked.push_back(offset + index.get<std::size_t>());
        read += round_timing["clock_marks"]["read"].get<std::size_t>();
      }
      offset += round_timing["samples_seconds"].size();
      (void)round;
    }
    if (clocks.is_array()) timing["sm_clock_mhz"] = clocks;
    if (timing.contains("clock_marks") && timing["clock_marks"].is_object()) {
      timing["clock_marks"]["marked"] = marked;
      timing["clock_marks"]["read"] = read;
    }
  }
}

}  // namespace

Json join_rounds(const std::vector<std::pair<int, const Json*>>& rounds, const std::vector<std::string>& sources) {
  for (const auto& [round, record] : rounds) {
    if ((*record)["status"] != "ok" || !(*record)["timing"].is_object()) return *record;
  }
  // Samples of different timing methods measure different things (a fallback
  // order that fell back in some rounds only): refused, naming the cell.
  const auto method_of = [](const Json& record) { return record["timing"].value("method", std::string("events")); };
  const std::string method = method_of(*rounds.front().second);
  for (const auto& [round, record] : rounds) {
    if (method_of(*record) == method) continue;
    throw InputError(sources[static_cast<std::size_t>(round - 1)] + ": records: " +
                     (*record)["scenario"].get<std::string>() + "/" + (*record)["case_key"].get<std::string>() + " " +
                     (*record)["implementation"].get<std::string>() + " was timed by " + method_of(*record) + ", round 1 by " +
                     method + ": merge --rounds joins samples of one timing method only");
  }
  Json joined = *rounds.front().second;
  Json& timing = joined["timing"];
  join_method_details(rounds, timing);
  std::vector<double> samples;
  Json round_entries = Json::array();
  std::vector<std::string> noisy_rounds;
  double resolution = 0;
  for (const auto& [round, record] : rounds) {
    const Json& round_timing = (*record)["timing"];
    const auto round_samples = round_timing["samples_seconds"].get<std::vector<double>>();
    samples.insert(samples.end(), round_samples.begin(), round_samples.end());
    // The round's own verdict (its host activity included); judged here for a file from before verdicts.
    const Json noise = round_timing.contains("noise") ? round_timing["noise"] : assess_noise(round_samples).to_json();
    const std::string verdict = noise["verdict"];
    const bool noisy = noise["noisy"];
    if (noisy) noisy_rounds.push_back("round " + std::to_string(round) + " " + verdict);
    if (noise["resolution_seconds"].is_number()) resolution = std::max(resolution, noise["resolution_seconds"].get<double>());
    round_entries.push_back({{"round", round},
                             {"source", sources[static_cast<std::size_t>(round - 1)]},
                             {"samples", round_samples.size()},
                             {"p50", round_timing["statistics"]["p50"]},
                             {"noisy", noisy},
                             {"noise", verdict}});
  }
  timing["samples_seconds"] = samples;
  timing.erase("stopped_samples");
  // The rounds' verdicts: noisy when fewer than half of them are clean.
  NoiseAssessment noise;
  noise.judged = true;
  noise.resolution_seconds = resolution;
  const bool mostly_noisy = 2 * noisy_rounds.size() > rounds.size();
  for (const std::string& round : noisy_rounds) noise.findings.push_back({"rounds", round, mostly_noisy});
  timing["noise"] = noise.to_json();
  timing["rounds"] = std::move(round_entries);
  refresh_timing_figures(joined);  // statistics, TFLOP/s and bandwidth of the joined samples
  return joined;
}

MergeOutcome merge_results(std::vector<MergeInput> inputs, const MergeOptions& options,
                            const std::vector<std::string>& command_line) {
  if (inputs.empty()) throw InputError("merge: no input files");
  std::vector<Diagnostic> problems;
  if (!options.allow_mixed_scenarios) check_scenarios(inputs, problems);
  check_blas(inputs, problems);
  const std::vector<std::string> missing_shards = check_shards(inputs, problems);
  check_records_belong(inputs, problems);
  if (!options.rounds) check_duplicates(inputs, problems);
  check_plugin_builds(inputs, problems);
  if (!problems.empty()) throw InputError(problems);
  if (!options.allow_mixed_devices) {
    std::vector<Diagnostic> differences = device_differences(inputs);
    if (!differences.empty()) throw DevicesDifferError(std::move(differences));
  }

  MergeOutcome merged;
  std::string started_at = inputs.front().document["started_at"].get<std::string>();
  std::string finished_at;
  Json merged_from = Json::array();
  for (const MergeInput& input : inputs) {
    const Json& document = input.document;
    if (!document["complete"].get<bool>()) merged.incomplete.push_back(input.path + " is an unfinished run");
    started_at = std::min(started_at, document["started_at"].get<std::string>());
    if (!document["finished_at"].is_null()) {
      finished_at = std::max(finished_at, document["finished_at"].get<std::string>());
    }
    merged_from.push_back(merged_from_entry(input));
  }
  merged.notes = first_input_notes(inputs);

  const Json& first = inputs.front().document;
  Json scenarios = merged_scenarios(inputs);
  Json records = Json::array();  // moved, so that a large merge is not held twice
  if (options.rounds) {
    records = joined_round_records(inputs);
  } else {
    for (MergeInput& input : inputs) {
      for (Json& record : input.document["records"]) records.push_back(std::move(record));
    }
  }
  sort_records(records, scenarios);
  // Complete means every case of every scenario with every implementation:
  // shards split by different --filter or --impl lists cover less, and a merge
  // of an earlier merge with the last shard covers all without every index.
  const std::vector<std::string> gaps = coverage_gaps(scenarios, records);
  if (!gaps.empty()) {
    merged.incomplete.insert(merged.incomplete.begin(), gaps.begin(), gaps.end());
    merged.incomplete.insert(merged.incomplete.begin(), missing_shards.begin(), missing_shards.end());
  }
  const bool complete = merged.incomplete.empty();
  merged.document = Json{{"schema", kResultsSchemaId},
                         {"tool", first["tool"]},
                         {"command_line", escaped_command_line(command_line)},
                         {"run_id", new_run_id()},
                         {"started_at", started_at},
                         {"finished_at", complete ? Json(finished_at) : Json(nullptr)},
                         {"complete", complete},
                         {"host", first["host"]},
                         {"devices", merged_devices(inputs)},
                         {"threads", first["threads"]},
                         {"load_average", highest_load_average(inputs)},
                         {"shard", nullptr},
                         {"filter", first.contains("filter") ? first["filter"] : Json(nullptr)},
                         {"merged_from", std::move(merged_from)},
                         {"scenarios", std::move(scenarios)},
                         {"records", std::move(records)}};
  if (Json plugins = merged_plugins(inputs); !plugins.empty()) merged.document["plugins"] = std::move(plugins);
  if (Json machine = merged_machine(inputs); !machine.is_null()) merged.document["machine"] = std::move(machine);
  return merged;
}

namespace {

// An existing -o is replaced only when it is an earlier merge (so a merge can
// be run again as shards arrive), or with --overwrite.
void check_replaceable(const std::string& output) {
  if (fs::exists(journal_path(output))) {
    throw InputError("-o " + output + ": holds an unfinished run (its latest records are in " + journal_path(output) +
                     "); merge into another file, or discard its records and replace it with --overwrite");
  }
  if (!fs::exists(output)) return;
  std::string problem;
  try {
    const Json existing = load_results_file(output);
    if (existing.contains("merged_from") && !existing["merged_from"].is_null()) return;
    problem = "holds the results of a run, not of an earlier merge";
  } catch (const InputError& error) {
    problem = "exists and is not a results file (" + error.diagnostics().front().message + ")";
  }
  throw InputError("-o " + output + ": " + problem +
                   "; merge into another file, or discard what it holds and replace it with --overwrite");
}

}  // namespace

int merge_files(const MergeRequest& request) {
  const std::string& output = request.output_path;
  if (fs::is_directory(output)) throw InputError("-o " + output + ": is a directory; give a file name");
  std::vector<Diagnostic> problems;
  for (const std::string& path : request.input_paths) {
    if (same_file(path, output)) {
      problems.push_back({path, "", "is also the output (-o); merge into a new file so no shard is lost"});
    }
  }
  if (!problems.empty()) throw InputError(problems);
  prepare_output_directory(output, "-o");  // the lock file goes there first
  const FileLock lock(output, "-o " + output);
  remove_stale_temporaries(output);
  if (!request.overwrite) check_replaceable(output);
  std::vector<MergeInput> inputs;
  for (const std::string& path : request.input_paths) {
    try {
      inputs.push_back({path, load_results_file(path)});
    } catch (const InputError& bad) {
      problems.insert(problems.end(), bad.diagnostics().begin(), bad.diagnostics().end());
    }
  }
  if (!problems.empty()) throw InputError(problems);

  const std::size_t files = inputs.size();
  const MergeOutcome merged = merge_results(std::move(inputs), request.options, request.command_line);
  if (request.require_complete && !merged.incomplete.empty()) {
    std::vector<Diagnostic> reasons;
    for (const std::string& reason : merged.incomplete) {
      reasons.push_back({"", "", "--require-complete: " + reason + "; nothing written"});
    }
    throw InputError(reasons);
  }
  write_file_atomically(lock, merged.document);
  if (request.overwrite) fs::remove(journal_path(output));

  for (const std::string& note : merged.notes) std::fprintf(stderr, "attnbench: note: %s\n", note.c_str());
  for (const std::string& reason : merged.incomplete) {
    std::fprintf(stderr, "attnbench: warning: incomplete merge: %s\n", reason.c_str());
  }
  std::printf("Merged %s: %s, %s. Results: %s\n", count_of(files, "file").c_str(),
              count_of(merged.document["records"].size(), "record").c_str(),
              merged.incomplete.empty() ? "complete" : "incomplete", output.c_str());
  return kExitSuccess;
}

}  // namespace attnbench
