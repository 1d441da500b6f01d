// The mbarrier objects of a CTA (PTX ISA 9.0, 9.7.13.15 "mbarrier"): the
// simulator keeps each object's state beside the 8 bytes of shared memory it
// occupies, which the sanitizer guards against ordinary accesses while the
// object lives. TMA loads that complete on an mbarrier are kept here from
// issue until they land: at the latest point the ISA allows, when a thread
// waits for the phase they complete (mbarrier.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "harness/cudasim/happens_before.hpp"

namespace cudasim {

struct SimThread;

// A TMA load from issue until it lands: the box's bytes (read from global
// memory at issue) and the shared address of each 16-byte chunk (swizzled).
struct TmaLoadInFlight {
  std::vector<unsigned char> data;
  std::vector<std::uint32_t> chunk_addresses;  // chunk i holds data[16 i, 16 i + 16)
  SimThread* issuer = nullptr;
  const void* pc = nullptr;
};

struct Mbarrier {
  std::uint32_t address = 0;
  bool valid = false;
  std::uint32_t expected = 0;  // arrivals per phase
  std::uint32_t pending = 0;   // arrivals the current phase still needs
  std::int64_t tx = 0;         // tx-count of the current phase
  std::uint32_t phase = 0;     // the current (incomplete) phase
  int agent = -1;              // the slot that orders the phase's transactions
  int init_thread = 0;
  Clock init_clock = 0;
  const void* init_pc = nullptr;
  std::vector<Clock> arrivals;   // what the current phase's arrivals and transactions publish
  std::vector<Clock> completed;  // … and what the last completed phase published
  bool completed_observed = true;  // a wait returned true for the last completed phase
  std::vector<TmaLoadInFlight> loads;
  std::vector<SimThread*> waiters;
};

// The live mbarrier a TMA load issued by `thread` completes on (checked:
// initialised, its initialisation ordered before the thread and fenced for the
// async proxy), and the load's registration on it (mbarrier.cpp).
Mbarrier& mbarrier_for_tma(SimThread& thread, std::uint32_t address, const void* pc);
void add_tma_load(Mbarrier& barrier, TmaLoadInFlight load);

class MbarrierTable {
 public:
  void begin_cta() { barriers_.clear(); }
  // The object at `address` (valid or invalidated), or null if none was ever initialised there.
  Mbarrier* find(std::uint32_t address);
  Mbarrier& add(std::uint32_t address);
  std::deque<Mbarrier>& all() { return barriers_; }

 private:
  std::deque<Mbarrier> barriers_;  // stable addresses
};

}  // namespace cudasim
