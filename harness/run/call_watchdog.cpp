#include "harness/run/call_watchdog.hpp"

#include "harness/measure/openmp_threads.hpp"

namespace attnbench {

CallWatchdog::CallWatchdog(std::function<void(const std::string&, double)> on_expiry)
    : on_expiry_(std::move(on_expiry)) {}

CallWatchdog::~CallWatchdog() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CallWatchdog::arm(std::string what, double limit_seconds) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    what_ = std::move(what);
    limit_seconds_ = limit_seconds;
    limit_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_seconds));
    deadline_.store((Clock::now() + limit_).time_since_epoch().count());
    armed_ = true;
    if (!thread_.joinable()) thread_ = start_named_thread("call-watchdog", [this] { watch(); });  // named for tools and tests
  }
  wake_.notify_all();
}

void CallWatchdog::beat() { deadline_.store((Clock::now() + limit_).time_since_epoch().count()); }

void CallWatchdog::disarm() {
  std::lock_guard<std::mutex> guard(mutex_);
  armed_ = false;
}

void CallWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    const Clock::time_point deadline{Clock::duration(deadline_.load())};
    if (Clock::now() < deadline) {
      // A beat moves the deadline later without waking this thread: it looks again then.
      wake_.wait_until(lock, deadline);
      continue;
    }
    on_expiry_(what_, limit_seconds_);
    armed_ = false;
  }
}

CallWatchdog::Scope::Scope(CallWatchdog* watchdog, std::string what, double limit_seconds)
    : watchdog_(limit_seconds > 0 ? watchdog : nullptr) {
  if (watchdog_) watchdog_->arm(std::move(what), limit_seconds);
}

CallWatchdog::Scope::~Scope() {
  if (watchdog_) watchdog_->disarm();
}

void CallWatchdog::Scope::beat() const {
  if (watchdog_) watchdog_->beat();
}

}  // namespace attnbench
