// mbarrier objects (PTX ISA 9.0, 9.7.13.15) and the fences of the async proxy
// (9.7.13.4 "membar / fence"): the simulator's entry points of
// device_runtime.hpp, each with its section named.
#include "harness/cudasim/mbarrier.hpp"

#include <algorithm>
#include <string>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/device_runtime.hpp"
#include "harness/cudasim/environment_switch.hpp"
#include "harness/cudasim/report_text.hpp"
#include "harness/cudasim/tensor_copy.hpp"
#include "harness/cudasim/time_out_switch.hpp"

namespace cudasim {

Mbarrier* MbarrierTable::find(std::uint32_t address) {
  for (Mbarrier& barrier : barriers_) {
    if (barrier.address == address) return &barrier;
  }
  return nullptr;
}

Mbarrier& MbarrierTable::add(std::uint32_t address) {
  Mbarrier& barrier = barriers_.emplace_back();
  barrier.address = address;
  return barrier;
}

namespace {

#define CUDASIM_PC __builtin_return_address(0)

SimThread& me() { return *current_thread; }

// 9.7.13.15.2 "Contents of the mbarrier object": counts range over [0, 2^20 - 1],
// the tx-count over [-(2^20 - 1), 2^20 - 1].
constexpr std::int64_t kCountLimit = (std::int64_t{1} << 20) - 1;

// The state mbarrier.arrive returns: the phase before the arrive-on, and the object.
constexpr std::uint64_t kStateTag = std::uint64_t{0xa5} << 56;
std::uint64_t arrive_state(const Mbarrier& barrier) {
  return kStateTag | std::uint64_t{barrier.address} << 32 | barrier.phase;
}

std::string where(const Mbarrier& barrier) {
  return "the mbarrier at " + current_cta().shared().describe_address(barrier.address);
}

// The live mbarrier at `address`, checked: one exists, and its initialisation
// happens before this thread's operation (9.7.13.15.10: any other operation on
// memory holding no valid mbarrier object is undefined).
Mbarrier& live_mbarrier(SimThread& t, std::uint32_t address, const char* operation, const void* pc) {
  Cta& cta = *t.cta;
  Mbarrier* barrier = cta.mbarriers().find(address);
  if (address % 8 != 0) {
    report_fatal(&t, "misaligned shared access",
                 std::string(operation) + " on " + cta.shared().describe_address(address) +
                     ", which is not a multiple of 8 (9.7.13.15.1: an mbarrier object is 8-byte aligned)",
                 pc);
  }
  if (!barrier || !barrier->valid) {
    report_fatal(&t, "mbarrier operation on memory holding no mbarrier object",
                 std::string(operation) + " on " + cta.shared().describe_address(address) + ", where " +
                     (barrier ? "the mbarrier was invalidated (mbarrier.inval)" : "no mbarrier.init was executed"),
                 pc);
  }
  if (cta.sanitize() && barrier->init_clock > cta.order().clock(t.linear)[barrier->init_thread]) {
    report(&t, "mbarrier used before its initialisation is visible",
           std::string(operation) + " on " + where(*barrier) + ", whose mbarrier.init by " +
               describe_thread(barrier->init_thread) +
               " no barrier orders before this thread (mbarrier.init, fence.mbarrier_init, then bar.sync)",
           pc, false, barrier->init_pc, "the mbarrier.init");
  }
  return *barrier;
}

// 9.7.13.15.6 "Phase Completion of the mbarrier object": the phase completes
// once its pending arrivals and its tx-count are both zero; the next phase then
// expects `expected` arrivals. The TMA loads of the phase land first, when a
// thread waits for it (`someone_waits`): their complete-tx operations
// (9.7.13.15.5.2) happen no later than that.
void try_complete(Cta& cta, Mbarrier& barrier, bool someone_waits) {
  if (barrier.pending != 0) return;
  if (!barrier.loads.empty()) {
    if (!someone_waits) return;
    const Epoch landing = cta.order().tick_agent(barrier.agent);
    for (TmaLoadInFlight& load : barrier.loads) {
      land_tma_load(cta, load, landing);
      barrier.tx -= static_cast<std::int64_t>(load.data.size());
    }
    barrier.loads.clear();
    barrier.arrivals[landing.slot] = std::max(barrier.arrivals[landing.slot], landing.clock);
  }
  if (barrier.tx != 0) return;
  barrier.completed.swap(barrier.arrivals);
  std::fill(barrier.arrivals.begin(), barrier.arrivals.end(), 0);
  ++barrier.phase;
  barrier.pending = barrier.expected;
  barrier.completed_observed = false;
  for (SimThread* waiter : barrier.waiters) cta.make_ready(*waiter);
  barrier.waiters.clear();
  cta.note_progress();
}

// 9.7.13.15.7 "Arrive-on operation on mbarrier object".
std::uint64_t arrive_on(SimThread& t, Mbarrier& barrier, std::uint32_t count, const char* operation,
                        const void* pc) {
  Cta& cta = *t.cta;
  const std::uint64_t state = arrive_state(barrier);
  if (count == 0 || count > kCountLimit) {
    report_fatal(&t, "invalid mbarrier operand",
                 std::string(operation) + " with count " + std::to_string(count) + "; the range is 1 to 2^20 - 1",
                 pc);
  }
  if (cta.sanitize() && !barrier.completed_observed) {
    // 9.7.13.15.4: each phase needs a try_wait/test_wait returning True before
    // an arrive-on of the next phase.
    report(&t, "mbarrier phase overrun",
           std::string(operation) + " on " + where(barrier) + " arrives in phase " + std::to_string(barrier.phase) +
               " before any thread observed phase " + std::to_string(barrier.phase - 1) +
               " complete (the ISA requires a try_wait returning True for each phase before the next phase's "
               "arrivals)",
           pc, false);
  }
  if (count > barrier.pending) {
    report(&t, "extra mbarrier arrivals",
           std::string(operation) + " on " + where(barrier) + " arrives " + std::to_string(count) +
               " time(s) where phase " + std::to_string(barrier.phase) + " expects " +
               std::to_string(barrier.pending) + " more of its " + std::to_string(barrier.expected) +
               " (the phase is still incomplete: its tx-count is " + std::to_string(barrier.tx) + ")",
           pc, false);
    count = barrier.pending;
  }
  if (cta.sanitize()) cta.order().release(t.linear, barrier.arrivals);
  barrier.pending -= count;
  cta.note_progress();
  try_complete(cta, barrier, !barrier.waiters.empty());
  return state;
}

// 9.7.13.15.5.1 "expect-tx operation".
void expect_tx(SimThread& t, Mbarrier& barrier, std::uint32_t bytes, const void* pc) {
  barrier.tx += bytes;
  if (barrier.tx > kCountLimit) {
    report_fatal(&t, "invalid mbarrier operand",
                 "expect-tx of " + std::to_string(bytes) + " bytes on " + where(barrier) + " takes its tx-count to " +
                     std::to_string(barrier.tx) + ", past 2^20 - 1",
                 pc);
  }
  current_cta().note_progress();
}

// 9.7.13.15.16 "mbarrier.test_wait / mbarrier.try_wait": waits for the phase
// `current` says (true: the current, incomplete phase; false: the immediately
// preceding one, which is complete). The simulator suspends the thread until
// the phase completes, or until no other thread can run (the time limit).
bool wait_for_phase(SimThread& t, Mbarrier& barrier, bool current, const char* operation, const void* pc) {
  Cta& cta = *t.cta;
  if (current) {
    // An early time-out comes before the phase's pending transfers land, as
    // the hardware's time limit may run out while they are in flight.
    if (early_time_outs_enabled() && !t.early_time_out_taken) {
      t.early_time_out_taken = true;  // the thread's next try_wait waits
      return false;
    }
    const std::uint32_t waited = barrier.phase;
    try_complete(cta, barrier, true);
    while (barrier.phase == waited) {
      barrier.waiters.push_back(&t);
      t.state = ThreadState::at_mbarrier;
      t.wait_pc = pc;
      t.wait_what = operation;
      t.wait_mbarrier = barrier.address;
      t.wait_timed_out = false;
      cta.suspend(t);
      t.wait_mbarrier = 0;
      if (t.wait_timed_out) return false;  // time_out_waits took it off the waiters
    }
  }
  if (cta.sanitize()) cta.order().acquire(t.linear, barrier.completed);
  barrier.completed_observed = true;
  t.early_time_out_taken = false;
  return true;
}

EnvironmentSwitch early_time_outs_switch("ATTNBENCH_CUDASIM_EARLY_TIME_OUTS", false);

}  // namespace

bool early_time_outs_enabled() { return early_time_outs_switch.enabled(); }
void set_early_time_outs_enabled(bool enabled) { early_time_outs_switch.set(enabled); }

// 9.7.13.15.9 "mbarrier.init": phase 0, `count` expected and pending arrivals, tx-count 0.
void mbarrier_init(std::uint32_t address, std::uint32_t count) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Cta& cta = *t.cta;
  if (count == 0 || count > kCountLimit) {
    report_fatal(&t, "invalid mbarrier operand",
                 "mbarrier.init with count " + std::to_string(count) + "; the range is 1 to 2^20 - 1", pc);
  }
  Mbarrier* barrier = cta.mbarriers().find(address);
  if (barrier && barrier->valid) {
    report(&t, "mbarrier initialised twice",
           "mbarrier.init on " + where(*barrier) +
               ", which holds a valid mbarrier object (mbarrier.inval it first; 9.7.13.15.9)",
           pc, false, barrier->init_pc, "the first mbarrier.init");
  }
  cta.shared().begin_mbarrier(t, address, pc);
  if (!barrier) {
    barrier = &cta.mbarriers().add(address);
    barrier->agent =
        cta.order().new_agent("the TMA loads completing on the mbarrier at " + cta.shared().describe_address(address));
    if (barrier->agent < 0) {
      report_fatal(&t, "too many mbarrier objects",
                   "the simulator tracks at most " + std::to_string(HappensBefore::kMaxAgents) +
                       " mbarriers, warpgroups and bulk-copy threads per CTA",
                   pc);
    }
  }
  const int agent = barrier->agent;
  *barrier = Mbarrier{};
  barrier->address = address;
  barrier->agent = agent;
  barrier->valid = true;
  barrier->expected = barrier->pending = count;
  barrier->init_thread = t.linear;
  barrier->init_clock = cta.order().now(t.linear).clock;
  barrier->init_pc = pc;
  barrier->arrivals = cta.order().empty_clock();
  barrier->completed = cta.order().empty_clock();
  cta.note_progress();
}

