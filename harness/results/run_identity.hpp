// When records of different runs may share one results file: the comparison
// `run --resume` and `merge` both make, in one place.
// - A run's identity: everything that shapes its records or which records it
//   makes — the tool's git revision and BLAS, its plug-ins' builds, threads,
//   --filter, --shard, and per
//   scenario the file as given (`source`), the effective `measure` and
//   `accuracy` settings (compared as whole objects, so a setting added later is
//   covered) and the implementations.
// - Every record carries the settings it was measured with (`settings`), and
//   must belong to a case and an implementation of its scenario, once.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/errors.hpp"

namespace attnbench {

// Where two JSON values differ, each as "key.path (A vs B)" (arrays by index,
// objects by key, a missing side as (absent)); at most `limit`, then
// "N more". Empty when they are equal.
std::vector<std::string> json_differences(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                                          const std::string& path = "", std::size_t limit = 4);

// "x, y, z" for the differences json_differences found.
std::string join_differences(const std::vector<std::string>& differences);

// How two `scenarios` entries define their work differently: the file as given
// (`source`), the effective `measure` settings (with_default_timing,
// harness/results/document.hpp) and
// `accuracy` settings. The implementations are not part of it (merge joins
// them; a resume checks them).
std::vector<std::string> scenario_definition_differences(const nlohmann::ordered_json& a,
                                                         const nlohmann::ordered_json& b);

// "OpenBLAS 0.3.21": the name and version of the BLAS a results document's
// build used (tool.blas), null for a file that records none.
nlohmann::ordered_json blas_identity(const nlohmann::ordered_json& results_document);

// The identity of the run a results document holds (see above):
// {"git_revision", "plugins", "threads", "filter", "shard", "scenarios":
// [{"name", "source", "measure", "accuracy", "implementations"}]}, and "blas"
// where the file records one.
nlohmann::ordered_json run_identity(const nlohmann::ordered_json& results_document);

// The builds of the plug-in implementations a results document's records come
// from, part of its identity as the tool's git revision is: {name: {"path",
// "sha256", "version"}}, from its `plugins` (empty when it has none).
nlohmann::ordered_json plugin_builds(const nlohmann::ordered_json& results_document);

// "NAME came from A vs B" for each implementation whose plug-in build (SHA-256
// and version; the path may differ) is not the same in `a` and `b`
// (plugin_builds values), a built-in implementation counting as none.
std::vector<std::string> plugin_build_differences(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b);

// Every way the identity saved in `file` differs from `current`, each naming
// the key, both values, and what --resume needs.
std::vector<Diagnostic> run_identity_differences(const nlohmann::ordered_json& saved,
                                                 const nlohmann::ordered_json& current, const std::string& file);

// The `settings` a record carries: its scenario's effective measure and
// accuracy settings, the host threads, the profiling pass ({"enabled",
// "per_kernel"}) and the tool's git revision.
nlohmann::ordered_json record_settings(const nlohmann::ordered_json& measure, const nlohmann::ordered_json& accuracy,
                                       int threads, const nlohmann::ordered_json& profile);

// What the records of a run may be, per scenario name.
struct ExpectedScenarioRecords {
  std::map<std::string, std::size_t> case_index_by_key;
  std::set<std::string> implementations;
  // Each key here must have this value in every record's `settings`.
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  bool settings_required = true;  // false: a record without `settings` (an older file) passes
};
using ExpectedRecords = std::map<std::string, ExpectedScenarioRecords>;

// The runs whose records a file may hold: the run's own id (and, in a merged
// file, the id of every run it merged). A record's `run_id` must be one of
// them; without one (an older file) it passes unless `required`.
struct RecordRuns {
  std::set<std::string> ids;
  bool required = true;
  std::string description;  // how a message names them: "this run (3f9c…)"
};

// One record and where it was read: "FILE", "records[3]" or "line 7".
struct LocatedRecord {
  const nlohmann::ordered_json* record;
  std::string file;
  std::string where;
};

// The records that do not belong to `expected` and `runs`: of another run, of a scenario, case or
// implementation it does not have, with a case_index that is not its key's,
// measured with other settings, whose derived figures differ from their
// recomputation from its own data (it was edited; derived_figures.hpp), or a second record of one (scenario, case_key,
// implementation). Each kind of problem is reported once, with its first
// example and how many records have it.
std::vector<Diagnostic> record_problems(const std::vector<LocatedRecord>& records, const ExpectedRecords& expected,
                                        const RecordRuns& runs);

// The runs a results file's records may come from: its run_id, and in a merged
// file the run_id of every input in merged_from.
RecordRuns record_runs_of(const nlohmann::ordered_json& document, bool required);

}  // namespace attnbench
