// The profiling pass of docs/design.md §5, independent of the device: what a
// backend's DeviceProfiler (harness/common/device_profiler.hpp) collected
// becomes the results record's traffic.measured here, so the record's shape
// does not depend on the profiler. Clock snapshots and the throttling verdict
// of a record live here too.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/common/device_profiler.hpp"

namespace attnbench {

// traffic.measured of the results record: status and reason; when ok, DRAM
// read and write bytes as read_bytes / write_bytes (the fields every other
// traffic entry uses), every metric by name, the passes, the per-kernel list
// (null unless asked) and the clocks.
nlohmann::ordered_json measured_traffic_json(const ProfileResult& result);

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
