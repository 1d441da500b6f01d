// Placeholder: `attnbench merge` is being written.
#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"

namespace attnbench {

Subcommand add_merge_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("merge", "(not yet available)");
  return {command, [](const std::vector<std::string>&) -> int { throw InputError("merge: not yet available"); }};
}

}  // namespace attnbench
