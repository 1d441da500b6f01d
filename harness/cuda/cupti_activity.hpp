// The kernel timer of timing "cupti" (docs/design.md §4): CUPTI's activity
// records of the concurrent-kernel kind give each kernel's start and end on
// the device. Every sample pushes its own external correlation id around the
// sampled call, so the API calls of that call, and only they, are tied to it:
// the harness's own work (the L2 flush, the poisoning, copies) happens
// outside every push and is excluded by construction, whatever its kernels
// are named. After the call, outside the timed region, the activity buffers
// are flushed and the sample's kernel intervals merged
// (harness/common/kernel_activity.hpp); the events time of the same call is
// kept beside it.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "harness/backend.hpp"

namespace attnbench {

// Why CUPTI's activity API cannot be used here, or "" when it can.
std::string cupti_activity_unavailable();

// `events` times the same calls with CUDA events (its time is
// last_events_seconds()); a sample's time is its kernels' merged time.
std::unique_ptr<SampleTimer> make_cupti_kernel_timer(std::unique_ptr<SampleTimer> events);

// What the activity records cost a launch: `launches` calls of `launch`
// (one empty kernel each) timed by `events` without and then with the
// kernel timer, the median of `repeats` rounds each.
nlohmann::ordered_json measure_cupti_cost(const std::function<std::unique_ptr<SampleTimer>()>& make_events_timer,
                                          const std::function<void()>& launch, int launches = 100, int repeats = 5);

}  // namespace attnbench
