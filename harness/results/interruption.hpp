// Signals that end `attnbench run`: SIGINT, SIGTERM, SIGHUP (the terminal
// closed) and SIGPIPE (the reader of its output went away: `run … | head`).
// While an InterruptGuard lives, the first of them wakes a watcher thread
// (named "signal-watcher") that calls `on_signal` (which saves what the run
// finished and says so) and then ends the process with 128 + the signal
// number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, 141 for SIGPIPE.
// The run's own thread is not disturbed, so a case being measured is simply
// abandoned. A second SIGINT, SIGTERM or SIGHUP ends the process at once (the
// default action); SIGPIPE is ignored from then on, so a message that cannot
// reach a closed pipe never stops the save. While installed, SIGXFSZ is
// ignored, so a file-size limit shows as a write error that names the file.
// The guard goes before the results file's lock is released: once it is
// gone, no signal makes this process write.
#pragma once

#include <functional>
#include <thread>

namespace attnbench {

// Installs, first thing in a program's main, what SIGINT, SIGTERM and SIGHUP do
// while no InterruptGuard lives (before a run starts recording, after it has
// finished, and in the commands that write files only by an atomic rename):
// print that there was nothing to save and end the process with 128 + the
// signal, instead of dying silently. An InterruptGuard takes the signals over
// while it lives and hands them back to these handlers.
void handle_interrupts_outside_runs();

class InterruptGuard {
 public:
  explicit InterruptGuard(std::function<void(int signal)> on_signal);
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  ~InterruptGuard();  // the previous handlers again; the watcher stopped

 private:
  std::function<void(int)> on_signal_;
  std::thread watcher_;
};

}  // namespace attnbench