// 9.7.13.15.10 "mbarrier.inval".
void mbarrier_inval(std::uint32_t address) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Mbarrier& barrier = live_mbarrier(t, address, "mbarrier.inval", pc);
  if (!barrier.waiters.empty() || !barrier.loads.empty()) {
    report(&t, "mbarrier invalidated while in use",
           "mbarrier.inval on " + where(barrier) + " while " + std::to_string(barrier.waiters.size()) +
               " thread(s) wait on it and " + std::to_string(barrier.loads.size()) + " TMA load(s) complete on it",
           pc, false);
  }
  barrier.valid = false;
  t.cta->shared().end_mbarrier(address);
}

// 9.7.13.15.13 "mbarrier.arrive" (.release.cta, the default): returns the phase before the arrive-on.
std::uint64_t mbarrier_arrive(std::uint32_t address, std::uint32_t count) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  return arrive_on(t, live_mbarrier(t, address, "mbarrier.arrive", pc), count, "mbarrier.arrive", pc);
}

// … .expect_tx: an expect-tx operation, then an arrive-on with count 1.
std::uint64_t mbarrier_arrive_expect_tx(std::uint32_t address, std::uint32_t tx_count) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Mbarrier& barrier = live_mbarrier(t, address, "mbarrier.arrive.expect_tx", pc);
  expect_tx(t, barrier, tx_count, pc);
  return arrive_on(t, barrier, 1, "mbarrier.arrive.expect_tx", pc);
}

