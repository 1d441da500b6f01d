#include "harness/results/run_identity.hpp"

#include <string_view>
#include <tuple>

#include "harness/results/derived_figures.hpp"
#include "harness/results/document.hpp"
#include "harness/version.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

// A value as a message quotes it: its JSON, cut to about 60 characters.
std::string shown(const Json& value) {
  constexpr std::size_t kLongest = 60;
  std::string text = value.dump();
  if (text.size() > kLongest) text = text.substr(0, kLongest) + "…";
  return text;
}

std::string quoted(const std::string& text) { return shown(Json(text)); }

void collect_differences(const Json& a, const Json& b, const std::string& path, std::vector<std::string>& out) {
  if (a == b) return;
  const auto child = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : a.items()) {
      collect_differences(value, b.contains(key) ? b[key] : Json("(absent)"), child(key), out);
    }
    for (const auto& [key, value] : b.items()) {
      if (!a.contains(key)) collect_differences(Json("(absent)"), value, child(key), out);
    }
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) collect_differences(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  out.push_back((path.empty() ? std::string("(the whole value)") : path) + " (" + shown(a) + " vs " + shown(b) + ")");
}

std::string names_of(const Json& scenarios) {
  std::string names;
  for (const Json& scenario : scenarios) names += (names.empty() ? "" : ", ") + quoted(scenario["name"].get<std::string>());
  return names.empty() ? "none" : names;
}

