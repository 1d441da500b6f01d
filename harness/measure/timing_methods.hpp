// The host logic of the timing methods (docs/design.md §4), apart from any
// device so that every rule is tested on the CPU: the time per call of a
// CUDA graph less its flushes, the refusal of a cold mode that cannot evict,
// the clock marks of the samples with the throttling verdict they give, and
// the launch overhead of timing "cupti" (whose kernel time
// harness/common/kernel_activity.hpp gives).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/measure/profiler.hpp"

namespace attnbench {

// Graph timing: each launch of a graph of `calls` calls took graph_seconds[i];
// a graph of the same shape holding only the flushes (none when hot) took
// flush_graph_seconds (its median). The time per call of each sample.
std::vector<double> per_call_seconds(const std::vector<double>& graph_seconds, double flush_graph_seconds, int calls);

// Why a cold mode that writes `bytes_written` between calls cannot evict a
// last-level cache of `cache_bytes` (less than twice its size: part of the
// inputs may stay cached, and a "cold" time would be a warm one), or "" when
// it can. `what` names the mode ("the L2 flush", "a rotation of 3 input sets").
std::string eviction_refusal(const std::string& what, std::uint64_t bytes_written, std::uint64_t cache_bytes);

// The SM clock of each sample (nullopt where it could not be read) against
// the run's highest clock: a sample below share x highest is marked.
struct ClockMarks {
  std::vector<std::size_t> marked;  // indices into the samples
  std::size_t read = 0;             // samples whose clock was read
  double highest_mhz = 0;           // the run's highest, this record's samples included
  double threshold_mhz = 0;
  bool throttled() const { return !marked.empty(); }
  // {"share", "highest_mhz", "threshold_mhz", "marked", "read"}; null where no clock was read.
  nlohmann::ordered_json to_json(double share) const;
  // The warning of a throttled record, naming the marked samples' count and lowest clock.
  std::string warning(const std::vector<std::optional<double>>& sm_mhz) const;
};
ClockMarks mark_clocks(const std::vector<std::optional<double>>& sm_mhz, double run_highest_mhz, double share);

// The throttling verdict of the clocks before and after the samples
// (judge_throttling) joined with the marks: marked samples make the record
// throttled, with the marks' warning; clocks read per sample make a verdict
// where the snapshots gave none.
void add_clock_marks(ThrottleVerdict& verdict, const ClockMarks& marks, const std::vector<std::optional<double>>& sm_mhz);

// Timing "cupti": the launch overhead of the samples, the median of each
// sample's events time less its kernel time; nullopt without events times.
std::optional<double> launch_overhead_seconds(const std::vector<double>& events_seconds,
                                              const std::vector<double>& kernel_seconds);

}  // namespace attnbench
