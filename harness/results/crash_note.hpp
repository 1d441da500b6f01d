// A crash while an implementation runs a case, noted in the run's journal. While
// a CrashNote lives, a fatal signal of the process (SIGSEGV, SIGBUS, SIGILL,
// SIGFPE, SIGABRT: a plug-in that crashes or aborts) first appends one line to
// the journal, {"crc32c", "seq", "crashed": {"scenario", "case_key",
// "implementation", "signal"}} with the sequence number and checksum every
// journal line carries (harness/results/journal.hpp), and then lets the
// signal take its course (the earlier handler, or the default: the process
// dies of it). `run --resume` records that case as failed instead of running
// it again (harness/results/output.hpp). A process killed by SIGKILL (or the
// machine stopping) leaves no note: its case simply runs again. The handler
// only completes and writes a line prepared before the case (adding the
// signal's digits to it and to its checksum), which is async-signal-safe.
#pragma once

#include <cstdint>
#include <string>

namespace attnbench {

class CrashNote {
 public:
  // Notes a crash of (scenario, case_key, implementation) in the journal open
  // as `journal_descriptor`, of run `run_id`, as its entry `seq` (the next).
  CrashNote(int journal_descriptor, const std::string& run_id, std::uint64_t seq, const std::string& scenario,
            const std::string& case_key, const std::string& implementation);
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
  ~CrashNote();  // no longer armed
};

}  // namespace attnbench
