// The sanitizer's ordering of one CTA's memory accesses (docs/cudasim.md,
// "The race rule"): two accesses to a shared byte race unless one happens
// before the other. Happens-before is tracked with vector clocks, one per
// thread, over slots for the CTA's threads and for its asynchronous agents:
// each mbarrier (the transactions that complete its phases), each warpgroup
// (its wgmma groups) and each thread that issues bulk copies (its bulk
// async-groups). An access is recorded as an epoch (slot, clock); it happens
// before thread t's later access when its clock is at most t's clock of that
// slot. The edges:
//   - a barrier (bar.sync, __syncthreads, __syncwarp) joins the clocks of its
//     participants; bar.arrive publishes without waiting;
//   - an mbarrier arrive-on publishes the thread's clock into the phase; a
//     thread that observes the phase complete (try_wait) learns it, and passes
//     it on through any later barrier;
//   - the completion of an asynchronous operation (wgmma.wait_group,
//     cp.async.bulk.wait_group.read, an mbarrier phase a TMA load completes)
//     joins the operation's epoch into the waiting thread's clock.
// Every change to a thread's clock advances its own entry, so (thread, own
// clock) names one vector clock: the shadow's read sets rely on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace cudasim {

using Clock = std::uint32_t;

// An access's place in happens-before: the slot (thread or agent) and its clock then.
struct Epoch {
  std::uint16_t slot = 0;
  Clock clock = 0;
};

class HappensBefore {
 public:
  // Agent slots a CTA may use (mbarriers, warpgroups, bulk-copy threads).
  static constexpr int kMaxAgents = 256;

  // A new CTA of `threads` threads: each thread's own clock at the CTA's base,
  // which is above every clock of the CTAs before it, so the clocks they left
  // behind count as 0 (nothing known) and need no clearing.
  void begin_cta(int threads);

  int threads() const { return threads_; }
  // Slots handed out so far: the threads, then the agents.
  int slots() const { return threads_ + agents_; }

  // Thread t's vector clock (stride() entries, slots() of them meaningful).
  const Clock* clock(int thread) const { return &clocks_[static_cast<std::size_t>(thread) * stride_]; }
  Epoch now(int thread) const { return Epoch{static_cast<std::uint16_t>(thread), clock(thread)[thread]}; }
  static bool ordered_before(Epoch earlier, const Clock* later) { return earlier.clock <= later[earlier.slot]; }
  std::size_t stride() const { return stride_; }

  // A new agent slot named `name` in reports ("the TMA loads completing on
  // the mbarrier at shared 0x40"), or -1 when kMaxAgents are in use.
  int new_agent(std::string name);
  bool is_agent(int slot) const { return slot >= threads_; }
  const std::string& agent_name(int slot) const { return agent_names_[static_cast<std::size_t>(slot - threads_)]; }
  // The agent's next epoch (its clock advances by one).
  Epoch tick_agent(int slot);
  // The epoch of the `count`-th operation of an agent that counts its own
  // (wgmma groups, bulk groups): operation n happens before n + 1.
  Epoch counted_epoch(int slot, Clock count) {
    highest_counted_ = std::max(highest_counted_, base_ + count);
    return Epoch{static_cast<std::uint16_t>(slot), base_ + count};
  }
  Clock agent_clock(int slot) const { return agent_clocks_[static_cast<std::size_t>(slot - threads_)]; }

  // Thread t publishes everything it has seen into `into` (release).
  void release(int thread, std::vector<Clock>& into);
  // Thread t learns `from` (acquire).
  void acquire(int thread, const std::vector<Clock>& from);
  // Thread t learns that everything up to `epoch` happened (an asynchronous completion).
  void acquire(int thread, Epoch epoch);
  // Every participant learns what every participant has seen (a barrier).
  void synchronize(const std::vector<int>& participants);
  // `into` joined with thread t's clock, without ticking (a view, e.g. of a warpgroup).
  void join_into(std::vector<Clock>& into, int thread) const;
  std::vector<Clock> empty_clock() const { return std::vector<Clock>(stride_, 0); }

  // fence.proxy.async by thread t, or fence.mbarrier_init (which covers only
  // the thread's mbarrier.init operations).
  enum class Fence { proxy_async, mbarrier_init };
  void proxy_fence(int thread, Fence fence);
  // Whether thread `writer`'s generic-proxy write at `write_clock` (an
  // mbarrier.init when `mbarrier_init`) was followed, in the writer's program
  // order, by a fence covering it that happens before `observer`.
  bool proxy_fenced(int writer, Clock write_clock, const Clock* observer, bool mbarrier_init = false) const;

 private:
  Clock* mutable_clock(int thread) { return &clocks_[static_cast<std::size_t>(thread) * stride_]; }
  void tick(int thread) { ++mutable_clock(thread)[thread]; }

  int threads_ = 0;
  int agents_ = 0;
  Clock base_ = 0;  // the first clock of this CTA
  Clock highest_counted_ = 0;
  std::vector<Clock> joined_;  // synchronize()'s scratch
  std::size_t stride_ = 0;
  std::vector<Clock> clocks_;                      // threads_ rows of stride_
  std::vector<Clock> agent_clocks_;                // each agent's latest epoch
  std::vector<std::string> agent_names_;
  // Per thread: its own clock at each fence.proxy.async, and at each fence.mbarrier_init (increasing).
  std::vector<std::vector<Clock>> proxy_fences_, mbarrier_init_fences_;
};

}  // namespace cudasim
