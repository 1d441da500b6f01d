// The attnbench command line (docs/design.md §8). Each subcommand lives in its own file
// (harness/cli/*_command.cpp); only this file turns errors into exit codes: bad
// input 2, an environment that cannot run the request 4.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/version.hpp"

int main(int argc, char** argv) {
  using namespace attnbench;
  try {
    CLI::App app{"attnbench: benchmarking and profiling harness for exact attention"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string(tool_version()) + " (git " + git_revision() + ")");
    const std::vector<Subcommand> subcommands{
        add_run_command(app),      add_bench_command(app),   add_list_command(app),
        add_validate_command(app), add_info_command(app),    add_compare_command(app),
        add_report_command(app),   add_merge_command(app)};
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
      if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
      std::string help = "attnbench";
      for (const CLI::App* command = &app; !command->get_subcommands().empty();) {
        command = command->get_subcommands().front();
        help += " " + command->get_name();
      }
      std::fprintf(stderr, "attnbench: error: %s\nRun `%s --help` for more information.\n", error.what(),
                   help.c_str());
      return kExitBadInput;
    }
    const std::vector<std::string> command_line(argv, argv + argc);
    for (const Subcommand& subcommand : subcommands) {
      if (subcommand.app->parsed()) return subcommand.action(command_line);
    }
    return kExitBadInput;
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
