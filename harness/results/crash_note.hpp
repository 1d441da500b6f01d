// A crash while an implementation runs a case, noted in the run's journal. While
// a CrashNote lives, a fatal signal of the process (SIGSEGV, SIGBUS, SIGILL,
// SIGFPE, SIGABRT: a plug-in that crashes or aborts) first appends one line to
// the journal, {"crc32c", "seq", "crashed": {"scenario", "case_key",
// "implementation", "signal"}} with the sequence number and checksum every
// journal line carries (harness/results/journal.hpp), and then lets the
// signal take its course (the earlier handler, or the default: the process
// dies of it). Before that it prints to stderr which case and implementation
// died of which signal and how to go on (`--resume`). `run --resume` records
// that case as failed instead of running it again
// (harness/results/output.hpp). A process killed by SIGKILL (or the machine
// stopping) leaves no note: its case simply runs again. The handler only
// completes and writes a line and a message prepared before the case (adding
// the signal's digits and name), which is async-signal-safe.
//
// A call past the host call limit (harness/run/call_watchdog.hpp) is noted the
// same way, from the watchdog's thread, with "timeout_seconds" in place of
// "signal" (note_timeout), before the process restarts itself.
#pragma once

#include <cstdint>
#include <string>

namespace attnbench {

class CrashNote {
 public:
  // Notes a crash of (scenario, case_key, implementation) in the journal open
  // as `journal_descriptor`, of run `run_id`, as its entry `seq` (the next);
  // `results_path` is the results file the message names.
  CrashNote(int journal_descriptor, const std::string& run_id, std::uint64_t seq, const std::string& scenario,
            const std::string& case_key, const std::string& implementation, const std::string& results_path);
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
  ~CrashNote();  // no longer armed

  // Notes instead that a call of the case did not return within `limit_seconds`
  // (not from a signal handler), and disarms the note. Throws FileWriteError
  // when the line cannot be written.
  void note_timeout(double limit_seconds);

 private:
  int descriptor_;
  std::string run_id_, scenario_, case_key_, implementation_, results_path_;
  std::uint64_t seq_;
};

}  // namespace attnbench
