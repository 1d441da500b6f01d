// The attnbench command line (DESIGN §4). Only this file turns errors into exit
// codes: bad input 2, an environment that cannot run the request 4, failed
// records 1.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/backend.hpp"
#include "harness/errors.hpp"
#include "harness/host_info.hpp"
#include "harness/implementation.hpp"
#include "harness/problem_json.hpp"
#include "harness/runner.hpp"
#include "harness/scenario.hpp"
#include "harness/version.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

int command_validate(const std::vector<std::string>& paths) {
  const std::vector<Scenario> scenarios = load_scenarios(paths);
  for (const Scenario& scenario : scenarios) {
    std::printf("%s: ok (scenario \"%s\", %zu cases)\n", scenario.path.c_str(), scenario.name.c_str(),
                scenario.cases.size());
  }
  return kExitSuccess;
}

int command_list(const std::vector<std::string>& paths, const std::string& implementations,
                 const std::string& filter_text, bool as_json) {
  const std::vector<Scenario> scenarios = load_scenarios(paths);
  std::regex filter;
  if (!filter_text.empty()) {
    try {
      filter = std::regex(filter_text, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      throw InputError("--filter: not a valid regular expression (" + std::string(error.what()) + ")");
    }
  }
  Json listing{{"schema", "attnbench.cases/1"}, {"scenarios", Json::array()}};
  for (const Scenario& scenario : scenarios) {
    const std::vector<Implementation*> selected =
        implementations.empty() ? select_implementations(scenario.implementations, scenario.path + ": implementations")
                                : select_implementations(split_list(implementations), "--impl");
    Json names = Json::array();
    for (Implementation* implementation : selected) names.push_back(implementation->name());
    Json cases = Json::array();
    for (std::size_t i = 0; i < scenario.cases.size(); ++i) {
      const ScenarioCase& c = scenario.cases[i];
      if (!filter_text.empty() && !std::regex_search(scenario.name + "/" + c.key, filter)) continue;
      Json runs = Json::object();
      for (Implementation* implementation : selected) {
        const Verdict verdict = implementation->supports(c.problem);
        runs[std::string(implementation->name())] =
            verdict.ok ? Json{{"runs", true}} : Json{{"runs", false}, {"reason", verdict.reason}};
      }
      cases.push_back(Json{{"index", i},
                           {"key", c.key},
                           {"origin", c.origin},
                           {"problem", problem_to_json(c.problem)},
                           {"flops", flops_to_json(c.problem)},
                           {"implementations", runs}});
    }
    listing["scenarios"].push_back(Json{{"path", scenario.path},
                                        {"name", scenario.name},
                                        {"description", scenario.description},
                                        {"implementations", names},
                                        {"cases", cases}});
  }
  if (as_json) {
    std::printf("%s\n", listing.dump(2).c_str());
    return kExitSuccess;
  }
  for (const Json& scenario : listing["scenarios"]) {
    std::printf("%s (%s): %zu cases\n", scenario["name"].get<std::string>().c_str(),
                scenario["path"].get<std::string>().c_str(), scenario["cases"].size());
    for (const Json& c : scenario["cases"]) {
      std::printf("  #%-4zu %s   [%s]\n", c["index"].get<std::size_t>(), short_case_label(c["problem"]).c_str(),
                  c["origin"].get<std::string>().c_str());
      for (const auto& [name, verdict] : c["implementations"].items()) {
        if (verdict["runs"].get<bool>()) {
          std::printf("         %-16s runs\n", name.c_str());
        } else {
          std::printf("         %-16s skipped: %s\n", name.c_str(), verdict["reason"].get<std::string>().c_str());
        }
      }
    }
  }
  return kExitSuccess;
}

int command_info(bool as_json) {
  const HostInfo host = read_host_info();
  Json info{{"tool", {{"version", tool_version()},
                      {"git_revision", git_revision()},
                      {"build_type", build_type()},
                      {"compiler", compiler_id()},
                      {"cuda_built", cuda_built()}}},
            {"host", {{"hostname", host.hostname},
                      {"os", host.os},
                      {"cpu_model", host.cpu_model},
                      {"logical_cpus", host.logical_cpus},
                      {"memory_bytes", host.memory_total_bytes},
                      {"memory_available_bytes", host.memory_available_bytes}}},
            {"devices", Json::array()},
            {"implementations", Json::array()}};
  for (const auto& device : BackendRegistry::instance().devices()) {
    Backend* backend = BackendRegistry::instance().get(device);
    const Verdict available = backend->availability();
    Json entry{{"device", device}, {"available", available.ok}};
    if (available.ok) entry["description"] = backend->describe();
    else entry["reason"] = available.reason;
    info["devices"].push_back(entry);
  }
  for (Implementation* implementation : ImplementationRegistry::instance().all()) {
    const Verdict available = implementation->availability();
    Json entry{{"name", implementation->name()},
               {"device", implementation->device()},
               {"summary", implementation->summary()},
               {"available", available.ok}};
    if (!available.ok) entry["reason"] = available.reason;
    info["implementations"].push_back(entry);
  }
  if (as_json) {
    std::printf("%s\n", info.dump(2).c_str());
    return kExitSuccess;
  }
  std::printf("attnbench %s (git %s, %s, %s, CUDA %s)\n", tool_version(), git_revision(), build_type(),
              compiler_id(), cuda_built() ? "built" : "not built");
  std::printf("host: %s, %s, %s, %d logical CPUs\n", host.hostname.c_str(), host.os.c_str(), host.cpu_model.c_str(),
              host.logical_cpus);
  std::printf("\ndevices:\n");
  for (const Json& device : info["devices"]) {
    std::printf("  %-6s %s\n", device["device"].get<std::string>().c_str(),
                device["available"].get<bool>() ? device["description"]["name"].get<std::string>().c_str()
                                                : ("unavailable: " + device["reason"].get<std::string>()).c_str());
  }
  std::printf("\nimplementations:\n");
  for (const Json& entry : info["implementations"]) {
    std::printf("  %-16s %s%s\n", entry["name"].get<std::string>().c_str(), entry["summary"].get<std::string>().c_str(),
                entry["available"].get<bool>() ? "" : ("  [unavailable: " + entry["reason"].get<std::string>() + "]").c_str());
  }
  return kExitSuccess;
}

int main_with_exit_codes(int argc, char** argv) {
  CLI::App app{"attnbench: benchmarking and profiling harness for exact attention"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(tool_version()) + " (git " + git_revision() + ")");

  RunOptions run;
  std::string run_implementations;
  bool hot = false, cold = false;
  CLI::App* run_command = app.add_subcommand("run", "Run scenarios and write a results file");
  run_command->add_option("scenarios", run.scenario_paths, "Scenario files")->required();
  run_command->add_option("-o,--output", run.output_path, "Results file (default: results/<scenario>-<time>.json)");
  run_command->add_option("--impl", run_implementations, "Comma-separated implementations (overrides the scenario)");
  run_command->add_option("--filter", run.filter, "Only cases whose \"<scenario>/<case key>\" matches this regex");
  run_command->add_option("--threads", run.threads, "Host threads for CPU implementations (default: all)")
      ->check(CLI::Range(1, 4096));
  run_command->add_flag("--hot", hot, "Hot cache: back-to-back samples (overrides the scenario)");
  run_command->add_flag("--cold", cold, "Cold cache: flush before every sample (overrides the scenario)");
  run_command->add_option("--dump", run.dump_dir, "Write inputs and outputs as .npy files with an index.json here");
  run_command->add_flag("--resume", run.resume, "Continue the run saved in -o FILE, skipping finished records");

  std::vector<std::string> list_paths;
  std::string list_implementations, list_filter;
  bool list_json = false;
  CLI::App* list_command = app.add_subcommand("list", "List the expanded cases and which implementations run them");
  list_command->add_option("scenarios", list_paths, "Scenario files")->required();
  list_command->add_option("--impl", list_implementations, "Comma-separated implementations");
  list_command->add_option("--filter", list_filter, "Only cases whose \"<scenario>/<case key>\" matches this regex");
  list_command->add_flag("--json", list_json, "Machine-readable output (schema attnbench.cases/1)");

  std::vector<std::string> validate_paths;
  CLI::App* validate_command = app.add_subcommand("validate", "Check scenario files; report every problem");
  validate_command->add_option("scenarios", validate_paths, "Scenario files")->required();

  bool info_json = false;
  CLI::App* info_command = app.add_subcommand("info", "Devices, versions and implementations on this machine");
  info_command->add_flag("--json", info_json, "Machine-readable output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? kExitSuccess : kExitBadInput;
  }

  if (run_command->parsed()) {
    if (hot && cold) throw InputError("--hot and --cold cannot both be given");
    if (hot) run.cold_cache = false;
    if (cold) run.cold_cache = true;
    run.implementations = split_list(run_implementations);
    run.interactive = isatty(STDERR_FILENO) != 0;
    run.command_line.assign(argv, argv + argc);
    return run_scenarios(run);
  }
  if (list_command->parsed()) return command_list(list_paths, list_implementations, list_filter, list_json);
  if (validate_command->parsed()) return command_validate(validate_paths);
  if (info_command->parsed()) return command_info(info_json);
  return kExitBadInput;
}

}  // namespace
}  // namespace attnbench

int main(int argc, char** argv) {
  using namespace attnbench;
  try {
    return main_with_exit_codes(argc, argv);
  } catch (const InputError& error) {
    for (const auto& diagnostic : error.diagnostics()) {
      std::fprintf(stderr, "attnbench: error: %s\n", diagnostic.format().c_str());
    }
    return kExitBadInput;
  } catch (const EnvironmentError& error) {
    std::fprintf(stderr, "attnbench: error: %s\n", error.what());
    return kExitEnvironment;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "attnbench: internal error: %s\n", error.what());
    return kExitGateFailed;
  }
}
