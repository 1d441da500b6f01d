// `attnbench run SCENARIO…`: see harness/runner.hpp.
#include <unistd.h>

#include <memory>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/runner.hpp"

namespace attnbench {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

Subcommand add_run_command(CLI::App& app) {
  struct Options {
    RunOptions run;
    std::string implementations;
    bool hot = false;
    bool cold = false;
    std::string shard;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand("run", "Run scenarios and write a results file");
  command->add_option("scenarios", options->run.scenario_paths, "Scenario files")->required();
  command->add_option("-o,--output", options->run.output_path, "Results file (default: results/<scenario>-<time>.json)");
  command->add_option("--impl", options->implementations, "Comma-separated implementations (overrides the scenario)");
  command->add_option("--filter", options->run.filter, "Only cases whose \"<scenario>/<case key>\" matches this regex");
  command->add_option("--threads", options->run.threads, "Host threads for CPU implementations (default: all)")
      ->check(CLI::Range(1, 4096));
  command->add_flag("--hot", options->hot, "Hot cache: back-to-back samples (overrides the scenario)");
  command->add_flag("--cold", options->cold, "Cold cache: flush before every sample (overrides the scenario)");
  command->add_option("--dump", options->run.dump_dir, "Write inputs and outputs as .npy files with an index.json here");
  command->add_flag("--resume", options->run.resume, "Continue the run saved in -o FILE, skipping finished records");
  command->add_option("--shard", options->shard, "Run only part K of N of the cases (K/N, 1 <= K <= N)");
  return {command, [options](const std::vector<std::string>& command_line) {
            RunOptions& run = options->run;
            if (options->hot && options->cold) throw InputError("--hot and --cold cannot both be given");
            if (options->hot) run.cold_cache = false;
            if (options->cold) run.cold_cache = true;
            run.implementations = split_list(options->implementations);
            if (!options->shard.empty()) run.shard = parse_shard(options->shard);
            run.interactive = isatty(STDERR_FILENO) != 0;
            run.command_line = command_line;
            return run_scenarios(run);
          }};
}

}  // namespace attnbench
