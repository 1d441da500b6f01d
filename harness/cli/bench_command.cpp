// `attnbench bench --batch 4 --heads 16 --seqlen 4096 --head-dim 64 …`: one
// shape, or a sweep, from the command line instead of a file. Every problem key
// of a scenario (the scenario schema's, so a new key gets its flag without
// editing this file) is a flag named after it (`kv_heads` -> `--kv-heads`);
// a value is JSON or a bare word (`bf16`, `fwd+bwd`), and a comma-separated list
// (`--seqlen 512,1024,2048`) makes a sweep axis. The flags become a scenario
// document that goes through the same validation as a file and runs exactly as
// `run` runs one, with all of `run`'s options; the results file records it as
// the scenario's source.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/message_text.hpp"
#include "harness/scenario/scenario.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// What the results file and messages name as the scenario's file.
constexpr const char* kCommandLineSource = "(command line)";

struct ProblemFlag {
  std::string key;   // "kv_heads"
  std::string flag;  // "--kv-heads"
  std::string text;  // as given
  CLI::Option* option = nullptr;
};

struct BenchOptions {
  RunCommandOptions run;
  std::string name = "bench";
  bool print_scenario = false;
  std::vector<ProblemFlag> problem;
};

std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

// "512,1024" -> {"512", "1024"}; commas inside [], {} and quotes do not split,
// so "[32,0],[64,0]" is two windows.
std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  bool quoted = false;
  for (const char c : text) {
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == '[' || c == '{')) ++depth;
    if (!quoted && (c == ']' || c == '}')) --depth;
    if (c == ',' && depth == 0 && !quoted) {
      values.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  values.push_back(current);
  return values;
}

// A JSON value, or the word itself as a string (`bf16`, `fwd+bwd`).
Json value_of(const std::string& text) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? Json(text) : value;
}

