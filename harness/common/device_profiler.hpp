// The interface of a device's profiler (docs/design.md §5) and what it
// reports: a backend that has hardware counters hands out a DeviceProfiler
// (harness/backend.hpp; the cuda backend's is CUPTI's Range Profiler,
// harness/cuda/cupti_profiler.hpp), which answers one probe and brackets one
// call in a profiling range. It sits on the floor because the Backend
// interface hands it out, while the profiling pass that uses it and the
// record it fills are the measure stage's (harness/measure/profiler.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnbench {

// The metrics every profiled record carries, in this order.
inline const std::vector<std::string>& profiler_metrics() {
  static const std::vector<std::string> metrics{"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
                                                "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"};
  return metrics;
}

struct ProfilerProbe {
  bool available = false;
  std::string reason;                                                 // why not (empty when available)
  std::string hint;                                                   // what would make it available (may be empty)
  nlohmann::ordered_json details = nlohmann::ordered_json::object();  // library, version, chip, passes
  nlohmann::ordered_json to_json() const;
};

// One profiling range: its name and the values of profiler_metrics(), in order.
struct ProfiledRange {
  std::string name;
  std::vector<double> values;
};

struct ProfileResult {
  std::string status = "ok";  // ok | unavailable | failed | skipped
  std::string reason;
  std::string hint;
  std::string profiler;  // e.g. "cupti.range_profiler"
  std::size_t passes = 0;
  std::vector<ProfiledRange> ranges;   // the user range around the call (one)
  std::vector<ProfiledRange> kernels;  // per kernel (auto range), when asked
  bool per_kernel_requested = false;
  nlohmann::ordered_json clocks;  // the device's clocks right after the range (null if not read)

  static ProfileResult not_collected(std::string status, std::string reason, std::string hint = {});
};

class DeviceProfiler {
 public:
  virtual ~DeviceProfiler() = default;
  // Computed once; it makes no profiler call on the device unless a usable
  // device exists.
  virtual const ProfilerProbe& probe() = 0;
  // `prepare` (outside the range: the L2 flush), then `call` (which waits for
  // its work) inside one range, repeated per pass; then, when `per_kernel`,
  // again with one range per kernel. Never throws for a profiler failure: the
  // result says "failed" with the reason.
  virtual ProfileResult profile(const std::function<void()>& prepare, const std::function<void()>& call,
                                bool per_kernel) = 0;
};

}  // namespace attnbench
