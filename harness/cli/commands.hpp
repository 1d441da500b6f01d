// The subcommands of the attnbench command line, one file each. A subcommand
// registers its options on the application and returns the action that runs
// when it was chosen; main() turns what actions throw into exit codes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/user_paths.hpp"
#include "harness/run/runner.hpp"

namespace attnbench {

struct Subcommand {
  CLI::App* app;
  // Runs the command given the whole command line as typed; returns the exit code.
  std::function<int(const std::vector<std::string>& command_line)> action;
};

Subcommand add_run_command(CLI::App& app);
Subcommand add_bench_command(CLI::App& app);
Subcommand add_list_command(CLI::App& app);
Subcommand add_validate_command(CLI::App& app);
Subcommand add_info_command(CLI::App& app);
Subcommand add_compare_command(CLI::App& app);
Subcommand add_report_command(CLI::App& app);
Subcommand add_merge_command(CLI::App& app);
Subcommand add_doctor_command(CLI::App& app);

// What `run` and `bench` share: every option but where the scenarios come from.
struct RunCommandOptions {
  RunOptions run;
  std::string implementations;
  CLI::Option* implementation_option = nullptr;  // --impl, to tell "--impl ''" from no --impl
  std::string shard;
  bool no_profile = false;
  int device = 0;
};
// Registers the shared options on `command`.
void add_run_options(CLI::App& command, RunCommandOptions& options);
// Runs what `options` describe (restarting with --resume after a lost device
// context); returns the exit code.
int execute_run(RunCommandOptions& options, const std::vector<std::string>& command_line);

// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> split_list(const std::string& text);

// The names an --impl option gives; throws InputError when it names none
// ("", ",,,"): an empty list is a mistake, not a request for the default set.
std::vector<std::string> implementation_list(const std::string& text);

// The check of every option that names a file: a name the file system cannot
// hold (too long, empty) is bad usage, refused before any file is touched.
inline CLI::Validator file_name_check() {
  return CLI::Validator([](std::string& path) { return path_name_problem(path); }, "", "file name");
}
// The same for an option naming a file the tool writes ("-" passes: stdout).
inline CLI::Validator output_name_check() {
  return CLI::Validator([](std::string& path) { return path == "-" ? std::string() : output_name_problem(path); }, "",
                        "output file name");
}

}  // namespace attnbench
