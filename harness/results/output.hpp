// How `attnbench run` writes its results file RESULTS (docs/results.md,
// "Writing, resuming and locking"):
// - RESULTS.lock (FileLock) is held from before the first read to the end, so
//   one process writes RESULTS and its journal at a time.
// - start() writes RESULTS whole (complete: false) with every record known so
//   far, then starts RESULTS.journal; each finished case is appended to the
//   journal (one synced write), so saving a case costs the same at case 10 and
//   at case 10,000.
// - finish() writes RESULTS whole (complete: true) and deletes the journal;
//   save() does the same with complete: false before a restart, on a signal or
//   after a write error. A journal is only deleted once RESULTS holds it all.
// - --resume reads RESULTS and the journal, refuses a run with another
//   identity (harness/results/run_identity.hpp) or records that do not belong, and continues.
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
  const SavedRun& saved() const { return saved_; }

  // Adds the saved run to `document` (its start time, devices and records)
  // after checking it against `document`'s identity, `expected`, and the
  // devices this run measures on (`devices_now`: their descriptions; a saved
  // device of the same kind must have the same identity). Throws InputError
  // listing every difference and every record that does not belong.
  void continue_saved_run(ResultsDocument& document, const ExpectedRecords& expected,
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
  // The signal the run this one resumes crashed of while `implementation` ran
  // the case (a "crashed" entry of its journal, with no record), or 0.
  int crashed_in(const std::string& scenario, const std::string& case_key, const std::string& implementation) const;
  // A finished case: journaled (one synced write), then added to the document.
  // Throws FileWriteError, and then the records are not added.
  void add_case(std::vector<nlohmann::ordered_json> records);
  void set_device_clocks(const nlohmann::ordered_json& description, const std::string& when,
                         const nlohmann::ordered_json& clocks);
  // The load averages at the run's end (ResultsDocument::set_load_average).
  void set_load_average(const std::string& when, const std::optional<std::array<double, 3>>& loads);
  bool has_record(const std::string& scenario, const std::string& case_key, const std::string& implementation) const;

  // The document so far; for the thread that writes, or after save_and_stop().
  const ResultsDocument& document() const { return *document_; }

  // RESULTS with every record so far (complete: false); the journal is deleted.
  void save();
  // finish(): RESULTS complete, the journal deleted, the lock released.
  void finish();
  // For the signal watcher: save() if the run has started (returns whether it
  // had) and release the lock; no other write of this process gets through
  // (the mutex stays locked), for the process is about to exit.
  bool save_and_stop();

  // Before the restart that continues the run (exec of this process).
  void keep_lock_across_exec() { lock_.keep_across_exec(); }

 private:
  void write_results_file();

  mutable std::mutex mutex_;
  std::string path_;
  FileLock lock_;
  ExistingResults existing_;
  SavedRun saved_;
  std::optional<ResultsDocument> document_;
  std::optional<JournalWriter> journal_;
  std::vector<nlohmann::ordered_json> devices_to_journal_;
  std::vector<nlohmann::ordered_json> crashes_;  // the saved journal's "crashed" entries that have no record
};

}  // namespace attnbench
