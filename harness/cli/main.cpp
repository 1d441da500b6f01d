// The attnbench command line (docs/design.md §8). Each subcommand lives in its own file
// (harness/cli/*_command.cpp); only this file turns errors into exit codes: bad
// input 2, an environment that cannot run the request 4. (A run interrupted by
// SIGINT or SIGTERM ends from its signal watcher, harness/results/interruption.hpp,
// with 128 + the signal once it has saved what it finished.)
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/cli/plugin_options.hpp"
#include "harness/errors.hpp"
#include "harness/measure/protocol.hpp"
#include "harness/message_text.hpp"
#include "harness/plugin/loader.hpp"
#include "harness/results/interruption.hpp"
#include "harness/version.hpp"

namespace {

// The most problems printed for one file; a count stands for the rest.
constexpr std::size_t kMaxPrintedPerFile = 50;

// One line per problem, in the order found, at most kMaxPrintedPerFile per
// file. File names are bytes; what reaches the terminal is UTF-8.
void print_diagnostics(const std::vector<attnbench::Diagnostic>& diagnostics) {
  std::map<std::string, std::size_t> printed, left_out;
  for (const attnbench::Diagnostic& diagnostic : diagnostics) {
    if (printed[diagnostic.file]++ >= kMaxPrintedPerFile) {
      ++left_out[diagnostic.file];
      continue;
    }
    std::fprintf(stderr, "attnbench: error: %s\n", attnbench::escape_invalid_utf8(diagnostic.format()).c_str());
  }
  for (const auto& [file, count] : left_out) {
    std::fprintf(stderr, "attnbench: error: %s%zu more problems not shown\n",
                 file.empty() ? "" : attnbench::escape_invalid_utf8(file + ": ").c_str(), count);
  }
}

// The deepest subcommand given ("run"), or the app itself.
const CLI::App* innermost_command(const CLI::App& app) {
  const CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  return command;
}

// " (did you mean \"run\"?)", or "" when nothing is near enough.
std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::optional<std::string> nearest = attnbench::closest_word(word, candidates);
  return nearest ? " (did you mean " + attnbench::quote(*nearest) + "?)" : "";
}

// What a first user gets wrong, said plainly: an unknown command or flag named
// with the nearest one. Empty when the error is another (CLI11's message then).
std::vector<std::string> explain_parse_error(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> lines;
  const CLI::App* command = innermost_command(app);
  if (command == &app) {
    std::vector<std::string> names;
    for (const CLI::App* subcommand : app.get_subcommands({})) names.push_back(subcommand->get_name());
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    if (argc < 2) {
      lines.push_back("a command is required: " + list);
    } else if (argv[1][0] == '-') {
      lines.push_back("unknown flag " + attnbench::quote(argv[1]) + "; give a command first: " + list);
    } else {
      lines.push_back("unknown command " + attnbench::quote(argv[1]) + suggestion(argv[1], names) +
                      "; the commands are " + list);
    }
    return lines;
  }
  std::vector<std::string> flags;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
  }
  for (const std::string& argument : command->remaining()) {
    if (argument.size() < 2 || argument[0] != '-' || std::isdigit(static_cast<unsigned char>(argument[1]))) continue;
    const std::string flag = argument.substr(0, argument.find('='));
    lines.push_back("unknown flag " + attnbench::quote(flag) + " for " + command->get_name() +
                    suggestion(flag, flags));
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnbench;
  handle_interrupts_outside_runs();  // before anything else: a signal never ends the process silently
  keep_continuations_pending();  // before any thread starts (harness/measure/protocol.hpp)
  const ReleasePluginsOnExit release_plugins_at_the_end;
  try {
    CLI::App app{"attnbench: benchmarking and profiling harness for exact attention"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string(tool_version()) + " (git " + git_revision() + ")");
    // The commands that run, list or check implementations take plug-ins.
    const std::vector<Subcommand> with_plugins{add_run_command(app), add_bench_command(app), add_list_command(app),
                                               add_validate_command(app), add_info_command(app),
                                               add_doctor_command(app)};
    std::vector<Subcommand> subcommands = with_plugins;
    for (const Subcommand& command : {add_compare_command(app), add_report_command(app), add_merge_command(app)}) {
      subcommands.push_back(command);
    }
    PluginRequest plugins;
    std::vector<CLI::App*> plugin_commands;
    for (const Subcommand& command : with_plugins) plugin_commands.push_back(command.app);
    add_plugin_options(plugin_commands, plugins);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
      if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
      std::string help = "attnbench";
      for (const CLI::App* command = &app; !command->get_subcommands().empty();) {
        command = command->get_subcommands().front();
        help += " " + command->get_name();
      }
      std::vector<std::string> lines = explain_parse_error(app, argc, argv);
      if (lines.empty()) lines.push_back(error.what());
      for (const std::string& line : lines) {
        std::fprintf(stderr, "attnbench: error: %s\n", escape_invalid_utf8(line).c_str());
      }
      std::fprintf(stderr, "Run `%s --help` for more information.\n", help.c_str());
      return kExitBadInput;
    }
    plugins.load_if_chosen();
    const std::vector<std::string> command_line(argv, argv + argc);
    for (const Subcommand& subcommand : subcommands) {
      if (subcommand.app->parsed()) return subcommand.action(command_line);
    }
    return kExitBadInput;
  } catch (const InputError& error) {
    print_diagnostics(error.diagnostics());
    return kExitBadInput;
  } catch (const EnvironmentError& error) {
    std::fprintf(stderr, "attnbench: error: %s\n", escape_invalid_utf8(error.what()).c_str());
    return kExitEnvironment;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "attnbench: internal error: %s\n", escape_invalid_utf8(error.what()).c_str());
    return kExitGateFailed;
  }
}
