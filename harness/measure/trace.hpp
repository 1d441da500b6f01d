// Named ranges for timeline tools (NVTX, domain "attnbench"): per case,
// implementation and phase (setup, check, warm-up, timing, profiling), so a Nsight trace of
// a run reads like the run. Without NVTX in the build the ranges cost nothing.
#pragma once

#include <string>

namespace attnbench {

class TraceRange {
 public:
  explicit TraceRange(const std::string& name);
  ~TraceRange();
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};

}  // namespace attnbench
