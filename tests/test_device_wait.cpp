// The limited wait for a GPU (harness/cuda/device_wait.hpp), with polls that
// stand in for cudaStreamQuery: work that finishes ends the wait, work that
// never does fails it as a lost device once the limit has passed, an error
// from the poll propagates, and ATTNBENCH_DEVICE_WAIT_LIMIT sets the limit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "harness/cuda/device_wait.hpp"
#include "harness/errors.hpp"

namespace attnbench {
namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

TEST(DeviceWait, ReturnsOnceTheWorkFinishes) {
  int polls = 0;
  wait_for_device([&] { return ++polls < 5 ? DevicePoll::running : DevicePoll::finished; }, Seconds(10),
                  "the test's work");
  EXPECT_EQ(polls, 5);
}

TEST(DeviceWait, FinishedWorkIsPolledOnce) {
  int polls = 0;
  wait_for_device([&] { return ++polls, DevicePoll::finished; }, Seconds(10), "the test's work");
  EXPECT_EQ(polls, 1);
}

TEST(DeviceWait, WorkThatNeverEndsIsALostDeviceOnceTheLimitHasPassed) {
  int polls = 0;
  const Clock::time_point start = Clock::now();
  try {
    wait_for_device([&] { return ++polls, DevicePoll::running; }, Seconds(0.08), "the stuck kernel");
    FAIL() << "the wait returned";
  } catch (const DeviceError& error) {
    const Seconds waited = Clock::now() - start;
    EXPECT_TRUE(error.context_lost());
    const std::string message = error.what();
    EXPECT_NE(message.find("the stuck kernel"), std::string::npos) << message;
    EXPECT_NE(message.find("80.00 ms"), std::string::npos) << message;
    EXPECT_NE(message.find("ATTNBENCH_DEVICE_WAIT_LIMIT"), std::string::npos) << message;
    EXPECT_GE(waited.count(), 0.08);
    EXPECT_LT(waited.count(), 5.0);
  }
  // Past the spinning, one poll per interval, not a busy loop: far fewer polls
  // than the 60 ms past kSpinTime would allow at one per microsecond.
  EXPECT_GT(polls, 1);
  EXPECT_LT(polls, 60000);
  EXPECT_TRUE(device_wait_expired());  // the backend frees nothing more in this process
}

TEST(DeviceWait, AnErrorFromThePollPropagates) {
  int polls = 0;
  EXPECT_THROW(wait_for_device(
                   [&]() -> DevicePoll {
                     if (++polls == 3) throw DeviceError("cudaStreamQuery failed: cudaErrorIllegalAddress", true);
                     return DevicePoll::running;
                   },
                   Seconds(10), "the test's work"),
               DeviceError);
  EXPECT_EQ(polls, 3);
}

TEST(DeviceWait, TheVariableSetsTheLimitAndAnythingButAPositiveNumberLeavesTheDefault) {
  const char* saved = std::getenv("ATTNBENCH_DEVICE_WAIT_LIMIT");
  const std::string previous = saved ? saved : "";
  unsetenv("ATTNBENCH_DEVICE_WAIT_LIMIT");
  EXPECT_EQ(device_wait_limit().count(), Seconds(kDefaultDeviceWaitLimit).count());
  setenv("ATTNBENCH_DEVICE_WAIT_LIMIT", "30", 1);
  EXPECT_EQ(device_wait_limit().count(), 30.0);
  setenv("ATTNBENCH_DEVICE_WAIT_LIMIT", "2.5", 1);
  EXPECT_EQ(device_wait_limit().count(), 2.5);
  for (const char* bad : {"", "0", "-3", "ten", "30s"}) {
    setenv("ATTNBENCH_DEVICE_WAIT_LIMIT", bad, 1);
    EXPECT_EQ(device_wait_limit().count(), Seconds(kDefaultDeviceWaitLimit).count()) << '"' << bad << '"';
  }
  if (saved) {
    setenv("ATTNBENCH_DEVICE_WAIT_LIMIT", previous.c_str(), 1);
  } else {
    unsetenv("ATTNBENCH_DEVICE_WAIT_LIMIT");
  }
}

}  // namespace
}  // namespace attnbench
