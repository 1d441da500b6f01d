#include "harness/measure/timing_methods.hpp"

#include <algorithm>
#include <cmath>

#include "harness/format.hpp"
#include "harness/measure/statistics.hpp"

namespace attnbench {

std::vector<double> per_call_seconds(const std::vector<double>& graph_seconds, double flush_graph_seconds, int calls) {
  std::vector<double> per_call;
  per_call.reserve(graph_seconds.size());
  for (double seconds : graph_seconds) {
    per_call.push_back(std::max(0.0, seconds - flush_graph_seconds) / std::max(calls, 1));
  }
  return per_call;
}

std::string eviction_refusal(const std::string& what, std::uint64_t bytes_written, std::uint64_t cache_bytes) {
  if (cache_bytes == 0 || bytes_written >= 2 * cache_bytes) return "";
  return what + " writes " + format_bytes(static_cast<double>(bytes_written)) + " between calls, less than twice the " +
         format_bytes(static_cast<double>(cache_bytes)) +
         " last-level cache: part of the inputs could stay cached, so the samples would not be cold";
}

ClockMarks mark_clocks(const std::vector<std::optional<double>>& sm_mhz, double run_highest_mhz, double share) {
  ClockMarks marks;
  marks.highest_mhz = run_highest_mhz;
  for (const std::optional<double>& mhz : sm_mhz) {
    if (!mhz) continue;
    ++marks.read;
    marks.highest_mhz = std::max(marks.highest_mhz, *mhz);
  }
  marks.threshold_mhz = share * marks.highest_mhz;
  for (std::size_t i = 0; i < sm_mhz.size(); ++i) {
    if (sm_mhz[i] && *sm_mhz[i] < marks.threshold_mhz) marks.marked.push_back(i);
  }
  return marks;
}

nlohmann::ordered_json ClockMarks::to_json(double share) const {
  if (read == 0) return nullptr;
  return nlohmann::ordered_json{{"share", share},
                                {"highest_mhz", highest_mhz},
                                {"threshold_mhz", threshold_mhz},
                                {"marked", marked},
                                {"read", read}};
}

std::string ClockMarks::warning(const std::vector<std::optional<double>>& sm_mhz) const {
  double lowest = highest_mhz;
  for (std::size_t index : marked) lowest = std::min(lowest, *sm_mhz[index]);
  return std::to_string(marked.size()) + " of " + std::to_string(read) + " samples ran below " +
         format_fixed(threshold_mhz, 0) + " MHz (the run's highest SM clock " + format_fixed(highest_mhz, 0) +
         " MHz); the lowest at " + format_fixed(lowest, 0) + " MHz: throttled";
}

void add_clock_marks(ThrottleVerdict& verdict, const ClockMarks& marks, const std::vector<std::optional<double>>& sm_mhz) {
  if (marks.read == 0) return;
  if (marks.throttled()) {
    verdict.warnings.push_back(marks.warning(sm_mhz));
    verdict.throttled = true;
  } else if (verdict.throttled.is_null()) {
    verdict.throttled = false;
  }
}

std::optional<double> launch_overhead_seconds(const std::vector<double>& events_seconds,
                                              const std::vector<double>& kernel_seconds) {
  if (events_seconds.empty() || events_seconds.size() != kernel_seconds.size()) return std::nullopt;
  std::vector<double> differences;
  for (std::size_t i = 0; i < events_seconds.size(); ++i) differences.push_back(events_seconds[i] - kernel_seconds[i]);
  return median_of(differences);
}

}  // namespace attnbench
