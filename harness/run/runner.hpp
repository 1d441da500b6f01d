// `attnbench run`: scenario cases x implementations -> result records. For each
// case: generate the inputs once; for each implementation: check support and
// memory, allocate everything from one arena, run once with poisoned outputs and
// check against the fp64 oracle, then warm up and time, then (on a device with
// a profiler, unless --no-profile) profile one call; then apply the
// fused-versus-baseline accuracy rule across the case's implementations and
// journal the case's records (harness/results/output.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/errors.hpp"
#include "harness/measure/protocol.hpp"
#include "harness/run/call_watchdog.hpp"
#include "harness/scenario/scenario.hpp"
#include "harness/run/shard.hpp"

namespace attnbench {

struct RunOptions {
  std::vector<std::string> scenario_paths;
  std::vector<Scenario> built_scenarios;     // scenarios built in memory (`bench`), run after the files'
  std::string output_path;                   // empty: results/<scenario>-<time>.json
  std::vector<std::string> implementations;  // --impl; overrides the scenarios' lists
  std::string filter;                        // regex (harness/scenario/regex.hpp) searched in "<scenario>/<case key>"
  int threads = 0;                           // 0: the CPUs this process can use (available_cpus())
  MeasurementOverrides measurement;          // --min-samples, --hot, … override the scenarios' settings
  std::string dump_dir;                      // --dump
  bool resume = false;                       // continue the run saved in output_path
  bool overwrite = false;                    // replace whatever output_path (and --dump) holds
  bool profile = true;                       // the profiling pass on devices with a profiler (--no-profile)
  bool profile_kernels = false;              // and one range per kernel (--profile-kernels)
  std::optional<Shard> shard;                // --shard K/N: only this part of the cases
  bool calibrate = false;                    // --calibrate: the host calibration even for a small run
  bool lock_clocks = false;                  // --lock-clocks: hold the GPUs' clocks for the run where permitted
  bool check_machine = false;                // --check-machine: print the machine check before the run
  bool memory_only = false;                  // --memory-only: no timing; memory measured by one checked call or planned
  bool interactive = false;                  // stderr is a terminal
  // --call-limit: seconds a call of a host implementation may take (0: no limit)
  double call_limit_seconds = kDefaultCallLimitSeconds;
  // Restarts the process to resume the run RestartRequired names, at once, from
  // any thread (the call limit's watchdog): never returns. Empty: the run
  // prints why and exits with kExitGateFailed instead.
  std::function<void(const RestartRequired&)> restart_now;
  std::vector<std::string> command_line;
};

// Runs and returns the exit code (0, or 1 when any record failed); throws
// InputError / EnvironmentError before writing anything when the request is
// bad, EnvironmentError (saying where the finished records are) when a write
// fails mid-run, and RestartRequired after a lost device context. On SIGINT or
// SIGTERM it saves the finished cases and ends the process (130, 143). A host
// call past the call limit is noted in the journal and the run restarts at
// once through `restart_now` (harness/run/call_watchdog.hpp); the resumed run
// records that case as failed ("timeout: …") and the implementation's later
// cases as not run, as after a GPU wait past its limit.
int run_scenarios(const RunOptions& options);

}  // namespace attnbench