// The description of a problem key in the scenario schema, with its allowed
// values where they are a list, for --help.
std::string schema_description(const Json& schema, const std::string& key) {
  const Json& definition = schema["$defs"][key];
  std::string description = definition.value("description", std::string("see docs/scenarios.md"));
  if (definition.contains("enum")) {
    std::string values;
    for (const Json& value : definition["enum"]) {
      values += (values.empty() ? "" : " | ") + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    description += " One of: " + values + ".";
  }
  return description;
}

// The shape flags that are missing, each a diagnostic naming its flag.
std::vector<Diagnostic> missing_shape(const BenchOptions& options) {
  const auto given = [&](const std::string& key) {
    for (const ProblemFlag& flag : options.problem) {
      if (flag.key == key) return flag.option->count() > 0;
    }
    return false;
  };
  std::vector<Diagnostic> missing;
  const auto require = [&](bool ok, const std::string& flags, const std::string& what) {
    if (!ok) missing.push_back({"", flags, "required: " + what});
  };
  require(given("batch") || given("tokens"), "--batch", "the batch size (or --tokens, the total tokens)");
  require(given("heads") || given("hidden"), "--heads", "the query heads (or --hidden, the model width)");
  require(given("seqlen") || (given("seqlen_q") && given("seqlen_k")), "--seqlen",
          "the sequence length (or --seqlen-q and --seqlen-k)");
  require(given("head_dim"), "--head-dim", "the head dimension");
  return missing;
}

// Flags whose value is a JSON array (--window) given as a bare list: "32,0"
// reads as a sweep of two numbers, so say which form works. The keys of those
// flags, and a diagnostic for each.
std::pair<std::set<std::string>, std::vector<Diagnostic>> arrays_given_as_lists(const BenchOptions& options) {
  const Json& definitions = scenario_schema()["$defs"];
  std::pair<std::set<std::string>, std::vector<Diagnostic>> found;
  for (const ProblemFlag& flag : options.problem) {
    if (flag.option->count() == 0 || flag.text.empty()) continue;
    const Json type = definitions[flag.key].value("type", Json());
    const bool takes_array = type == "array" || (type.is_array() && std::find(type.begin(), type.end(), "array") != type.end());
    const std::vector<std::string> texts = split_values(flag.text);
    const bool bare_list = texts.size() > 1 && std::none_of(texts.begin(), texts.end(), [](const std::string& text) {
                             return value_of(text).is_array() || value_of(text).is_null();
                           });
    if (!takes_array || !bare_list) continue;
    found.first.insert(flag.key);
    found.second.push_back({"", flag.flag, "got " + quote(flag.text) + ", read as " + std::to_string(texts.size()) +
                                               " separate values; one value is a JSON array: write " + flag.flag +
                                               " '[" + flag.text + "]' (quoted for the shell), and several, to "
                                               "sweep, as '[...],[...]'"});
  }
  return found;
}

// The flags as a scenario document: one value into "defaults", a list into "sweep".
Json scenario_document(const BenchOptions& options) {
  Json defaults = Json::object(), sweep = Json::object();
  std::string description = "attnbench bench";
  for (const ProblemFlag& flag : options.problem) {
    if (flag.option->count() == 0) continue;
    // A flag without a value (`--causal`) means true.
    const std::vector<std::string> texts = flag.text.empty() ? std::vector<std::string>{"true"} : split_values(flag.text);
    Json values = Json::array();
    for (const std::string& text : texts) values.push_back(value_of(text));
    if (values.size() == 1) defaults[flag.key] = values[0];
    else sweep[flag.key] = values;
    description += " " + flag.flag + (flag.text.empty() ? "" : " " + flag.text);
  }
  Json document{{"name", options.name}, {"description", description}, {"defaults", defaults}};
  if (!sweep.empty()) document["sweep"] = sweep;
  return document;
}

// A diagnostic of the built document, named by the flag it came from:
// "defaults.kv_heads" -> "--kv-heads", "sweep.seqlen[1]" -> "--seqlen (value 2)".
Diagnostic as_flag_diagnostic(const Diagnostic& diagnostic) {
  const std::string& path = diagnostic.path;
  for (const std::string section : {"defaults.", "sweep."}) {
    if (path.rfind(section, 0) != 0) continue;
    const std::string rest = path.substr(section.size());
    const std::size_t end = rest.find_first_of(".[");
    std::string flag = flag_of(rest.substr(0, end));
    std::string below = end == std::string::npos ? "" : rest.substr(end);
    if (section == "sweep." && below.rfind('[', 0) == 0) {
      const std::size_t close = below.find(']');
      flag += " (value " + std::to_string(std::stoul(below.substr(1, close - 1)) + 1) + ")";
      below = below.substr(close + 1);
    }
    return {"", flag + below, diagnostic.message};
  }
  if (path == "name") return {"", "--name", diagnostic.message};
  return {"", path, diagnostic.message};
}

// The scenario the flags describe, through the validation of scenario files;
// every problem at once, missing shape flags first.
Scenario build_scenario(const BenchOptions& options, const Json& document) {
  std::vector<Diagnostic> problems = missing_shape(options);
  const bool shape_missing = !problems.empty();
  const auto [bare_lists, bare_list_problems] = arrays_given_as_lists(options);
  problems.insert(problems.end(), bare_list_problems.begin(), bare_list_problems.end());
  std::vector<Diagnostic> diagnostics;
  Scenario scenario = parse_scenario(document.dump(), kCommandLineSource, diagnostics);
  for (const Diagnostic& diagnostic : diagnostics) {
    // The validation's own "missing" repeats what missing_shape said, and its
    // type errors of a bare list what arrays_given_as_lists said.
    if (shape_missing && diagnostic.message.rfind("missing \"", 0) == 0) continue;
    const std::string& path = diagnostic.path;
    const bool of_bare_list = std::any_of(bare_lists.begin(), bare_lists.end(), [&](const std::string& key) {
      return path.rfind("sweep." + key, 0) == 0;
    });
    if (of_bare_list) continue;
    problems.push_back(as_flag_diagnostic(diagnostic));
  }
  if (!problems.empty()) throw InputError(problems);
  return scenario;
}

}  // namespace

Subcommand add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* command = app.add_subcommand(
      "bench", "Run one shape (or a sweep: a list of values) given as flags, without a scenario file");
  const Json& schema = scenario_schema();
  const Json& keys = schema["$defs"]["problem"]["properties"];
  options->problem.reserve(keys.size());
  for (const auto& [key, definition] : keys.items()) {
    options->problem.push_back({key, flag_of(key), "", nullptr});
    ProblemFlag& flag = options->problem.back();
    flag.option = command->add_option(flag.flag, flag.text, schema_description(schema, key))
                      ->group("Problem (docs/scenarios.md; a comma-separated list sweeps)")
                      ->type_name("VALUE[,VALUE...]");
    if (key == "causal") flag.option->expected(0, 1)->type_name("[BOOL,...]");
  }
  command->add_option("--name", options->name, "Scenario name in the results file and case labels (default bench)");
  command->add_flag("--print-scenario", options->print_scenario,
                    "Print the scenario the flags describe, as a scenario file, and run nothing");
  add_run_options(*command, options->run);
  return {command, [options](const std::vector<std::string>& command_line) {
            const Json document = scenario_document(*options);
            Scenario scenario = build_scenario(*options, document);
            if (options->print_scenario) {
              std::printf("%s\n", document.dump(2).c_str());
              return static_cast<int>(kExitSuccess);
            }
            options->run.run.built_scenarios = {std::move(scenario)};
            return execute_run(options->run, command_line);
          }};
}

}  // namespace attnbench
