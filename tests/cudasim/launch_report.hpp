// What the simulator's tests of right and wrong kernels read from a launch:
// the sanitizer's report ("" for a clean run). The kernels under tests/cudasim/
// return cudaGetLastError() after their launch, and a finding comes back as an
// attnbench::DeviceError.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "harness/errors.hpp"

namespace cudasim_test {

// Runs `launch`; its finding's text, or "" when it ran clean (a non-zero
// status without a finding fails the test).
inline std::string report_of(const std::function<int()>& launch) {
  try {
    EXPECT_EQ(launch(), 0);
  } catch (const attnbench::DeviceError& error) {
    return error.what();
  }
  return {};
}

}  // namespace cudasim_test