// 9.7.13.15.11 "mbarrier.expect_tx" (relaxed: no ordering).
void mbarrier_expect_tx(std::uint32_t address, std::uint32_t tx_count) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Mbarrier& barrier = live_mbarrier(t, address, "mbarrier.expect_tx", pc);
  expect_tx(t, barrier, tx_count, pc);
  try_complete(*t.cta, barrier, !barrier.waiters.empty());
}

// 9.7.13.15.16, the .parity form: phaseParity names the current phase (it waits)
// or the immediately preceding one (it returns True at once). A suspend-time
// hint only bounds how long the thread may be suspended: the simulator
// suspends it until the phase completes either way.
bool wait_parity(std::uint32_t address, std::uint32_t parity, const void* pc) {
  SimThread& t = me();
  Mbarrier& barrier = live_mbarrier(t, address, "mbarrier.try_wait.parity", pc);
  if (parity > 1) {
    report_fatal(&t, "invalid mbarrier operand",
                 "mbarrier.try_wait.parity with phaseParity " + std::to_string(parity) + "; it is 0 or 1", pc);
  }
  return wait_for_phase(t, barrier, parity == (barrier.phase & 1u), "mbarrier.try_wait.parity", pc);
}
bool mbarrier_try_wait_parity(std::uint32_t address, std::uint32_t parity) {
  return wait_parity(address, parity, CUDASIM_PC);
}
bool mbarrier_try_wait_parity_hint(std::uint32_t address, std::uint32_t parity, std::uint32_t) {
  return wait_parity(address, parity, CUDASIM_PC);
}

