// SIGINT and SIGTERM during `attnbench run`. While an InterruptGuard lives, the
// first of them wakes a watcher thread (named "signal-watcher") that calls
// `on_signal` (which saves what the run finished and says so) and then ends
// the process with 128 + the signal
// number: 130 for SIGINT, 143 for SIGTERM. The run's own thread is not
// disturbed, so a case being measured is simply abandoned. A second signal ends
// the process at once (the default action). While installed, SIGXFSZ is
// ignored, so a file-size limit shows as a write error that names the file.
#pragma once

#include <functional>
#include <thread>

namespace attnbench {

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
