// Waiting for a GPU with a limit. A kernel that never ends (a deadlock on its
// barriers, which a kernel's first run on hardware is where it would show)
// would otherwise hold `attnbench run` for good, and with it every case after
// it. The "cuda" backend waits for its stream and its timing events through
// wait_for_device: past the limit the wait throws a DeviceTimeout, a DeviceError
// that counts as a lost device context, so the case is recorded as failed with
// the reason, the finished records are saved, and the run continues in a new
// process (harness/run/runner.hpp), whose exit ends the hung kernel; that
// implementation's later cases are recorded as failed without being run, each
// of which would likely hang as long. Until the restart the kernel still runs,
// and anything that waits for the device (cudaFree does) would hang in its
// turn: once a wait has expired, the backend frees nothing more
// (device_wait_expired) and leaves that to the restart.
//
// Host-only, so that it is tested without a GPU (tests/test_device_wait.cpp).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace attnbench {

enum class DevicePoll { finished, running };

// The limit: ATTNBENCH_DEVICE_WAIT_LIMIT seconds (a positive number), else
// kDefaultDeviceWaitLimit, longer than any call the harness makes, even the
// largest --memory-only one; scripts/device-check.sh sets a short one.
inline constexpr std::chrono::seconds kDefaultDeviceWaitLimit{600};
std::chrono::duration<double> device_wait_limit();

// Calls `poll` until it answers finished (an error in it propagates): at once,
// then yielding between calls for the first kSpinTime, then every
// kPollInterval. Past `limit`, throws DeviceTimeout saying that `what` did not
// finish within it.
inline constexpr std::chrono::milliseconds kSpinTime{20};
inline constexpr std::chrono::microseconds kPollInterval{500};
void wait_for_device(const std::function<DevicePoll()>& poll, std::chrono::duration<double> limit,
                     const std::string& what);

// Whether a wait of this process has expired.
bool device_wait_expired();

}  // namespace attnbench
