// What the warpgroups of the simulated kernels did and in which order, for
// tests that check a kernel's schedule rather than its results: whether its
// exponentials ran while a wgmma-group of the same warpgroup was in flight
// (the softmax overlapping a product), and the order of the CTA's wgmma
// commits by warpgroup (the consumers taking turns). Recorded only while a
// ScheduleTrace is alive; one at a time.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace cudasim {

class ScheduleTrace {
 public:
  ScheduleTrace();
  ~ScheduleTrace();
  ScheduleTrace(const ScheduleTrace&) = delete;
  ScheduleTrace& operator=(const ScheduleTrace&) = delete;

  // ex2.approx executed by simulated threads, and those of them executed while
  // the thread's warpgroup had a committed wgmma-group that no
  // wgmma.wait_group had yet covered.
  std::uint64_t exponentials() const;
  std::uint64_t exponentials_beside_wgmma() const;
  // Per CTA (its linear index in the grid): the warpgroup of each
  // wgmma.commit_group, in the order they ran.
  std::map<std::uint64_t, std::vector<int>> commits_by_cta() const;
};

// The simulator's side: called by ex2.approx and wgmma.commit_group.
void trace_exponential(bool beside_wgmma);
void trace_wgmma_commit(std::uint64_t cta, int warpgroup);
bool schedule_traced();

}  // namespace cudasim
