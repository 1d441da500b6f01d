#include "harness/common/kernel_activity.hpp"

#include <algorithm>
#include <unordered_map>

namespace attnbench {

std::uint64_t merged_length_ns(std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::uint64_t total = 0;
  std::uint64_t covered_to = 0;  // the end of the union so far
  bool any = false;
  for (const auto& [start, end] : intervals) {
    if (end <= start) continue;
    if (!any || start >= covered_to) {
      total += end - start;
      covered_to = end;
      any = true;
    } else if (end > covered_to) {
      total += end - covered_to;
      covered_to = end;
    }
  }
  return total;
}

std::map<std::uint64_t, SampleKernelTime> kernel_time_by_sample(const std::vector<KernelActivity>& kernels,
                                                                const std::vector<SampleCorrelation>& correlations) {
  std::unordered_map<std::uint32_t, std::uint64_t> sample_of;
  for (const SampleCorrelation& correlation : correlations) sample_of[correlation.correlation_id] = correlation.sample;
  std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> intervals;
  for (const KernelActivity& kernel : kernels) {
    const auto found = sample_of.find(kernel.correlation_id);
    if (found != sample_of.end()) intervals[found->second].emplace_back(kernel.start_ns, kernel.end_ns);
  }
  std::map<std::uint64_t, SampleKernelTime> times;
  for (const auto& [sample, spans] : intervals) {
    SampleKernelTime& time = times[sample];
    time.kernels = static_cast<int>(spans.size());
    time.seconds = static_cast<double>(merged_length_ns(spans)) * 1e-9;
    std::uint64_t first = spans.front().first, last = spans.front().second;
    for (const auto& [start, end] : spans) {
      first = std::min(first, start);
      last = std::max(last, end);
    }
    time.span_seconds = static_cast<double>(last - first) * 1e-9;
  }
  return times;
}

}  // namespace attnbench
