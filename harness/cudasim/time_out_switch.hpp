// Whether an mbarrier.try_wait whose phase is still incomplete first returns
// false, as the hardware's does when its time limit runs out (PTX ISA
// 9.7.13.15.16), before the thread's next try_wait waits for the phase. Off by
// default, when the simulator suspends the thread until the phase completes;
// ATTNBENCH_CUDASIM_EARLY_TIME_OUTS=1 (or "on") turns it on for a run, and tests
// may set it. A kernel that takes one try_wait for a completed wait then reads
// what the phase has not delivered, which the sanitizer reports.
#pragma once

namespace cudasim {

bool early_time_outs_enabled();
void set_early_time_outs_enabled(bool enabled);

// Early time-outs on for a scope (a test's), restored to off after it.
class EarlyTimeOuts {
 public:
  EarlyTimeOuts() { set_early_time_outs_enabled(true); }
  ~EarlyTimeOuts() { set_early_time_outs_enabled(false); }
  EarlyTimeOuts(const EarlyTimeOuts&) = delete;
  EarlyTimeOuts& operator=(const EarlyTimeOuts&) = delete;
};

}  // namespace cudasim
