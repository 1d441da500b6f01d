// Canaries around every buffer of the checked call, and its inputs compared
// with the host's copy after it: a call that writes outside the buffers it was
// given, or into its inputs, fails its record with a message naming the buffer
// and the side (`guard check: 256 bytes written past the end of LSE …`),
// instead of going unnoticed or being blamed on the neighbouring buffer.
//
// Before the checked call, every guard zone of the arena (harness/backend.hpp:
// one before the first buffer and one after each) is filled with a canary;
// after it, each zone is read back and the inputs (Q, K, V, dO) are compared
// byte for byte with the host inputs they were copied from. Only the checked
// call is guarded: the timed samples run on the same buffers with nothing
// added. On a device the zones and inputs are copied to the host to be checked.
#pragma once

#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/implementation.hpp"
#include "harness/measure/inputs.hpp"

namespace attnbench {

class BufferGuards {
 public:
  // Fills every guard zone of `arena` with the canary.
  BufferGuards(Backend& backend, const DeviceArena& arena);

  // After the call (its work finished): one sentence per zone written or input
  // changed, e.g. "256 bytes written past the end of O (bytes 0 to 255 after
  // its last element, in the guard zone before LSE)"; empty when none was.
  std::vector<std::string> violations(const AttentionBuffers& buffers, const HostInputs& inputs) const;

 private:
  Backend& backend_;
  std::vector<DeviceArena::GuardZone> zones_;
};

}  // namespace attnbench