const Json* scenario_named(const Json& scenarios, const Json& name) {
  for (const Json& scenario : scenarios) {
    if (scenario["name"] == name) return &scenario;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> json_differences(const Json& a, const Json& b, const std::string& path, std::size_t limit) {
  std::vector<std::string> differences;
  collect_differences(a, b, path, differences);
  if (differences.size() > limit) {
    const std::size_t more = differences.size() - limit;
    differences.resize(limit);
    differences.push_back(std::to_string(more) + " more");
  }
  return differences;
}

std::string join_differences(const std::vector<std::string>& differences) {
  std::string text;
  for (const std::string& difference : differences) text += (text.empty() ? "" : ", ") + difference;
  return text;
}

std::vector<std::string> scenario_definition_differences(const Json& a, const Json& b) {
  std::vector<std::string> differences;
  for (const char* field : {"source", "measure", "accuracy"}) {
    const bool measure = std::string_view(field) == "measure";
    const std::vector<std::string> found =
        measure ? json_differences(with_default_timing(a[field]), with_default_timing(b[field]), field)
                : json_differences(a[field], b[field], field);
    differences.insert(differences.end(), found.begin(), found.end());
  }
  return differences;
}

Json blas_identity(const Json& document) {
  if (!document["tool"].contains("blas")) return nullptr;
  const Json& blas = document["tool"]["blas"];
  return blas["name"].get<std::string>() + " " + blas["version"].get<std::string>();
}

Json run_identity(const Json& document) {
  Json scenarios = Json::array();
  for (const Json& scenario : document["scenarios"]) {
    scenarios.push_back(Json{{"name", scenario["name"]},
                             {"source", scenario["source"]},
                             {"measure", scenario["measure"]},
                             {"accuracy", scenario["accuracy"]},
                             {"implementations", scenario["implementations"]}});
  }
  Json identity{{"git_revision", document["tool"]["git_revision"]},
                {"plugins", plugin_builds(document)},
                {"threads", document["threads"]},
                {"filter", document.contains("filter") ? document["filter"] : Json(nullptr)},
                {"shard", document["shard"]},
                {"scenarios", std::move(scenarios)}};
  if (document["tool"].contains("blas")) identity["blas"] = blas_identity(document);
  return identity;
}

Json plugin_builds(const Json& document) {
  Json builds = Json::object();
  if (!document.contains("plugins")) return builds;
  for (const Json& plugin : document["plugins"]) {
    for (const Json& implementation : plugin["implementations"]) {
      builds[implementation["name"].get<std::string>()] =
          Json{{"path", plugin["path"]}, {"sha256", plugin["sha256"]}, {"version", implementation["version"]}};
    }
  }
  return builds;
}

std::vector<std::string> plugin_build_differences(const Json& a, const Json& b) {
  std::vector<std::string> differences;
  const auto described = [](const Json& build) {
    if (build.is_null()) return std::string("a built-in implementation");
    return "the plug-in " + build["path"].get<std::string>() + " (sha256 " +
           build["sha256"].get<std::string>().substr(0, 12) + "…, version " + build["version"].get<std::string>() + ")";
  };
  std::set<std::string> names;
  for (const auto& [name, build] : a.items()) names.insert(name);
  for (const auto& [name, build] : b.items()) names.insert(name);
  for (const std::string& name : names) {
    const Json first = a.contains(name) ? a[name] : Json(nullptr);
    const Json second = b.contains(name) ? b[name] : Json(nullptr);
    const auto build_of = [](const Json& build) {
      return build.is_null() ? Json(nullptr) : Json{{"sha256", build["sha256"]}, {"version", build["version"]}};
    };
    if (build_of(first) == build_of(second)) continue;
    differences.push_back(name + " came from " + described(first) + " vs " + described(second));
  }
  return differences;
}

std::vector<Diagnostic> run_identity_differences(const Json& saved, const Json& current, const std::string& file) {
  std::vector<Diagnostic> problems;
  if (saved["git_revision"] != current["git_revision"]) {
    problems.push_back({file, "tool.git_revision",
                        "the run was made by build " + shown(saved["git_revision"]) + ", this is build " +
                            shown(current["git_revision"]) + "; records of two builds do not mix: continue it with "
                            "the build that started it"});
  }
  const Json saved_blas = saved.value("blas", Json()), current_blas = current.value("blas", Json());
  if (saved_blas != current_blas) {
    problems.push_back({file, "tool.blas",
                        "the run's CPU implementations used BLAS " + shown(saved_blas) + ", this build's use " +
                            shown(current_blas) + "; records of two BLAS libraries do not mix: continue it with "
                            "the build that started it"});
  }
  const Json no_plugins = Json::object();
  const std::vector<std::string> plugins = plugin_build_differences(
      saved.contains("plugins") ? saved["plugins"] : no_plugins, current.contains("plugins") ? current["plugins"] : no_plugins);
  if (!plugins.empty()) {
    problems.push_back({file, "plugins",
                        "the run's plug-ins were other builds (the run's vs this one's): " + join_differences(plugins) +
                            "; records of two builds of a plug-in do not mix: continue it with the plug-in that "
                            "started it"});
  }
  if (saved["threads"] != current["threads"]) {
    problems.push_back({file, "threads", "the run used " + shown(saved["threads"]) + " threads, this one " +
                                             shown(current["threads"]) + ": give --threads " +
                                             shown(saved["threads"])});
  }
  if (saved["filter"] != current["filter"]) {
    const auto used = [](const Json& filter) { return filter.is_null() ? "no --filter" : "--filter " + shown(filter); };
    problems.push_back({file, "filter", "the run used " + used(saved["filter"]) + ", this one " +
                                            used(current["filter"]) + ": continue it with " + used(saved["filter"])});
  }
  if (saved["shard"] != current["shard"]) {
    const auto used = [](const Json& shard) {
      return shard.is_null() ? std::string("no --shard")
                             : "--shard " + shard["index"].dump() + "/" + shard["count"].dump();
    };
    problems.push_back({file, "shard", "the run used " + used(saved["shard"]) + ", this one " +
                                           used(current["shard"]) + ": continue it with " + used(saved["shard"])});
  }
  std::set<std::string> saved_names, current_names;
  for (const Json& scenario : saved["scenarios"]) saved_names.insert(scenario["name"].get<std::string>());
  for (const Json& scenario : current["scenarios"]) current_names.insert(scenario["name"].get<std::string>());
  if (saved_names != current_names) {
    problems.push_back({file, "scenarios", "the run holds scenarios " + names_of(saved["scenarios"]) +
                                               ", this one " + names_of(current["scenarios"]) +
                                               ": --resume continues a run of the same scenario files"});
    return problems;
  }
  for (const Json& scenario : current["scenarios"]) {
    const Json& before = *scenario_named(saved["scenarios"], scenario["name"]);
    const std::string where = "scenarios[" + quoted(scenario["name"].get<std::string>()) + "]";
    const std::vector<std::string> differences = scenario_definition_differences(before, scenario);
    if (!differences.empty()) {
      problems.push_back({file, where,
                          "was run with another definition (the run's vs this one's): " +
                              join_differences(differences) +
                              " — the scenario file was edited, or --hot/--cold or another override differs"});
    }
    if (before["implementations"] != scenario["implementations"]) {
      problems.push_back({file, where + ".implementations",
                          "the run used " + shown(before["implementations"]) + ", this one " +
                              shown(scenario["implementations"]) + ": give the same --impl"});
    }
  }
  return problems;
}

Json record_settings(const Json& measure, const Json& accuracy, int threads, const Json& profile) {
  return Json{{"measure", measure},
              {"accuracy", accuracy},
              {"threads", threads},
              {"profile", profile},
              {"git_revision", git_revision()}};
}

RecordRuns record_runs_of(const Json& document, bool required) {
  RecordRuns runs;
  runs.required = required;
  if (document.contains("run_id") && document["run_id"].is_string()) runs.ids.insert(document["run_id"].get<std::string>());
  if (document.contains("merged_from") && document["merged_from"].is_array()) {
    for (const Json& merged : document["merged_from"]) {
      if (merged.contains("run_id") && merged["run_id"].is_string()) runs.ids.insert(merged["run_id"].get<std::string>());
    }
  }
  std::string ids;
  for (const std::string& id : runs.ids) ids += (ids.empty() ? "" : ", ") + id;
  runs.description = std::string(runs.ids.size() > 1 ? "the runs" : "the run") + " the file holds (" +
                     (ids.empty() ? "none" : ids) + ")";
  return runs;
}

std::vector<Diagnostic> record_problems(const std::vector<LocatedRecord>& records, const ExpectedRecords& expected,
                                        const RecordRuns& runs) {
  struct Problem {
    Diagnostic first;
    std::size_t count = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Problem> problems;
  const auto note = [&](const std::string& kind, const LocatedRecord& at, const std::string& message) {
    auto [found, inserted] = problems.try_emplace(kind, Problem{Diagnostic{at.file, at.where, message}, 0});
    if (inserted) order.push_back(kind);
    ++found->second.count;
  };
  std::string scenario_list;
  for (const auto& [name, scenario] : expected) scenario_list += (scenario_list.empty() ? "" : ", ") + quoted(name);

  std::map<std::tuple<std::string, std::string, std::string>, const LocatedRecord*> seen;
  for (const LocatedRecord& located : records) {
    const Json& record = *located.record;
    const std::string scenario = record["scenario"].get<std::string>();
    const std::string key = record["case_key"].get<std::string>();
    const std::string implementation = record["implementation"].get<std::string>();
    if (!record.contains("run_id")) {
      if (runs.required) note("no run", located, "carries no run_id, so nothing shows it is a record of " + runs.description);
    } else if (!runs.ids.count(record["run_id"].get<std::string>())) {
      note("run " + record["run_id"].get<std::string>(), located,
           "is a record of run " + record["run_id"].get<std::string>() + ", not of " + runs.description +
               ": it was copied from another run's file");
    }
    const auto spec = expected.find(scenario);
    if (spec == expected.end()) {
      note("scenario", located, "is a record of scenario " + quoted(scenario) + ", which this run does not have (" +
                                    (scenario_list.empty() ? std::string("none") : scenario_list) + ")");
      continue;
    }
    const auto case_index = spec->second.case_index_by_key.find(key);
    if (case_index == spec->second.case_index_by_key.end()) {
      note("case " + scenario, located,
           "case_key " + quoted(key) + " is no case of scenario " + quoted(scenario) + " as run here");
      continue;
    }
    if (record["case_index"].get<std::size_t>() != case_index->second) {
      note("index " + scenario, located,
           "case_index " + std::to_string(record["case_index"].get<std::size_t>()) + ", but case_key " + quoted(key) +
               " is case " + std::to_string(case_index->second) + " of scenario " + quoted(scenario));
    }
    if (!spec->second.implementations.count(implementation)) {
      note("implementation " + scenario + " " + implementation, located,
           "implementation " + quoted(implementation) + " is not one scenario " + quoted(scenario) + " runs here");
    }
    if (!record.contains("settings")) {
      if (spec->second.settings_required) {
        note("no settings", located, "carries no \"settings\" (an older attnbench wrote it), so nothing shows it "
                                     "was measured as this run measures");
      }
    } else {
      std::vector<std::string> differences;
      for (const auto& [name, value] : spec->second.settings.items()) {
        const Json& recorded = record["settings"].contains(name) ? record["settings"][name] : Json("(absent)");
        const std::vector<std::string> found = json_differences(recorded, value, "settings." + name);
        differences.insert(differences.end(), found.begin(), found.end());
      }
      if (!differences.empty()) {
        const std::string text = join_differences(differences);
        note("settings " + scenario + " " + text, located,
             "was measured with other settings (the record's vs this run's): " + text);
      }
    }
    if (const std::string contradiction = derived_figure_contradiction(record); !contradiction.empty()) {
      note("timing", located, contradiction + ": the record was changed after it was measured");
    }
    const auto [first, inserted] = seen.try_emplace({scenario, key, implementation}, &located);
    if (!inserted) {
      note("duplicate", located,
           "is a second record of (" + quoted(scenario) + ", " + quoted(key) + ", " + quoted(implementation) +
               "); the first is " + first->second->file + " " + first->second->where);
    }
  }
  std::vector<Diagnostic> diagnostics;
  for (const std::string& kind : order) {
    Problem& problem = problems[kind];
    if (problem.count > 1) problem.first.message += " (and " + std::to_string(problem.count - 1) + " more like it)";
    diagnostics.push_back(std::move(problem.first));
  }
  return diagnostics;
}

}  // namespace attnbench
