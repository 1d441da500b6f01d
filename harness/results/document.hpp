// The results file (docs/design.md §7, docs/results.md): one versioned JSON
// document per run, validated by scenarios/results.schema.json and always
// replaced whole (a temporary file, then a rename). How a run writes it — at
// its start and its end, with every finished case journaled in between — is
// harness/results/output.hpp's.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/shard_identity.hpp"

namespace attnbench {

class FileLock;

inline constexpr const char* kResultsSchemaId = "attnbench.results/1";

// The JSON Schema of results files (embedded at build time).
const nlohmann::ordered_json& results_schema();

// A scenario's measure settings with the timing keys that files from before
// the timing methods lack spelled out as those files measured (events; the
// graph and clock-mark defaults, which events timing does not use), so an
// older file compares, merges and resumes as equal to one that names them.
nlohmann::ordered_json with_default_timing(nlohmann::ordered_json measure);

std::string utc_timestamp();  // "2026-11-29T22:38:52Z"

// A fresh run id: 32 random hexadecimal digits. A results file carries its
// run's (`run_id`), and so does the header of that run's journal.
std::string new_run_id();

// The fields of a `devices` entry that identify the hardware and software a run
// measured (kind, name and, where present, compute capability, driver, CUDA
// runtime, SM count, memory, ECC, and the clock policy: "default" or the
// locked SM/memory clocks). Other fields (clocks seen, free memory, CPU
// counts, cache sizes) may change between runs of one machine. `compare` and
// `merge` treat two devices as the same when these agree.
nlohmann::ordered_json device_identity(const nlohmann::ordered_json& device);

// Whether a record is the fp64 oracle's: an implementation registered as the
// oracle, or a record that says so (accuracy.status "oracle", another build's).
bool is_oracle_record(const nlohmann::ordered_json& record);

// Reads a results file (of at most kMaxResultsFileBytes) and checks it against
// the results schema; throws InputError naming the file and every problem when
// it is not a valid one.
// Every reader (compare, report, merge, run --resume, run -o over an existing
// file) goes through it, so what they read has the schema's shape.
nlohmann::ordered_json load_results_file(const std::string& path);

// The same checks on a document's text; `file` names it in the diagnostics.
nlohmann::ordered_json parse_results_text(const std::string& text, const std::string& file);

// Whether two paths name the same file, existing or not ("a.json" and
// "./a.json"); outputs are checked against inputs with it before any write.
bool same_file(const std::string& a, const std::string& b);

// Writes `text` to `path` through a temporary file in the same directory
// (temporary_path), synced, then a rename and a sync of the directory, so
// readers never see a half-written file and a power loss leaves the old file
// or the new one. Throws FileWriteError naming `path` when it cannot.
void write_file_atomically(const std::string& path, const std::string& text);

// A results document as its file holds it (one-space indents, a final
// newline), written to `lock`'s file the same way but without ever holding the
// whole text: it goes out in pieces as it is formatted. Throws
// OutputDisplacedError first when the lock's place is no longer in place.
void write_file_atomically(const FileLock& lock, const nlohmann::ordered_json& document);

// The step both take, in the open `directory`: `write` fills `temporary_name`
// (returning false with errno set on an error), which is synced and renamed
// to `name`, and the directory is synced. Returns the new file's descriptor,
// open for appending, when `keep_open` (else -1). Throws FileWriteError naming
// `shown_path`.
int replace_file_in(int directory, const std::string& name, const std::string& temporary_name,
                    const std::function<bool(int descriptor)>& write, const std::string& shown_path, bool keep_open);

// Syncs an open directory, so that the names created, renamed or removed in it
// survive a power loss. False, with errno set, on an error (a file system that
// cannot sync directories is no error).
bool sync_directory(int directory);

// write(2) until all of `text` is written; false, with errno set, on an error.
bool write_all(int descriptor, std::string_view text);

// PATH.tmp.<process id>: the temporary file write_file_atomically uses.
std::string temporary_path(const std::string& path);

// Removes the temporaries of `path` that a process killed during a write left:
// those of processes that no longer run, and of an earlier program of this one.
void remove_stale_temporaries(const std::string& path);

// Orders records by scenario (the order of `scenarios`), case index, then the
// scenario's implementation order; records that tie keep their order.
void sort_records(nlohmann::ordered_json& records, const nlohmann::ordered_json& scenarios);

// The document a run builds: the header at the start, then devices and records
// as the run goes. Only ResultsOutput writes it.
class ResultsDocument {
 public:
  ResultsDocument(const std::vector<std::string>& command_line, int threads);

  void set_started_at(const std::string& started_at);  // a resumed run keeps the first start
  void set_run_id(const std::string& run_id);          // and its id
  void set_scenarios(const nlohmann::ordered_json& scenarios);
  void set_shard(const std::optional<Shard>& shard);
  // Where the thread count came from: "command_line" (--threads) or
  // "available_cpus" (host.available_cpus, the default).
  void set_threads_source(const std::string& source);
  // host.calibration: HostCalibration::to_json() (harness/measure/calibration.hpp),
  // or null when the run did not calibrate.
  void set_host_calibration(const nlohmann::ordered_json& calibration);
  // load_average[`when`] ("run_start", "run_end"): the 1-, 5- and 15-minute
  // load averages, null where the OS does not say.
  void set_load_average(const std::string& when, const std::optional<std::array<double, 3>>& loads);
  void set_filter(const std::string& filter);  // "" for none (null)
  // tool.blas: the BLAS library of the CPU implementations (harness/blas.hpp).
  void set_blas(const nlohmann::ordered_json& blas);
  // "machine": what harness/machine_check.hpp found when the run started.
  void set_machine(const nlohmann::ordered_json& findings);
  // The plug-ins the run's implementations come from (plugins_json of
  // harness/plugin/loader.hpp); an empty list leaves the key out.
  void set_plugins(const nlohmann::ordered_json& plugins);
  // Adds a devices entry unless one describes the same device (clocks aside).
  void add_device(const nlohmann::ordered_json& device);
  // The devices entry that `device` describes (clocks aside); null when none.
  const nlohmann::ordered_json* find_device(const nlohmann::ordered_json& device) const;
  // Sets clocks[`when`] ("run_start" once, "run_end") of the devices entry that
  // `device` describes (its other fields equal); null clocks are not recorded.
  void set_device_clocks(const nlohmann::ordered_json& device, const std::string& when,
                         const nlohmann::ordered_json& clocks);
  void add_record(nlohmann::ordered_json record);
  bool has_record(const std::string& scenario, const std::string& case_key,
                  const std::string& implementation) const;
  const nlohmann::ordered_json& json() const { return document_; }

  // Marks the run complete: finished_at set, records in scenario, case and
  // implementation order (sort_records).
  void mark_complete();

 private:
  nlohmann::ordered_json document_;
  std::set<std::tuple<std::string, std::string, std::string>> finished_;
};

}  // namespace attnbench
