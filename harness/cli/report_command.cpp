// Placeholder: `attnbench report` is being written.
#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"

namespace attnbench {

Subcommand add_report_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("report", "(not yet available)");
  return {command, [](const std::vector<std::string>&) -> int { throw InputError("report: not yet available"); }};
}

}  // namespace attnbench
