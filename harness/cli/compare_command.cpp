// Placeholder: `attnbench compare` is being written.
#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"

namespace attnbench {

Subcommand add_compare_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("compare", "(not yet available)");
  return {command, [](const std::vector<std::string>&) -> int { throw InputError("compare: not yet available"); }};
}

}  // namespace attnbench
