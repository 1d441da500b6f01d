// One CTA of a simulated launch, and the launch itself (execution.hpp has the
// model). A host thread runs its CTAs one after another in one Cta object, so
// the fibers' stacks and the shared window are made once per host thread.
#pragma once

#include <array>
#include <condition_variable>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "harness/cudasim/execution.hpp"
#include "harness/cudasim/global_order.hpp"
#include "harness/cudasim/happens_before.hpp"
#include "harness/cudasim/mbarrier.hpp"
#include "harness/cudasim/shared_memory.hpp"

namespace cudasim {

class Launch {
 public:
  Launch(const GridLaunch& configuration, const std::function<void()>& body, DeviceMemoryMap memory, bool sanitize);
  const GridLaunch& configuration() const { return configuration_; }
  const std::function<void()>& body() const { return body_; }
  const DeviceMemoryMap& memory() const { return memory_; }
  bool sanitize() const { return sanitize_; }
  GlobalOrder& global_order() { return global_order_; }

  void add(Finding finding, bool fatal);
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  // The next CTA (linear index, in the order cta_order_switch.hpp sets) to
  // start, or -1 when none is left or the launch was aborted.
  std::int64_t next_block();

  // The host threads that run CTAs, and what lets one that has only CTAs set
  // aside (waiting on global memory) tell progress elsewhere from a deadlock:
  // an event is a CTA started, finished, set aside or resumed.
  void join_worker();
  void leave_worker();
  std::uint64_t events();
  void note_event();
  // Called with the events seen before the worker last found none of its
  // waiting CTAs able to go on: true when there were events since (look
  // again), false when every worker is in the same position (a deadlock).
  bool wait_for_events(std::uint64_t seen);
  // Every finding, formatted; empty when there were none.
  std::string findings_text() const;

 private:
  GridLaunch configuration_;
  const std::function<void()>& body_;
  DeviceMemoryMap memory_;
  bool sanitize_;
  GlobalOrder global_order_;
  std::vector<std::int64_t> order_;  // empty: grid order
  std::atomic<std::int64_t> next_block_{0};
  std::atomic<bool> aborted_{false};
  std::mutex workers_mutex_;
  std::condition_variable workers_changed_;
  std::uint64_t events_ = 0;
  int workers_ = 0, waiting_workers_ = 0;
  bool deadlocked_ = false;
  mutable std::mutex mutex_;
  std::vector<Finding> findings_;
  std::size_t suppressed_ = 0;
};

// bar.sync / bar.arrive barrier `id` of the CTA (0 is __syncthreads's).
struct NamedBarrier {
  int expected = 0;         // threads the current instance waits for (0: idle)
  int arrived = 0;
  bool whole_cta = false;   // the count-less form (__syncthreads): one place for every thread
  const void* pc = nullptr;  // whole_cta: where
  std::vector<Clock> released;
  std::vector<int> participants;
  std::vector<int> waiting;  // those in bar.sync
};

class Cta {
 public:
  explicit Cta(Launch& launch);
  ~Cta();
  Cta(const Cta&) = delete;
  Cta& operator=(const Cta&) = delete;

  // Runs the threads of CTA `block` until every one has finished (or the
  // launch is abandoned): true; or until every unfinished one waits and some
  // of them spin on global memory (the CTA is set aside): false.
  bool run(uint3 block);
  // A CTA set aside: whether a word one of its threads polls has changed, and
  // running it on (as run()).
  bool can_resume() const;
  bool resume();
  // A CTA set aside when every CTA of the launch waits: reports where its
  // threads wait (a deadlock) and unwinds them.
  void report_global_deadlock();

  Launch& launch() { return launch_; }
  SharedMemory& shared() { return shared_; }
  HappensBefore& order() { return order_; }
  MbarrierTable& mbarriers() { return mbarriers_; }
  WarpState& warp(int index) { return warps_[static_cast<std::size_t>(index)]; }
  WarpgroupState& warpgroup(int index) { return warpgroups_[static_cast<std::size_t>(index)]; }
  SimThread& thread(int linear) { return threads_[static_cast<std::size_t>(linear)]; }
  int thread_count() const { return static_cast<int>(threads_.size()); }
  uint3 block() const { return block_; }
  std::int64_t linear_block() const { return linear_block_; }
  // The acquires (ld.acquire.gpu) of the CTA's threads that learned something (global_order.hpp).
  std::vector<AcquireRecord>& acquired() { return acquired_; }
  bool sanitize() const { return launch_.sanitize(); }

  // bar.sync (wait) or bar.arrive on barrier `id` for `count` threads; count 0
  // is the whole CTA, from one place (__syncthreads).
  void arrive_at_barrier(SimThread& thread, int id, int count, bool wait, const void* pc);
  // Suspends the running thread and runs the next ready one (or the
  // scheduler), until the thread is made ready and its turn comes.
  void suspend(SimThread& thread);
  void make_ready(SimThread& thread);
  // Something changed that a waiting thread may care about (a barrier or
  // mbarrier moved on): resets the stall detector's patience.
  void note_progress() { ++progress_; }
  // The launch is over for this CTA: unwind the running thread.
  [[noreturn]] void abandon();

 private:
  void start_threads(uint3 block);
  bool run_threads();
  // Makes ready the threads whose polled word changed; true if there were any.
  bool wake_pollers();
  bool any_poller() const;
  void finish_thread(SimThread& thread);
  void finish_cta();
  // No thread is ready: true when mbarrier waits were timed out (they return
  // false, as try_wait does after its time limit), false when the CTA is
  // deadlocked: kFruitlessTimeOuts time-outs in a row after which nothing moved.
  bool time_out_waits();
  void diagnose_stall();
  std::string describe_wait(const SimThread& thread);
  // The context to hand over to when `thread` stops running: the next ready
  // thread (now running) or the scheduler; `switcher_` tells the one resumed
  // where to keep `thread`'s continuation.
  boost::context::fiber&& hand_over(SimThread* thread);
  // Stores the continuation of whoever just handed over to the running thread.
  void keep_continuation(boost::context::fiber&& from);

  Launch& launch_;
  SharedMemory shared_;
  HappensBefore order_;
  MbarrierTable mbarriers_;
  std::vector<SimThread> threads_;
  std::vector<WarpState> warps_;
  std::vector<WarpgroupState> warpgroups_;
  std::array<NamedBarrier, 16> barriers_;
  std::deque<SimThread*> ready_;
  boost::context::fiber scheduler_;  // the scheduler while a thread runs
  SimThread* switcher_ = nullptr;    // the thread that handed over last; null: the scheduler
  uint3 block_{};
  std::int64_t linear_block_ = 0;
  std::vector<AcquireRecord> acquired_;
  int finished_ = 0;
  bool abandoned_ = false;
  std::uint64_t progress_ = 0;
  std::uint64_t progress_at_last_time_out_ = ~std::uint64_t{0};
  int fruitless_time_outs_ = 0;  // in a row, none followed by progress
};

// How many time-outs in a row, each followed by no progress in the CTA (no
// arrival, no phase or barrier moving on), make a deadlock. A thread that
// polls a barrier and then completes the phase itself is legal (PTX ISA
// 9.7.13.15.16: try_wait may return false after a system-dependent time
// limit), so a retry alone is no proof; a kernel that polls this many times in
// a row, with nothing else in its CTA moving, before it does the work itself is
// reported as deadlocked (docs/cudasim.md, "mbarrier").
inline constexpr int kFruitlessTimeOuts = 1000;

// The CTA of the calling simulated thread.
inline Cta& current_cta() { return *current_thread->cta; }

}  // namespace cudasim
