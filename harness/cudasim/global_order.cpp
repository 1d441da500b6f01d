#include "harness/cudasim/global_order.hpp"

#include <algorithm>
#include <string>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/report_text.hpp"

namespace cudasim {
namespace {

// Whether `access` happens before what `thread` does next.
bool ordered_before(const GlobalAccess& access, SimThread& thread) {
  Cta& cta = *thread.cta;
  const Clock* mine = cta.order().clock(thread.linear);
  if (access.cta == cta.linear_block()) return HappensBefore::ordered_before(access.epoch, mine);
  for (const AcquireRecord& record : cta.acquired()) {
    if (record.at > mine[record.thread]) continue;
    const auto known = record.what->find(access.cta);
    if (known != record.what->end() && access.epoch.slot < known->second.size() &&
        access.epoch.clock <= known->second[access.epoch.slot]) {
      return true;
    }
  }
  return false;
}

void keep_latest(std::vector<GlobalAccess>& accesses, const GlobalAccess& access) {
  for (GlobalAccess& known : accesses) {
    if (known.cta == access.cta && known.epoch.slot == access.epoch.slot) {
      known = access;
      return;
    }
  }
  accesses.push_back(access);
}

std::string describe_cta(std::int64_t linear, const dim3& grid) {
  return "CTA (" + std::to_string(linear % grid.x) + "," + std::to_string(linear / grid.x % grid.y) + "," +
         std::to_string(linear / (std::int64_t{grid.x} * grid.y)) + ")";
}

struct Race {
  GlobalAccess other;
  std::uintptr_t word = 0;
  bool found = false;
};

}  // namespace

void GlobalOrder::reduction(SimThread& thread, const void* address, std::size_t bytes, const void* pc,
                            const char* what) {
  Cta& cta = *thread.cta;
  if (!cta.sanitize()) return;
  watching_.store(true, std::memory_order_relaxed);
  const GlobalAccess access{cta.linear_block(), cta.order().now(thread.linear), pc, what};
  const auto begin = reinterpret_cast<std::uintptr_t>(address) & ~std::uintptr_t{3};
  const auto end = reinterpret_cast<std::uintptr_t>(address) + bytes;
  Race race;
  for (std::uintptr_t word = begin; word < end; word += 4) {
    Shard& s = shard(word);
    const std::lock_guard lock(s.mutex);
    Word& state = s.words[word];
    if (!race.found && state.written && !ordered_before(state.write, thread)) race = Race{state.write, word, true};
    for (const GlobalAccess& read : state.reads) {
      if (!race.found && !ordered_before(read, thread)) race = Race{read, word, true};
    }
    keep_latest(state.reductions, access);
  }
  if (race.found) {
    report(&thread, "global memory race with a reduction",
           std::string(what) + " at " + hex(race.word) + " after the plain " + race.other.what + " of " +
               describe_cta(race.other.cta, thread.identity.grid_dim) + ", " +
               describe_thread(race.other.epoch.slot) +
               ", and no barrier or release/acquire orders the two (a reduction is atomic only against other "
               "reductions; a plain access must be ordered before it or after it)",
           pc, false, race.other.pc, "the plain access");
  }
}

void GlobalOrder::plain(SimThread& thread, const void* address, std::size_t bytes, bool write, const void* pc) {
  if (!watching()) return;
  Cta& cta = *thread.cta;
  const GlobalAccess access{cta.linear_block(), cta.order().now(thread.linear), pc, write ? "store" : "load"};
  const auto begin = reinterpret_cast<std::uintptr_t>(address) & ~std::uintptr_t{3};
  const auto end = reinterpret_cast<std::uintptr_t>(address) + bytes;
  Race race;
  for (std::uintptr_t word = begin; word < end; word += 4) {
    Shard& s = shard(word);
    const std::lock_guard lock(s.mutex);
    const auto found = s.words.find(word);
    if (found == s.words.end()) continue;
    Word& state = found->second;
    for (const GlobalAccess& reduction : state.reductions) {
      if (!race.found && !ordered_before(reduction, thread)) race = Race{reduction, word, true};
    }
    if (write) {
      state.written = true;
      state.write = access;
      state.reads.clear();
      state.reductions.clear();
    } else {
      keep_latest(state.reads, access);
    }
  }
  if (race.found) {
    report(&thread, "global memory race with a reduction",
           std::string("plain ") + access.what + " at " + hex(race.word) + " while the " + race.other.what + " of " +
               describe_cta(race.other.cta, thread.identity.grid_dim) + ", " +
               describe_thread(race.other.epoch.slot) +
               " adds to it, and no barrier or release/acquire orders the two (a reduction is atomic only "
               "against other reductions; a plain access must be ordered after it or before it)",
           pc, false, race.other.pc, "the reduction");
  }
}

void GlobalOrder::release(SimThread& thread, const void* address) {
  Cta& cta = *thread.cta;
  if (!cta.sanitize()) return;
  auto knowledge = std::make_shared<CrossCtaKnowledge>();
  std::vector<Clock>& own = (*knowledge)[cta.linear_block()];
  own = cta.order().empty_clock();
  cta.order().release(thread.linear, own);  // the thread's clock before the release
  own.resize(static_cast<std::size_t>(cta.order().slots()));  // only the slots the CTA uses
  const auto join = [&](const CrossCtaKnowledge& other) {
    for (const auto& [block, clocks] : other) {
      std::vector<Clock>& into = (*knowledge)[block];
      if (into.size() < clocks.size()) into.resize(clocks.size(), 0);
      for (std::size_t s = 0; s < clocks.size(); ++s) into[s] = std::max(into[s], clocks[s]);
    }
  };
  for (const AcquireRecord& record : cta.acquired()) {
    if (record.at <= own[static_cast<std::size_t>(record.thread)]) join(*record.what);
  }
  const auto word = reinterpret_cast<std::uintptr_t>(address);
  Shard& s = shard(word);
  const std::lock_guard lock(s.mutex);
  // Every modification of the word is a read-modify-write, so an acquire that
  // reads the latest value reads from every release before it.
  if (const auto earlier = s.released.find(word); earlier != s.released.end()) join(*earlier->second);
  s.released[word] = std::move(knowledge);
}

void GlobalOrder::acquire(SimThread& thread, const void* address) {
  Cta& cta = *thread.cta;
  if (!cta.sanitize()) return;
  std::shared_ptr<const CrossCtaKnowledge> knowledge;
  {
    const auto word = reinterpret_cast<std::uintptr_t>(address);
    Shard& s = shard(word);
    const std::lock_guard lock(s.mutex);
    const auto found = s.released.find(word);
    if (found == s.released.end()) return;
    knowledge = found->second;
  }
  for (const AcquireRecord& record : cta.acquired()) {
    if (record.thread == thread.linear && record.what == knowledge) return;  // a spin that learns nothing new
  }
  cta.order().acquire(thread.linear, Epoch{static_cast<std::uint16_t>(thread.linear), 0});  // a tick
  cta.acquired().push_back(AcquireRecord{thread.linear, cta.order().clock(thread.linear)[thread.linear], knowledge});
}

}  // namespace cudasim
