// `attnbench list SCENARIO…`: the expanded cases and which implementations run
// them, by the pre-flight `run` applies (availability, support, memory: a case
// that would not fit says "skipped: needs X …; Y available"); --json is the
// machine-readable form other tools read (attnbench.cases/1).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/format.hpp"
#include "harness/host_info.hpp"
#include "harness/message_text.hpp"
#include "harness/common/problem_json.hpp"
#include "harness/run/selection.hpp"
#include "harness/run/summary.hpp"
#include "harness/scenario/scenario.hpp"
#include "harness/measure/session.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// Whether `implementation` runs `problem` here: {"runs", "available"} and,
// when it does not run, why ("available": false when this machine cannot run
// the implementation at all, e.g. a CUDA one without a GPU).
Json run_verdict(const Implementation& implementation, const Problem& problem, int threads) {
  const Verdict available = implementation.availability();
  if (!available.ok) return Json{{"runs", false}, {"available", false}, {"reason", available.reason}};
  std::string reason;
  try {
    reason = preflight(implementation, problem, threads, false).skip_reason;
  } catch (const std::exception& error) {  // a plug-in's callback failed: `run` records it as failed
    reason = std::string("error: ") + error.what();
  }
  if (!reason.empty()) return Json{{"runs", false}, {"available", true}, {"reason", reason}};
  return Json{{"runs", true}, {"available", true}};
}

// {name: reason} of the implementations of a listed scenario that cannot run here.
Json unavailable_implementations(const Json& scenario) {
  Json unavailable = Json::object();
  for (const Json& c : scenario["cases"]) {
    for (const auto& [name, verdict] : c["implementations"].items()) {
      if (!verdict["available"].get<bool>()) unavailable[name] = verdict["reason"];
    }
  }
  return unavailable;
}

int command_list(const std::vector<std::string>& paths, const std::optional<std::string>& implementations,
                 const std::string& filter_text, int requested_threads, bool as_json) {
  const int threads = requested_threads > 0 ? requested_threads : available_cpus().count;
  const std::vector<Scenario> scenarios =
      load_scenarios(paths, implementations ? ImplementationNames::any : ImplementationNames::registered);
  const std::optional<Regex> filter = case_filter(filter_text);
  Json listing{{"schema", "attnbench.cases/1"}, {"scenarios", Json::array()}};
  for (const Scenario& scenario : scenarios) {
    // Implementations this machine cannot run are listed too, with the reason:
    // a GPU scenario can be inspected anywhere, and its cases are the same.
    const std::vector<Implementation*> selected =
        !implementations ? resolve_implementations(scenario.implementations, scenario.path + ": implementations")
                         : resolve_implementations(implementation_list(*implementations), "--impl");
    Json names = Json::array();
    for (Implementation* implementation : selected) names.push_back(implementation->name());
    Json cases = Json::array();
    for (std::size_t i = 0; i < scenario.cases.size(); ++i) {
      const ScenarioCase& c = scenario.cases[i];
      if (filter && !filter->search(scenario.name + "/" + c.key)) continue;
      Json runs = Json::object();
      for (Implementation* implementation : selected) {
        runs[std::string(implementation->name())] = run_verdict(*implementation, c.problem, threads);
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
    std::printf("%s (%s): %s\n", scenario["name"].get<std::string>().c_str(),
                scenario["path"].get<std::string>().c_str(), count_of(scenario["cases"].size(), "case").c_str());
    int name_width = 16;
    for (const auto& name : scenario["implementations"]) {
      name_width = std::max(name_width, static_cast<int>(name.get<std::string>().size()));
    }
    // Why an implementation cannot run here is said once, before the cases.
    const Json unavailable = unavailable_implementations(scenario);
    for (const auto& [name, reason] : unavailable.items()) {
      for (const std::string& line : wrap_words(name + " cannot run here: " + reason.get<std::string>(), 80, "  ")) {
        std::printf("%s\n", line.c_str());
      }
    }
    for (const Json& c : scenario["cases"]) {
      // The origin goes on a line of its own where both would pass 80 columns.
      char index[16];
      std::snprintf(index, sizeof index, "  #%-4zu ", c["index"].get<std::size_t>());
      const std::string label = index + short_case_label(c["problem"]);
      const std::string origin = "[" + c["origin"].get<std::string>() + "]";
      if (label.size() + 3 + origin.size() <= 80) {
        std::printf("%s   %s\n", label.c_str(), origin.c_str());
      } else {
        std::printf("%s\n         %s\n", label.c_str(), origin.c_str());
      }
      for (const auto& [name, verdict] : c["implementations"].items()) {
        const std::string text = verdict["runs"].get<bool>() ? "runs"
                                 : verdict["available"].get<bool>() ? "skipped: " + verdict["reason"].get<std::string>()
                                                                    : std::string("cannot run here");
        const std::string indent(9 + name_width + 1, ' ');
        const std::vector<std::string> lines = wrap_words(text, 80, indent);
        for (std::size_t l = 0; l < lines.size(); ++l) {
          std::printf("         %-*s %s\n", name_width, l == 0 ? name.c_str() : "",
                      lines[l].substr(indent.size()).c_str());
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