// … the state form: `state` from an mbarrier.arrive in the current or the preceding phase.
bool mbarrier_try_wait(std::uint32_t address, std::uint64_t state) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Mbarrier& barrier = live_mbarrier(t, address, "mbarrier.try_wait", pc);
  const auto phase = static_cast<std::uint32_t>(state);
  if ((state & ~std::uint64_t{0xffffffffu}) != (kStateTag | std::uint64_t{address} << 32) ||
      (phase != barrier.phase && phase + 1 != barrier.phase)) {
    report_fatal(&t, "invalid mbarrier operand",
                 "mbarrier.try_wait on " + where(barrier) + " with a state that is not from an mbarrier.arrive on it "
                     "in its current phase (" + std::to_string(barrier.phase) + ") or the one before",
                 pc);
  }
  return wait_for_phase(t, barrier, phase == barrier.phase, "mbarrier.try_wait", pc);
}

// 9.7.13.4 "membar / fence": fence.mbarrier_init.release.cluster orders the
// thread's prior mbarrier.init operations before later operations, the async
// proxy's included (a TMA load's complete-tx).
void fence_mbarrier_init() {
  SimThread& t = me();
  if (t.cta->sanitize()) t.cta->order().proxy_fence(t.linear, HappensBefore::Fence::mbarrier_init);
}

// … fence.proxy.async.shared::cta: a bi-directional proxy fence between the
// generic and the async proxy for the thread's shared-memory accesses.
void fence_proxy_async() {
  SimThread& t = me();
  if (t.cta->sanitize()) t.cta->order().proxy_fence(t.linear, HappensBefore::Fence::proxy_async);
}

// Used by tensor_copy.cpp when a TMA load is issued on `address`.
Mbarrier& mbarrier_for_tma(SimThread& t, std::uint32_t address, const void* pc) {
  Mbarrier& barrier = live_mbarrier(t, address, "cp.async.bulk.tensor (its mbarrier)", pc);
  Cta& cta = *t.cta;
  if (cta.sanitize() &&
      !cta.order().proxy_fenced(barrier.init_thread, barrier.init_clock, cta.order().clock(t.linear), true)) {
    report(&t, "mbarrier.init not fenced for the async proxy",
           "a TMA load completes on " + where(barrier) + ", whose mbarrier.init by " +
               describe_thread(barrier.init_thread) +
               " was not followed by fence.mbarrier_init.release.cluster (or fence.proxy.async) before the "
               "synchronisation that orders it before this copy",
           pc, false, barrier.init_pc, "the mbarrier.init");
  }
  return barrier;
}

void add_tma_load(Mbarrier& barrier, TmaLoadInFlight load) {
  barrier.loads.push_back(std::move(load));
  Cta& cta = current_cta();
  cta.note_progress();
  try_complete(cta, barrier, !barrier.waiters.empty());
}

}  // namespace cudasim
