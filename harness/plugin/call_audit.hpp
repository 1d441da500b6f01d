// The checks of a CUDA plug-in's discipline around its checked call
// (include/attnbench/plugin.h: work only on the given stream, allocate no
// device memory of its own). The device side (stream capture, free memory) is
// a CallObserver the backend provides (harness/cuda/stream_capture.cpp); what
// the observations mean is decided here, without a device, so it is tested on
// any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

// A plug-in's callback reported an error (its message); the record fails with it.
class PluginCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one call enqueued on the backend's stream while the stream was being
// captured (CUDA stream capture: the work is recorded in a graph, never run).
struct StreamCapture {
  std::string capture_error;  // the capture itself failed or was invalidated; "" when it worked
  std::string call_error;     // the call reported an error while captured; "" when it did not
  std::size_t kernels = 0, copies = 0, memsets = 0, allocations = 0, other = 0;
  std::size_t nodes() const { return kernels + copies + memsets + allocations + other; }
};

// What a device can observe of calls made on its stream.
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  // Bytes of device memory free now (the whole device's, other processes included).
  virtual std::uint64_t free_memory() = 0;
  // Runs `call` with the backend's stream in capture mode and says what it
  // recorded. A PluginCallError from `call` is reported in the result; any
  // other exception ends the capture and propagates.
  virtual StreamCapture capture(const std::function<void()>& call) = 0;
};

// The verdicts of one audited call, recorded in the record's plugin.checks.
struct CallAudit {
  // "passed", "failed" (no work on the given stream: the record fails),
  // "inconclusive" (the capture could not tell) or "not_checked".
  std::string stream = "not_checked";
  std::string stream_detail;
  // Whether device memory was allocated outside the arena, and what showed it.
  bool allocated = false;
  std::string memory_detail;
  std::uint64_t free_bytes_before = 0, free_bytes_after = 0;
  nlohmann::ordered_json to_json() const;
  // The record's warnings: what makes its numbers incomplete.
  std::vector<std::string> warnings() const;
};

// A drop in free device memory at least this large over the checked call
// flags it (the driver maps memory in 2 MiB pages; smaller changes are noise).
inline constexpr std::uint64_t kAllocationFlagBytes = std::uint64_t{1} << 20;

// The stream verdict of one capture (sets audit.stream, stream_detail, and
// allocated when the capture recorded memory allocations).
void judge_stream_capture(const StreamCapture& capture, CallAudit& audit);
// The memory verdict of the free memory before and after the real call.
void judge_free_memory(std::uint64_t before, std::uint64_t after, CallAudit& audit);

// Captures `call` once (the stream check), then makes it for real between two
// readings of the free memory, each after `synchronize` (the memory check).
// The capture comes first, so that loading the plug-in's kernels on first use
// does not count as its allocation. Returns the verdicts; the caller fails the
// record when the stream check failed.
CallAudit audit_call(CallObserver& observer, const std::function<void()>& call,
                     const std::function<void()>& synchronize);

}  // namespace attnbench
