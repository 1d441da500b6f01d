// `attnbench list SCENARIO…`: the expanded cases and which implementations run
// them, by the pre-flight `run` applies (availability, support, memory: a case
// that would not fit says "skipped: needs X …; Y available"); --json is the
// machine-readable form other tools read (attnbench.cases/1).
#include <cstdio>
#include <memory>
#include <optional>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/host_info.hpp"
#include "harness/message_text.hpp"
#include "harness/problem_json.hpp"
#include "harness/runner.hpp"
#include "harness/scenario.hpp"
#include "harness/session.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

int command_list(const std::vector<std::string>& paths, const std::optional<std::string>& implementations,
                 const std::string& filter_text, int requested_threads, bool as_json) {
  const int threads = requested_threads > 0 ? requested_threads : available_cpus().count;
  const std::vector<Scenario> scenarios = load_scenarios(paths);
  const std::optional<Regex> filter = case_filter(filter_text);
  Json listing{{"schema", "attnbench.cases/1"}, {"scenarios", Json::array()}};
  for (const Scenario& scenario : scenarios) {
    const std::vector<Implementation*> selected =
        !implementations ? select_implementations(scenario.implementations, scenario.path + ": implementations")
                         : select_implementations(implementation_list(*implementations), "--impl");
    Json names = Json::array();
    for (Implementation* implementation : selected) names.push_back(implementation->name());
    Json cases = Json::array();
    for (std::size_t i = 0; i < scenario.cases.size(); ++i) {
      const ScenarioCase& c = scenario.cases[i];
      if (filter && !filter->search(scenario.name + "/" + c.key)) continue;
      Json runs = Json::object();
      for (Implementation* implementation : selected) {
        const std::string reason = preflight(*implementation, c.problem, threads, false).skip_reason;
        runs[std::string(implementation->name())] =
            reason.empty() ? Json{{"runs", true}} : Json{{"runs", false}, {"reason", reason}};
      }
      cases.push_back(Json{{"index", i},
                           {"key", c.key},
                           {"origin", c.origin},
                           {"problem", problem_to_json(c.problem)},
                           {"flops", flops_to_json(c.problem)},
                           {"implementations", runs}});
    }
    listing["scenarios"].push_back(Json{{"path", escape_invalid_utf8(scenario.path)},
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

}  // namespace

Subcommand add_list_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> paths;
    std::string implementations, filter;
    int threads = 0;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand("list", "List the expanded cases and which implementations run them");
  command->add_option("scenarios", options->paths, "Scenario files")->required()->check(file_name_check());
  CLI::Option* implementations = command->add_option("--impl", options->implementations, "Comma-separated implementations");
  command->add_option("--filter", options->filter, "Only cases whose \"<scenario>/<case key>\" matches this regex");
  command->add_option("--threads", options->threads,
                      "Host threads the run would use, which sizes CPU workspaces (default: as run)")
      ->check(CLI::Range(1, 4096));
  command->add_flag("--json", options->json, "Machine-readable output (schema attnbench.cases/1)");
  return {command, [options, implementations](const std::vector<std::string>&) {
            return command_list(options->paths,
                                implementations->count() > 0 ? std::optional(options->implementations) : std::nullopt,
                                options->filter, options->threads, options->json);
          }};
}

}  // namespace attnbench
