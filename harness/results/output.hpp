// How `attnbench run` writes its results file RESULTS (docs/results.md,
// "Writing, resuming and locking"):
// - RESULTS.lock (FileLock) is held from before the first read to the end, so
//   one process writes RESULTS and its journal at a time; every write goes
//   into the directory the lock was taken in, and stops (OutputDisplacedError)
//   when that directory or the lock file is no longer in place.
// - start() writes RESULTS whole (complete: false) with every record known so
//   far, then starts RESULTS.journal; each finished case is appended to the
//   journal (one synced write), so saving a case costs the same at case 10 and
//   at case 10,000.
// - finish() writes RESULTS whole (complete: true) and deletes the journal;
//   save() does the same with complete: false before a restart, on a signal or
//   after a write error. A journal is only deleted once RESULTS holds it all.
//   release() lets the lock go, once the signal watcher is gone.
// - --resume reads RESULTS and the journal, refuses a journal of another run
//   (run ids), a run with another identity (harness/results/run_identity.hpp)
//   or records that do not belong, and continues.
// - Without --resume or --overwrite an existing RESULTS or journal is never
//   touched.
// The document and the journal are guarded by one mutex, so the signal watcher
// (harness/results/interruption.hpp) can save while the run goes on.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results/crash_note.hpp"
#include "harness/results/file_lock.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/results/run_identity.hpp"

namespace attnbench {

enum class ExistingResults {
  refuse,     // an existing RESULTS or journal is bad input (exit 2)
  overwrite,  // replaced by this run (--overwrite)
  resume,     // continued (--resume)
};

// What an earlier run left: the results file and its journal, either or both.
struct SavedRun {
  std::optional<nlohmann::ordered_json> document;  // schema-checked (load_results_file)
  std::optional<JournalContents> journal;
};

// What a resume took from the saved run.
struct ResumedRecords {
  std::size_t from_results_file = 0;
  std::size_t from_journal = 0;
  std::size_t journal_entries = 0;  // whole entry lines: records, devices and crashes
  std::size_t crashes = 0;          // "crashed" entries without a record: recorded as failed, not run again
  std::size_t timeouts = 0;         // those of them noting a call past the call limit
  bool torn_tail = false;           // the journal's last line was cut short and ignored
};

// Where the records of a run are after save_where_possible().
struct SavedRecords {
  std::string where;     // "RESULTS", "RESULTS and RESULTS.journal", a rescue file, or standard error
  bool rescued = false;  // RESULTS was displaced: `where` is a rescue file, or standard error
  bool printed = false;  // no directory took the rescue file: it was printed to standard error
  // The flags that continue the run from there, added to the same command:
  // "--resume", or "-o FILE --resume" naming the rescue file.
  std::string how_to_continue() const;
};

// What the signal watcher's save found (save_and_stop()).
enum class StopState {
  before_start,  // nothing written yet: RESULTS is as it was
  saved,         // the records so far were saved (SavedRecords says where)
  finished,      // the run had finished: RESULTS is complete
};

// The lines around a results file printed to standard error as the last resort.
inline constexpr const char* kRescueBegin = "----- BEGIN ATTNBENCH RESULTS -----";
inline constexpr const char* kRescueEnd = "----- END ATTNBENCH RESULTS -----";

class ResultsOutput {
 public:
  // Takes the lock of `path`, removes temporaries left by killed writers and
  // deals with what is there as `existing` says. Throws InputError when
  // refusing (naming what the file holds and the flag that would continue or
  // replace it), when RESULTS is not a valid results file or the journal is
  // damaged (resume), and when another process holds the lock.
  ResultsOutput(std::string path, ExistingResults existing);

  const std::string& path() const { return path_; }
  std::string journal_file() const { return journal_path(path_); }

