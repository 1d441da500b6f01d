// `attnbench run SCENARIO…`: see harness/run/runner.hpp. Its options are registered
// by add_run_options, which `bench` shares.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "harness/backend.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/measurement_options.hpp"
#include "harness/errors.hpp"
#include "harness/message_text.hpp"
#include "harness/run/runner.hpp"

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

std::vector<std::string> implementation_list(const std::string& text) {
  std::vector<std::string> names = split_list(text);
  if (names.empty()) {
    throw InputError("--impl " + quote(text) +
                     ": names no implementation; give names separated by commas (attnbench info lists them)");
  }
  return names;
}

namespace {

// After a lost device context: the same command again, continuing the saved
// results with --resume, in a fresh process (a bounded number of times).
[[noreturn]] int restart_to_resume(const std::vector<std::string>& command_line, const RestartRequired& restart) {
  constexpr int kMaxRestarts = 100;
  const char* previous = std::getenv("ATTNBENCH_RESTARTS");
  const int restarts = previous ? std::atoi(previous) + 1 : 1;
  if (restarts > kMaxRestarts) {
    throw DeviceError(std::string(restart.what()) + "; giving up after " + std::to_string(kMaxRestarts) + " restarts",
                      true);
  }
  std::fprintf(stderr, "attnbench: %s (restart %d)\n", restart.what(), restarts);
  std::vector<std::string> arguments = command_line;
  arguments.erase(std::remove(arguments.begin(), arguments.end(), "--overwrite"), arguments.end());
  arguments.push_back("-o");
  arguments.push_back(restart.results_path());  // the last -o wins
  if (std::find(arguments.begin(), arguments.end(), "--resume") == arguments.end()) arguments.push_back("--resume");
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  setenv("ATTNBENCH_RESTARTS", std::to_string(restarts).c_str(), 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv.data());
  throw DeviceError(std::string("cannot restart attnbench: ") + std::strerror(errno), true);
}

}  // namespace

void add_run_options(CLI::App& command, RunCommandOptions& options) {
  command.add_option("-o,--output", options.run.output_path, "Results file (default: results/<scenario>-<time>.json)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)  // a restart appends the path it continues
      ->check(output_name_check());
  options.implementation_option =
      command.add_option("--impl", options.implementations, "Comma-separated implementations (overrides the scenario)");
  command.add_option("--filter", options.run.filter, "Only cases whose \"<scenario>/<case key>\" matches this regex");
  command.add_option("--threads", options.run.threads,
                     "Host threads for CPU implementations (default: the CPUs this process can use: affinity, "
                     "cgroup quota)")
      ->check(CLI::Range(1, 4096));
  add_measurement_options(command, options.run.measurement);
  command.add_option("--dump", options.run.dump_dir, "Write inputs and outputs as .npy files with an index.json here")
      ->check(file_name_check());
  command.add_flag("--resume", options.run.resume,
                   "Continue the run saved in -o FILE (same scenarios and settings), skipping finished records");
  command.add_flag("--overwrite", options.run.overwrite,
                   "Replace what -o FILE (and --dump DIR) already holds instead of refusing");
  command.add_flag("--memory-only", options.run.memory_only,
                   "No timing: each case's memory measured by one checked call, or planned from the arena plan "
                   "where the device is absent or one call would take too long (memory.source)");
  command.add_flag("--check-machine", options.run.check_machine,
                   "Print what makes this machine unfit for benchmarking now (attnbench doctor) before the run; "
                   "every run records it in the results file's \"machine\"");
  command.add_flag("--lock-clocks", options.run.lock_clocks,
                   "Lock each GPU's SM clock at its default application (base) clock for the run where this process "
                   "may (root, a supported GPU), restored at the end and on interrupt; the devices record it");
  command.add_flag("--calibrate", options.run.calibrate,
                   "Measure the host's fp32 GEMM rate and copy bandwidth (host.calibration, the roofline's CPU "
                   "ceilings) even when the run has little host work");
  command.add_flag("--no-profile", options.no_profile,
                   "Skip the profiling pass (CUPTI DRAM/L2 bytes); needed when running under ncu or nsys");
  command.add_flag("--profile-kernels", options.run.profile_kernels,
                   "Also profile each kernel of a call separately (traffic.measured.kernels)");
  command.add_option("--call-limit", options.run.call_limit_seconds,
                     "Seconds one call of a host implementation (plug-ins included) may take before its case fails "
                     "as a timeout and the run goes on in a new process (default 600; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--shard", options.shard, "Run only part K of N of the cases (K/N, 1 <= K <= N)");
  command.add_option("--device", options.device, "Which accelerator of the machine to use (default 0)")
      ->check(CLI::NonNegativeNumber);
}

int execute_run(RunCommandOptions& options, const std::vector<std::string>& command_line) {
  RunOptions& run = options.run;
  if (options.implementation_option && options.implementation_option->count() > 0) {
    run.implementations = implementation_list(options.implementations);
  }
  if (!options.shard.empty()) run.shard = parse_shard(options.shard);
  run.profile = !options.no_profile;
  BackendRegistry::instance().set_device_index(options.device);
  run.interactive = isatty(STDERR_FILENO) != 0;
  run.command_line = command_line;
  run.restart_now = [&command_line](const RestartRequired& restart) {
    try {
      restart_to_resume(command_line, restart);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "attnbench: error: %s\n", error.what());
      std::fflush(nullptr);
      std::_Exit(kExitEnvironment);
    }
  };
  try {
    return run_scenarios(run);
  } catch (const RestartRequired& restart) {
    return restart_to_resume(command_line, restart);
  }
}

Subcommand add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunCommandOptions>();
  CLI::App* command = app.add_subcommand("run", "Run scenarios and write a results file");
  command->add_option("scenarios", options->run.scenario_paths, "Scenario files")->required()->check(file_name_check());
  add_run_options(*command, *options);
  return {command, [options](const std::vector<std::string>& command_line) {
            return execute_run(*options, command_line);
          }};
}

}  // namespace attnbench
