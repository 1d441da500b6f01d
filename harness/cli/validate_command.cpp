// `attnbench validate SCENARIO…`: every problem in every file, at once.
#include <cstdio>
#include <memory>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/scenario.hpp"

namespace attnbench {
namespace {

int command_validate(const std::vector<std::string>& paths) {
  const std::vector<Scenario> scenarios = load_scenarios(paths);
  for (const Scenario& scenario : scenarios) {
    std::printf("%s: ok (scenario \"%s\", %zu cases)\n", scenario.path.c_str(), scenario.name.c_str(),
                scenario.cases.size());
  }
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
