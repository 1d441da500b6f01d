#include "device_wait.hpp"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "harness/errors.hpp"
#include "harness/format.hpp"

namespace attnbench {

namespace {
std::atomic<bool> expired{false};
}  // namespace

bool device_wait_expired() { return expired.load(); }

std::chrono::duration<double> device_wait_limit() {
  if (const char* text = std::getenv("ATTNBENCH_DEVICE_WAIT_LIMIT")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end != text && *end == '\0' && seconds > 0) return std::chrono::duration<double>(seconds);
  }
  return kDefaultDeviceWaitLimit;
}

void wait_for_device(const std::function<DevicePoll()>& poll, std::chrono::duration<double> limit,
                     const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  while (poll() == DevicePoll::running) {
    const Clock::duration waited = Clock::now() - start;
    if (waited > limit) {
      expired.store(true);
      throw DeviceTimeout("the GPU did not finish " + what + " within " + format_seconds(limit.count()) +
                          " (ATTNBENCH_DEVICE_WAIT_LIMIT): a kernel that never ends, taken as a lost device");
    }
    if (waited < kSpinTime) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

}  // namespace attnbench
