// The kernel time of a sample from CUPTI's activity records (timing "cupti",
// docs/design.md §4): the kernels each sampled call launched, found through
// the external correlation id the harness pushed around that call, their
// intervals merged. Host logic only, so the rules are tested on the CPU; the
// cuda backend (harness/cuda/cupti_activity.hpp) feeds it the records.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace attnbench {

// One kernel as CUPTI's concurrent-kernel activity record gives it: its start
// and end on the device's clock (ns), and the correlation id of the API call
// that launched it.
struct KernelActivity {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t correlation_id = 0;
};

// An external-correlation record: the API call `correlation_id` was made while
// the harness had pushed `sample` (the sampled call's own id) for it.
struct SampleCorrelation {
  std::uint32_t correlation_id = 0;
  std::uint64_t sample = 0;
};

// The length of the union of [start, end) intervals: overlapping and nested
// intervals count once, the gaps between them not at all.
std::uint64_t merged_length_ns(std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals);

struct SampleKernelTime {
  double seconds = 0;      // the merged intervals of the sample's kernels
  int kernels = 0;         // how many kernels it launched
  double span_seconds = 0; // first start to last end (gaps between kernels included)
};

// Per sample id, the kernel time of the kernels launched by its calls. A
// kernel whose correlation id no SampleCorrelation names was launched outside
// every sampled call (the L2 flush, the output poisoning, copies) and counts
// for none.
std::map<std::uint64_t, SampleKernelTime> kernel_time_by_sample(const std::vector<KernelActivity>& kernels,
                                                                const std::vector<SampleCorrelation>& correlations);

}  // namespace attnbench
