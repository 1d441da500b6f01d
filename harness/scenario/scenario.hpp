// Scenario files (docs/scenarios.md): JSON with comments, checked against
// scenarios/scenario.schema.json and then semantically, expanded into cases.
// Every problem in every file is reported at once (InputError), each naming the
// file, the key path and what is allowed. docs/scenarios.md describes the format.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/measure_settings.hpp"
#include "harness/common/problem.hpp"
#include "harness/errors.hpp"

namespace attnbench {

struct ScenarioCase {
  Problem problem;
  std::string key;     // case_key(problem)
  std::string origin;  // where it came from: "cases[1] x sweep{seqlen=512}"
};

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  nlohmann::ordered_json source;  // the file as given, comments removed
  std::vector<std::string> implementations;  // empty: the default set
  MeasureSettings measure;
  AccuracySettings accuracy;
  std::vector<ScenarioCase> cases;
};

// The JSON Schema of scenario files (embedded at build time).
const nlohmann::ordered_json& scenario_schema();

// Whether the implementations a scenario names must be registered here (to
// run it), or may be any (to re-expand a saved scenario whose plug-ins are not
// loaded, or when --impl replaces the scenario's list).
enum class ImplementationNames { registered, any };

// Parses, validates and expands one scenario document. Problems are appended to
// `diagnostics` (with `file` as their file name); the scenario is meaningful only
// when none were added.
Scenario parse_scenario(const std::string& text, const std::string& file, std::vector<Diagnostic>& diagnostics,
                        ImplementationNames names = ImplementationNames::registered);

// Whether a document is a JSON Schema (its "$schema" is a json-schema.org
// meta-schema), such as scenarios/scenario.schema.json, rather than a scenario.
bool is_json_schema(const nlohmann::ordered_json& document);

// One file as loaded: its scenario, or every problem found in it.
struct ScenarioFile {
  std::string path;
  bool json_schema = false;          // a JSON Schema, not a scenario (then `problems` says so)
  std::vector<Diagnostic> problems;  // empty when the scenario is sound
  Scenario scenario;                 // meaningful when `problems` is empty
};

// Loads every file on its own (a scenario name used by an earlier file is a
// problem of the later one).
std::vector<ScenarioFile> load_scenario_files(const std::vector<std::string>& paths,
                                              ImplementationNames names = ImplementationNames::registered);

// Loads every file; throws InputError listing every problem in every file (a
// JSON Schema given as a scenario file is one).
std::vector<Scenario> load_scenarios(const std::vector<std::string>& paths,
                                     ImplementationNames names = ImplementationNames::registered);

}  // namespace attnbench
