// The journal of a run (RESULTS.journal): what the run finished since it last
// wrote the results file, as JSON lines. docs/results.md describes the format
// and when it is folded into the results file:
// - Line 1 is the header: the run's id (the `run_id` of its results file),
//   its start time and identity. Each later line is one entry,
//   {"record": {...}}, {"device": {...}}, or {"crashed": {"scenario",
//   "case_key", "implementation", "signal"}}, written by a fatal-signal
//   handler when the process crashed in a case, or with "timeout_seconds" for
//   "signal" when a host call passed its limit (harness/results/crash_note.hpp).
// - Every line carries a sequence number (`seq`: 0 for the header, then 1, 2,
//   ...) and a CRC-32C over the run id and the rest of the line, so an entry
//   that was edited, damaged, moved, or copied from another run's journal is
//   told from the run's own.
// - The journal appears whole: its header is written to a temporary file and
//   renamed into place, so a kill never leaves a journal without a header.
// - A case's lines go out in one write followed by fdatasync, so the cost of
//   saving a case does not grow with the run, and a kill — even kill -9 —
//   loses no finished case: at worst the last line is cut short, and a reader
//   ignores such a line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

class FileLock;

inline constexpr const char* kJournalSchemaId = "attnbench.journal/2";

std::string journal_path(const std::string& results_path);  // RESULTS.journal

// CRC-32C (Castagnoli) of `bytes`, continuing from `crc` (0 to start).
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0);

// One journal line (with its newline) for `entry`, an object whose first
// member is "seq": `{"crc32c":"<8 hex digits>",` + the rest of entry's JSON,
// the checksum taken over `run_id` followed by that rest.
std::string journal_line(const nlohmann::ordered_json& entry, const std::string& run_id);

struct JournalContents {
  // {"seq": 0, "journal": kJournalSchemaId, "run_id", "results_file", "started_at", "run"};
  // null when the journal holds no whole line (killed while an older build created it).
  nlohmann::ordered_json header;
  std::vector<nlohmann::ordered_json> devices;
  std::vector<nlohmann::ordered_json> records;
  // {"scenario", "case_key", "implementation", "signal" or "timeout_seconds"}
  std::vector<nlohmann::ordered_json> crashes;
  std::size_t entries = 0;  // whole entry lines (records, devices, crashes), numbered 1..entries
  bool torn_tail = false;   // the last line was cut short by a kill during its write, and ignored
};

// Reads a journal line by line (a results file's size bound applies). Throws
// InputError naming the file and line for each whole line (it ends in a
// newline) that is not a journal entry, fails its checksum, or is out of
// sequence, and for a first line that is not a header.
JournalContents read_journal(const std::string& path);

class JournalWriter {
 public:
  // Makes the journal beside `lock`'s file: `header` (which must hold "seq": 0
  // and the "run_id") is written to a temporary file, synced and renamed to
  // RESULTS.journal, replacing any journal there, and the directory is synced.
  // Throws FileWriteError.
  JournalWriter(const FileLock& lock, const nlohmann::ordered_json& header);
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  ~JournalWriter();

  // One line per entry, numbered on from the last, written at once and synced
  // to the disk. On an error the journal is cut back to its earlier length and
  // FileWriteError is thrown.
  void append(const std::vector<nlohmann::ordered_json>& entries);

  // Where a CrashNote writes: the descriptor, the run id its line's checksum
  // covers, and the sequence number the next line takes.
  int descriptor() const { return descriptor_; }
  const std::string& run_id() const { return run_id_; }
  std::uint64_t next_seq() const { return next_seq_; }

  // Closes and deletes the journal (its entries are in the results file), and
  // syncs the directory. Throws FileWriteError when it cannot be deleted.
  void remove();

  const std::string& path() const { return path_; }

 private:
  const FileLock& lock_;
  std::string path_;
  std::string run_id_;
  int descriptor_ = -1;
  off_t length_ = 0;
  std::uint64_t next_seq_ = 1;
};

}  // namespace attnbench
