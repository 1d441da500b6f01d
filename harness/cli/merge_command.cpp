// `attnbench merge FILES… -o OUT`: joins the shards of a run (or any results
// files of the same scenarios) into one results file; see harness/results/merge.hpp.
// Exit codes: 0 written (complete or not), 2 bad input, 3 different devices,
// 4 the output could not be written.
#include <cstdio>
#include <memory>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/results/merge.hpp"

namespace attnbench {

Subcommand add_merge_command(CLI::App& app) {
  auto request = std::make_shared<MergeRequest>();
  CLI::App* command = app.add_subcommand("merge", "Join results files (the shards of a run) into one");
  command->add_option("files", request->input_paths, "Results files to merge")->required()->check(file_name_check());
  command->add_option("-o,--output", request->output_path, "The merged results file")
      ->required()
      ->check(output_name_check());
  command->add_flag("--allow-mixed-devices", request->options.allow_mixed_devices,
                    "Merge files measured on different devices");
  command->add_flag("--allow-mixed-scenarios", request->options.allow_mixed_scenarios,
                    "Merge files of different scenarios or scenario settings");
  command->add_flag("--rounds", request->options.rounds,
                    "The files are rounds (repeated runs of the same cells): join each cell's records into one "
                    "whose samples keep their rounds (timing.rounds); scripts/ci_gate.sh merges its rounds so");
  command->add_flag("--require-complete", request->require_complete,
                    "Refuse (exit 2) instead of writing a merge with missing shards or unfinished inputs");
  command->add_flag("--overwrite", request->overwrite,
                    "Replace an existing -o FILE even when it is not an earlier merge");
  return {command, [request](const std::vector<std::string>& command_line) {
            request->command_line = command_line;
            try {
              return merge_files(*request);
            } catch (const DevicesDifferError& error) {
              for (const Diagnostic& difference : error.diagnostics()) {
                std::fprintf(stderr, "attnbench: not comparable: %s\n", difference.format().c_str());
              }
              return static_cast<int>(kExitNotComparable);
            }
          }};
}

}  // namespace attnbench
