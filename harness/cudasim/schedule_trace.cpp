#include "harness/cudasim/schedule_trace.hpp"

#include <atomic>
#include <mutex>
#include <stdexcept>

namespace cudasim {
namespace {

struct TraceState {
  std::atomic<bool> active{false};
  std::atomic<std::uint64_t> exponentials{0};
  std::atomic<std::uint64_t> beside_wgmma{0};
  std::mutex mutex;
  std::map<std::uint64_t, std::vector<int>> commits;
};

TraceState& state() {
  static TraceState trace;
  return trace;
}

}  // namespace

ScheduleTrace::ScheduleTrace() {
  TraceState& s = state();
  if (s.active.exchange(true)) throw std::logic_error("cudasim::ScheduleTrace: one trace at a time");
  s.exponentials = 0;
  s.beside_wgmma = 0;
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.commits.clear();
}

ScheduleTrace::~ScheduleTrace() { state().active = false; }

std::uint64_t ScheduleTrace::exponentials() const { return state().exponentials.load(); }
std::uint64_t ScheduleTrace::exponentials_beside_wgmma() const { return state().beside_wgmma.load(); }

std::map<std::uint64_t, std::vector<int>> ScheduleTrace::commits_by_cta() const {
  TraceState& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return s.commits;
}

bool schedule_traced() { return state().active.load(std::memory_order_relaxed); }

void trace_exponential(bool beside_wgmma) {
  TraceState& s = state();
  s.exponentials.fetch_add(1, std::memory_order_relaxed);
  if (beside_wgmma) s.beside_wgmma.fetch_add(1, std::memory_order_relaxed);
}

void trace_wgmma_commit(std::uint64_t cta, int warpgroup) {
  TraceState& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.commits[cta].push_back(warpgroup);
}

}  // namespace cudasim
