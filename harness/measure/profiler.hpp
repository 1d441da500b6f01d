// The profiling pass of docs/design.md §5, independent of the device: a
// backend that has hardware counters hands out a DeviceProfiler (the cuda
// backend: CUPTI's Range Profiler, harness/cuda/cupti_profiler.hpp). It
// answers one probe (available, or why not and what would help) and brackets
// one call in a profiling range, the L2 flush outside it. The results record's
// traffic.measured is built here from what it collected, so the record's shape
// does not depend on the profiler. Clock snapshots and the throttling verdict
// of a record live here too.
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

// traffic.measured of the results record: status and reason; when ok, DRAM
// read and write bytes as read_bytes / write_bytes (the fields every other
// traffic entry uses), every metric by name, the passes, the per-kernel list
// (null unless asked) and the clocks.
nlohmann::ordered_json measured_traffic_json(const ProfileResult& result);

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

// ---- clocks --------------------------------------------------------------------

// Whether a record's clocks dropped during its measurement, from snapshots
// {"sm_mhz", "memory_mhz", "throttle_reasons": [...]} taken before and after
// (null snapshots: not monitored): a clock more than 5% lower after than before
// (unless the GPU already idles after), or a power, thermal or slowdown
// throttle reason in either. `warnings` gets one sentence per cause.
struct ThrottleVerdict {
  nlohmann::ordered_json throttled;  // true, false, or null when nothing was monitored
  std::vector<std::string> warnings;
};
ThrottleVerdict judge_throttling(const nlohmann::ordered_json& before, const nlohmann::ordered_json& after);

// Throttle reasons that mean the clocks were lowered by power, heat or a
// slowdown signal (not idling or an application clock setting).
bool is_throttling_reason(const std::string& reason);

}  // namespace attnbench
