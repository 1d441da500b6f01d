// `attnbench merge` (docs/design.md §10, docs/results.md): joins the results files of a sharded run
// (`run --shard K/N`), or any results files of the same scenarios, into one
// results file. docs/results.md ("Merged files") states the rules:
// - bad input (exit 2, nothing written): a file that is not a valid results
//   file; scenarios that differ in their names, source, measure or accuracy
//   settings (unless allowed; harness/results/run_identity.hpp compares them as --resume
//   does); a record that belongs to no case or implementation of its file's
//   scenario, or was measured with other settings; one (scenario, case_key,
//   implementation) twice; shards of runs split into different counts; one
//   shard index twice;
// - not comparable (exit 3, nothing written): devices of one kind whose
//   identity (the fields `attnbench compare` matches on) differs, unless allowed;
// - missing shards or unfinished inputs: the merge is written with
//   `complete: false` and the reasons are printed (or refused with
//   --require-complete).
// With --rounds, each input may hold what another holds: one record per cell
// is written, joining the rounds' samples (join_rounds).
// The output takes `tool`, `host` and `threads` from the first input, keeps one
// description per distinct device, lists each input in `merged_from`, and orders
// the records by scenario, case and implementation.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/errors.hpp"

namespace attnbench {

struct MergeInput {
  std::string path;                 // as given; recorded in merged_from
  nlohmann::ordered_json document;  // a valid results file (load_results_file)
};

struct MergeOptions {
  bool allow_mixed_devices = false;
  bool allow_mixed_scenarios = false;
  // The inputs are rounds: repeated runs of the same cells (scripts/ci_gate.sh
  // runs each side once per round). Each cell's records become one record
  // whose samples are the rounds' one after another, with timing.rounds
  // saying which came from which round (docs/results.md, "Rounds").
  bool rounds = false;
};

struct MergeOutcome {
  nlohmann::ordered_json document;
  std::vector<std::string> incomplete;  // why `complete` is false: missing shards, unfinished inputs
  std::vector<std::string> notes;       // differences settled by taking the first input's value
};

// The inputs were measured on different devices (exit code 3): every difference found.
class DevicesDifferError : public std::runtime_error {
 public:
  explicit DevicesDifferError(std::vector<Diagnostic> diagnostics)
      : std::runtime_error("the inputs were measured on different devices"), diagnostics_(std::move(diagnostics)) {}
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

// Merges loaded results files (their records move into the merged document).
// Throws InputError naming every problem found, then DevicesDifferError when
// only the devices stand in the way.
MergeOutcome merge_results(std::vector<MergeInput> inputs, const MergeOptions& options,
                            const std::vector<std::string>& command_line);

// One cell's records from several rounds (in round order; round numbers from
// 1, as the inputs were given) as one record: every round ok and timed gives
// the first round's record with the samples of all, statistics and noise of
// the pooled samples, and timing.rounds (with each sample's companions joined
// alike: cupti's events times and launch overhead, graph's launch times, the
// SM clocks and their marks); otherwise the first record that is not ok, as
// it is. Rounds timed by different methods are refused (InputError).
nlohmann::ordered_json join_rounds(const std::vector<std::pair<int, const nlohmann::ordered_json*>>& rounds,
                                   const std::vector<std::string>& sources);

struct MergeRequest {
  std::vector<std::string> input_paths;
  std::string output_path;
  MergeOptions options;
  bool require_complete = false;  // refuse (exit 2) instead of writing an incomplete merge
  bool overwrite = false;         // replace an existing -o that is not an earlier merge
  std::vector<std::string> command_line;
};

// Takes the lock of the output, loads and checks every input, merges them and
// writes the output atomically; prints what was merged, and why the result is
// incomplete if it is. Returns exit code 0; throws as merge_results does,
// InputError for an unusable -o (a directory, an input, locked by another
// process, or an existing file that is not an earlier merge without
// --overwrite) and FileWriteError when the write fails.
int merge_files(const MergeRequest& request);

}  // namespace attnbench
