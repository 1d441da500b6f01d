// `attnbench validate SCENARIO…`: every problem in every file, at once. Each
// sound file gets its "ok" line whatever the others hold; a JSON Schema among
// the files (`validate scenarios/*.json` finds scenarios/*.schema.json) is
// recognised and skipped. Exit 2 when any scenario has a problem.
#include <cstdio>
#include <memory>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/format.hpp"
#include "harness/scenario/scenario.hpp"

namespace attnbench {
namespace {

int command_validate(const std::vector<std::string>& paths) {
  std::vector<Diagnostic> problems;
  for (const ScenarioFile& file : load_scenario_files(paths)) {
    if (file.json_schema) {
      std::printf("%s: skipped (a JSON Schema, not a scenario)\n", file.path.c_str());
    } else if (file.problems.empty()) {
      std::printf("%s: ok (scenario \"%s\", %s)\n", file.path.c_str(), file.scenario.name.c_str(),
                  count_of(file.scenario.cases.size(), "case").c_str());
    } else {
      problems.insert(problems.end(), file.problems.begin(), file.problems.end());
    }
  }
  std::fflush(stdout);  // the "ok" lines before main prints the problems on stderr
  if (!problems.empty()) throw InputError(problems);
  return kExitSuccess;
}

}  // namespace

Subcommand add_validate_command(CLI::App& app) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* command = app.add_subcommand("validate", "Check scenario files; report every problem");
  command->add_option("scenarios", *paths, "Scenario files")->required()->check(file_name_check());
  return {command, [paths](const std::vector<std::string>&) { return command_validate(*paths); }};
}

}  // namespace attnbench
