// The sanitizer's rule for global memory that reductions reach
// (docs/cudasim.md, "Global reductions"): a reduction (red / atom .add,
// cp.reduce.async.bulk .add) and a plain load or store of the same word race
// unless one happens before the other; reductions among themselves never race
// (each add is atomic). Happens-before across CTAs comes from a release
// (red.release.gpu) that an acquire (ld.acquire.gpu) of the same word reads
// from: the acquiring thread learns everything the releasing thread had seen,
// in its own CTA (its vector clock) and, through earlier acquires, in others;
// within a CTA, the CTA's own clocks (happens_before.hpp) carry it on.
//
// Only words a reduction reached in the launch are watched: from the first
// reduction to a word on, every plain access to it is checked and recorded; a
// plain access that comes, in the order the simulator ran the threads, before
// any reduction to its word is not seen (the CTA-order switch,
// cta_order_switch.hpp, runs other orders). A launch boundary orders
// everything.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "harness/cudasim/happens_before.hpp"

namespace cudasim {

struct SimThread;

// What a release publishes: for each CTA (linear index), the clocks of its
// slots that the releasing thread had seen.
using CrossCtaKnowledge = std::map<std::int64_t, std::vector<Clock>>;

// An acquire by a thread of this CTA: whoever in the CTA has seen the thread's
// clock reach `at` knows `what`.
struct AcquireRecord {
  int thread = 0;
  Clock at = 0;
  std::shared_ptr<const CrossCtaKnowledge> what;
};

// An access to global memory: its CTA, its slot and clock there, and its place.
struct GlobalAccess {
  std::int64_t cta = 0;
  Epoch epoch{};
  const void* pc = nullptr;
  const char* what = "";  // "red.global.add.f32", "store", …
};

class GlobalOrder {
 public:
  bool watching() const { return watching_.load(std::memory_order_relaxed); }
  // A reduction (`what` names the instruction) of `bytes` at `address` by `thread`.
  void reduction(SimThread& thread, const void* address, std::size_t bytes, const void* pc, const char* what);
  // A plain load or store by `thread`; checked only for words a reduction reached.
  void plain(SimThread& thread, const void* address, std::size_t bytes, bool write, const void* pc);
  // red.release.gpu on the word at `address`, and ld.acquire.gpu of it.
  void release(SimThread& thread, const void* address);
  void acquire(SimThread& thread, const void* address);

 private:
  struct Word {
    std::vector<GlobalAccess> reductions;  // since the last plain store, the latest of each (CTA, slot)
    std::vector<GlobalAccess> reads;       // plain loads since then, the same
    bool written = false;
    GlobalAccess write;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::uintptr_t, Word> words;
    std::unordered_map<std::uintptr_t, std::shared_ptr<const CrossCtaKnowledge>> released;
  };
  static constexpr std::size_t kShards = 64;
  Shard& shard(std::uintptr_t word) { return shards_[(word >> 2) % kShards]; }

  std::atomic<bool> watching_{false};
  std::array<Shard, kShards> shards_;
};

}  // namespace cudasim
