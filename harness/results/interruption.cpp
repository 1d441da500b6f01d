#include "harness/results/interruption.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "harness/errors.hpp"
#include "harness/measure/openmp_threads.hpp"

namespace attnbench {

namespace {

// The handler can only do async-signal-safe things: it hands the signal number
// to the watcher through a pipe. One guard at a time owns these.
int signal_pipe[2] = {-1, -1};
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
struct sigaction previous_actions[std::size(kStopSignals)], previous_file_size;

void forward_signal(int signal) {
  // The next SIGINT, SIGTERM or SIGHUP takes the default action: a second
  // Ctrl-C ends the process even while the first one's save is under way. A
  // broken pipe is ignored from now on: the save goes on, and its message
  // simply does not reach a reader that is gone.
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGHUP, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
  const int saved_errno = errno;
  const unsigned char number = static_cast<unsigned char>(signal);
  const ssize_t written = write(signal_pipe[1], &number, 1);
  static_cast<void>(written);
  errno = saved_errno;
}

constexpr unsigned char kStopWatcher = 0;

// Async-signal-safe: fixed texts through write(2), then _exit.
void interrupted_outside_a_run(int signal) {
  const char* name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP";
  const auto say = [](const char* text) {
    const ssize_t written = write(STDERR_FILENO, text, std::strlen(text));
    static_cast<void>(written);
  };
  say("attnbench: interrupted (");
  say(name);
  say(") while no run was recording: nothing to save, nothing left half-written\n");
  _exit(kExitSignalBase + signal);
}

}  // namespace

void handle_interrupts_outside_runs() {
  struct sigaction action {};
  action.sa_handler = interrupted_outside_a_run;
  sigemptyset(&action.sa_mask);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

InterruptGuard::InterruptGuard(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  if (pipe2(signal_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot watch for signals: ") + std::strerror(errno));
  }
  watcher_ = start_named_thread("signal-watcher", [this] {  // how tools and tests tell it apart
    unsigned char number = kStopWatcher;
    while (read(signal_pipe[0], &number, 1) < 0 && errno == EINTR) {
    }
    if (number == kStopWatcher) return;
    on_signal_(number);
    std::fflush(nullptr);
    std::_Exit(kExitSignalBase + number);
  });
  struct sigaction action {};
  action.sa_handler = forward_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &action, &previous_actions[i]);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, &previous_file_size);
}

InterruptGuard::~InterruptGuard() {
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &previous_actions[i], nullptr);
  sigaction(SIGXFSZ, &previous_file_size, nullptr);
  const ssize_t written = write(signal_pipe[1], &kStopWatcher, 1);
  static_cast<void>(written);
  watcher_.join();
  close(signal_pipe[0]);
  close(signal_pipe[1]);
  signal_pipe[0] = signal_pipe[1] = -1;
}

}  // namespace attnbench
