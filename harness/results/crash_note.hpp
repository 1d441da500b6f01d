// A crash while an implementation runs a case, noted in the run's journal. While
// a CrashNote lives, a fatal signal of the process (SIGSEGV, SIGBUS, SIGILL,
// SIGFPE, SIGABRT: a plug-in that crashes or aborts) first appends one line to
// the journal, {"crashed": {"scenario", "case_key", "implementation",
// "signal"}}, and then lets the signal take its course (the earlier handler,
// or the default: the process dies of it). `run --resume` records that case
// as failed instead of running it again (harness/results/output.hpp). A
// process killed by SIGKILL (or the machine stopping) leaves no note: its case
// simply runs again. The handler only writes a line prepared before the case,
// which is async-signal-safe.
#pragma once

#include <string>

namespace attnbench {

class CrashNote {
 public:
  // Notes a crash of (scenario, case_key, implementation) in the journal open as `journal_descriptor`.
  CrashNote(int journal_descriptor, const std::string& scenario, const std::string& case_key,
            const std::string& implementation);
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
  ~CrashNote();  // no longer armed
};

}  // namespace attnbench
