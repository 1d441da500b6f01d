#include "harness/measure/profiler.hpp"

#include <algorithm>
#include <set>

#include "harness/format.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

Json metrics_json(const ProfiledRange& range) {
  Json metrics = Json::object();
  const auto& names = profiler_metrics();
  for (std::size_t i = 0; i < names.size() && i < range.values.size(); ++i) metrics[names[i]] = range.values[i];
  return metrics;
}

// DRAM bytes read and written: the first two metrics.
void add_bytes(Json& json, const ProfiledRange& range) {
  json["read_bytes"] = range.values.size() > 0 ? range.values[0] : 0.0;
  json["write_bytes"] = range.values.size() > 1 ? range.values[1] : 0.0;
}

}  // namespace

Json measured_traffic_json(const ProfileResult& result) {
  Json json{{"status", result.status}, {"reason", result.reason}};
  if (!result.hint.empty()) json["hint"] = result.hint;
  if (!result.profiler.empty()) json["profiler"] = result.profiler;
  if (result.status != "ok") return json;
  if (result.ranges.empty()) {
    json["status"] = "failed";
    json["reason"] = "the profiler returned no range";
    return json;
  }
  json["passes"] = result.passes;
  add_bytes(json, result.ranges.front());
  json["metrics"] = metrics_json(result.ranges.front());
  if (result.per_kernel_requested) {
    json["kernels"] = Json::array();
    for (const ProfiledRange& kernel : result.kernels) {
      Json entry{{"range", kernel.name}};
      add_bytes(entry, kernel);
      entry["metrics"] = metrics_json(kernel);
      json["kernels"].push_back(entry);
    }
  } else {
    json["kernels"] = nullptr;
  }
  json["clocks"] = result.clocks;
  return json;
}

bool is_throttling_reason(const std::string& reason) {
  static const std::set<std::string> throttling{"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
                                                "hw_thermal_slowdown", "hw_power_brake_slowdown"};
  return throttling.count(reason) > 0;
}

ThrottleVerdict judge_throttling(const Json& before, const Json& after) {
  ThrottleVerdict verdict;
  const auto monitored = [](const Json& snapshot) {
    return snapshot.is_object() && snapshot.contains("sm_mhz") && snapshot["sm_mhz"].is_number();
  };
  if (!monitored(before) || !monitored(after)) {
    verdict.throttled = nullptr;
    return verdict;
  }
  // A clock read while the GPU already idles after the samples says nothing
  // about the samples: only a busy GPU's lower clock counts as a drop.
  const bool idle_after = after.contains("throttle_reasons") && after["throttle_reasons"].is_array() &&
                          std::find(after["throttle_reasons"].begin(), after["throttle_reasons"].end(),
                                    Json("gpu_idle")) != after["throttle_reasons"].end();
  for (const char* clock : {"sm_mhz", "memory_mhz"}) {
    if (idle_after) break;
    if (!before.contains(clock) || !after.contains(clock) || !before[clock].is_number() || !after[clock].is_number()) {
      continue;
    }
    const double from = before[clock].get<double>(), to = after[clock].get<double>();
    if (to < 0.95 * from) {
      verdict.warnings.push_back(std::string(clock == std::string("sm_mhz") ? "SM" : "memory") +
                                 " clock dropped from " + format_fixed(from, 0) + " MHz to " + format_fixed(to, 0) +
                                 " MHz during the measurement");
    }
  }
  std::set<std::string> reasons;
  for (const Json* snapshot : {&before, &after}) {
    if (!snapshot->contains("throttle_reasons") || !(*snapshot)["throttle_reasons"].is_array()) continue;
    for (const auto& reason : (*snapshot)["throttle_reasons"]) {
      if (reason.is_string() && is_throttling_reason(reason.get<std::string>()))
        reasons.insert(reason.get<std::string>());
    }
  }
  if (!reasons.empty()) {
    std::string list;
    for (const auto& reason : reasons) list += (list.empty() ? "" : ", ") + reason;
    verdict.warnings.push_back("clocks throttled (" + list + ") around the measurement");
  }
  verdict.throttled = !verdict.warnings.empty();
  return verdict;
}

}  // namespace attnbench
