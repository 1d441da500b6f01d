// The journal of a run (RESULTS.journal): what the run finished since it last
// wrote the results file, as JSON lines. The first line is a header naming the
// run; each later line is one entry, {"record": {...}} or {"device": {...}},
// or {"crashed": {"scenario", "case_key", "implementation", "signal"}}, written
// by a fatal-signal handler when the process crashed in a case
// (harness/results/crash_note.hpp).
// A case's lines go out in one write followed by fdatasync, so the cost of
// saving a case does not grow with the run, and a kill — even kill -9 — loses
// no finished case: at worst the last line is cut short, and a reader ignores
// such a line. docs/results.md describes the format and when it is folded into
// the results file.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

inline constexpr const char* kJournalSchemaId = "attnbench.journal/1";

std::string journal_path(const std::string& results_path);  // RESULTS.journal

struct JournalContents {
  nlohmann::ordered_json header;  // {"journal": kJournalSchemaId, "results_file", "started_at", "run"}
  std::vector<nlohmann::ordered_json> devices;
  std::vector<nlohmann::ordered_json> records;
  std::vector<nlohmann::ordered_json> crashes;  // {"scenario", "case_key", "implementation", "signal"}
  bool torn_tail = false;  // the last line was cut short by a kill during its write, and ignored
};

// Reads a journal. Throws InputError naming the file and line for a line that
// is whole (it ends in a newline) yet is not a journal entry, or a missing header.
JournalContents read_journal(const std::string& path);

class JournalWriter {
 public:
  // Creates (or empties) the journal at `path` and writes `header`'s line.
  // Throws FileWriteError.
  JournalWriter(std::string path, const nlohmann::ordered_json& header);
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  ~JournalWriter();

  // One line per entry, written at once and synced to the disk. On an error the
  // journal is cut back to its earlier length and FileWriteError is thrown.
  void append(const std::vector<nlohmann::ordered_json>& entries);

  // Where a CrashNote writes.
  int descriptor() const { return descriptor_; }

  // Closes and deletes the journal (its entries are in the results file).
  void remove();

  const std::string& path() const { return path_; }

 private:
  void append_lines(const std::string& lines);

  std::string path_;
  int descriptor_ = -1;
  off_t length_ = 0;
};

}  // namespace attnbench
