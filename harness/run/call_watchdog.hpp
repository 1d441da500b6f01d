// A time limit on the calls of host implementations (built-in or plug-in), as
// the GPU has one on its waits (harness/cuda/device_wait.hpp). A call on the
// host cannot be stopped from outside, so a watchdog thread watches it: the run
// arms it before a stretch of calls (the set-up with its callbacks, the checked
// call, the timed calls), beats it after each call, and disarms it after the
// stretch; when `limit` passes with no beat, the watchdog calls `on_expiry`,
// which notes the timeout in the run's journal and restarts the process with
// --resume (harness/run/runner.cpp), whose exit ends the stuck call. A beat is
// one atomic store, made between calls, never inside a timed sample.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace attnbench {

// The default of `run --call-limit`: longer than any single call the built-in
// host implementations make on the shapes a host can hold.
inline constexpr double kDefaultCallLimitSeconds = 600;

class CallWatchdog {
 public:
  // `on_expiry(what, limit_seconds)` runs on the watchdog's thread while the
  // watchdog holds its lock, so a disarm() waits for it; it is not expected to
  // return (it restarts the process), and when it does, the watchdog disarms.
  explicit CallWatchdog(std::function<void(const std::string& what, double limit_seconds)> on_expiry);
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;
  ~CallWatchdog();

  // Starts watching `what` (what the message names), `limit_seconds` from now.
  void arm(std::string what, double limit_seconds);
  // A call finished: the limit starts again from now.
  void beat();
  void disarm();

  // Armed while it lives (with no watchdog, or a limit of 0, nothing is watched).
  class Scope {
   public:
    Scope(CallWatchdog* watchdog, std::string what, double limit_seconds);
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();
    void beat() const;

   private:
    CallWatchdog* watchdog_;
  };

 private:
  using Clock = std::chrono::steady_clock;
  void watch();

  std::function<void(const std::string&, double)> on_expiry_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false, stopping_ = false;
  std::string what_;
  double limit_seconds_ = 0;
  Clock::duration limit_{};
  std::atomic<Clock::rep> deadline_{0};  // Clock ticks since its epoch
  std::thread thread_;                   // started by the first arm()
};

}  // namespace attnbench