  // Adds the saved run to `document` (its start time, devices and records)
  // after checking it against `document`'s identity, `expected`, and the
  // devices this run measures on (`devices_now`: their descriptions; a saved
  // device of the same kind must have the same identity). Throws InputError
  // listing every difference and every record that does not belong.
  // A journal of another run (its run id is not RESULTS's) is refused too.
  // The resumed run keeps the saved run's id and start time; the saved
  // records move into `document`.
  ResumedRecords continue_saved_run(ResultsDocument& document, const ExpectedRecords& expected,
                                    const std::vector<nlohmann::ordered_json>& devices_now);

  // Writes RESULTS from `document` (complete: false) and starts a fresh journal.
  // Throws FileWriteError.
  void start(ResultsDocument document);

  // The device a case used first, with its clocks then; journaled with that case.
  void note_device(const nlohmann::ordered_json& description, const nlohmann::ordered_json& clocks);
  // While it lives, a crash of the process is noted in the journal as one of
  // (scenario, case_key, implementation) (harness/results/crash_note.hpp).
  std::unique_ptr<CrashNote> note_crashes_in(const std::string& scenario, const std::string& case_key,
                                             const std::string& implementation);
  // The "crashed" entry of the journal of the run this one resumes for
  // `implementation` in the case, when it has no record (the process died of
  // its "signal", or restarted after its "timeout_seconds"), or nullptr.
  const nlohmann::ordered_json* crashed_in(const std::string& scenario, const std::string& case_key,
                                           const std::string& implementation) const;
  // A finished case: journaled (one synced write), then added to the document.
  // Throws FileWriteError, and then the records are not added.
  void add_case(std::vector<nlohmann::ordered_json> records);
  void set_device_clocks(const nlohmann::ordered_json& description, const std::string& when,
                         const nlohmann::ordered_json& clocks);
  // The load averages at the run's end (ResultsDocument::set_load_average).
  void set_load_average(const std::string& when, const std::optional<std::array<double, 3>>& loads);
  // host.calibration, replaced (ResultsDocument::set_host_calibration).
  void set_host_calibration(const nlohmann::ordered_json& calibration);
  bool has_record(const std::string& scenario, const std::string& case_key, const std::string& implementation) const;

  // The document so far; for the thread that writes, or after save_and_stop().
  const ResultsDocument& document() const { return *document_; }

  // RESULTS with every record so far (complete: false); the journal is deleted.
  // Throws FileWriteError.
  void save();
  // After a write failed: save() where it still can. When RESULTS cannot be
  // written, its records are in RESULTS and its journal; when its directory or
  // lock was displaced, they go to a file of their own, attnbench-<run id>.json,
  // never to the displaced place: in $TMPDIR, else /tmp, else the current
  // directory; when none of them takes it, the results file is printed to
  // standard error between two marker lines (kRescueBegin, kRescueEnd).
  SavedRecords save_where_possible();
  // RESULTS complete, the journal deleted. The lock is kept until release().
  void finish();
  // Lets the lock go (after finish(), once no signal can make this process write).
  void release() { lock_.release(); }
  // For the signal watcher: saves what the run finished if it has started and
  // not finished (save_where_possible()), then releases the lock; no other
  // write of this process gets through (the mutex stays locked), for the
  // process is about to exit.
  StopState save_and_stop(SavedRecords& saved);

  // Before the restart that continues the run (exec of this process).
  void keep_lock_across_exec() { lock_.keep_across_exec(); }

 private:
  void write_results_file();
  SavedRecords save_where_possible_locked();

  mutable std::mutex mutex_;
  std::string path_;
  FileLock lock_;
  ExistingResults existing_;
  SavedRun saved_;
  std::optional<ResultsDocument> document_;
  std::optional<JournalWriter> journal_;
  std::vector<nlohmann::ordered_json> devices_to_journal_;
  std::vector<nlohmann::ordered_json> crashes_;  // the saved journal's "crashed" entries that have no record
  bool finished_ = false;
};

}  // namespace attnbench
