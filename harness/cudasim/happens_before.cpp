#include "harness/cudasim/happens_before.hpp"

#include <algorithm>
#include <utility>

namespace cudasim {

void HappensBefore::begin_cta(int threads) {
  Clock highest = std::max(base_, highest_counted_);
  if (threads == threads_ && !clocks_.empty()) {
    for (int t = 0; t < threads_; ++t) highest = std::max(highest, clock(t)[t]);
    for (const Clock agent : agent_clocks_) highest = std::max(highest, agent);
  }
  threads_ = threads;
  agents_ = 0;
  const std::size_t stride = static_cast<std::size_t>(threads) + kMaxAgents;
  constexpr Clock kRestart = Clock{1} << 31;  // far below wrapping: clear everything and start again
  if (stride != stride_ || clocks_.empty() || highest >= kRestart) {
    stride_ = stride;
    clocks_.assign(static_cast<std::size_t>(threads) * stride_, 0);
    agent_clocks_.assign(kMaxAgents, 0);
    highest = 0;
  }
  highest_counted_ = 0;
  base_ = highest + 1;
  for (int t = 0; t < threads; ++t) mutable_clock(t)[t] = base_;
  std::fill(agent_clocks_.begin(), agent_clocks_.end(), base_);
  joined_.assign(stride_, 0);
  agent_names_.clear();
  proxy_fences_.resize(static_cast<std::size_t>(threads));
  mbarrier_init_fences_.resize(static_cast<std::size_t>(threads));
  for (auto& fences : proxy_fences_) fences.clear();
  for (auto& fences : mbarrier_init_fences_) fences.clear();
}

int HappensBefore::new_agent(std::string name) {
  if (agents_ == kMaxAgents) return -1;
  agent_names_.push_back(std::move(name));
  return threads_ + agents_++;
}

Epoch HappensBefore::tick_agent(int slot) {
  Clock& clock = agent_clocks_[static_cast<std::size_t>(slot - threads_)];
  return Epoch{static_cast<std::uint16_t>(slot), ++clock};
}

void HappensBefore::release(int thread, std::vector<Clock>& into) {
  const Clock* mine = clock(thread);
  const int used = slots();
  for (int s = 0; s < used; ++s) into[static_cast<std::size_t>(s)] = std::max(into[static_cast<std::size_t>(s)], mine[s]);
  tick(thread);
}

void HappensBefore::acquire(int thread, const std::vector<Clock>& from) {
  Clock* mine = mutable_clock(thread);
  const int used = slots();
  for (int s = 0; s < used; ++s) mine[s] = std::max(mine[s], from[static_cast<std::size_t>(s)]);
  tick(thread);
}

void HappensBefore::acquire(int thread, Epoch epoch) {
  Clock& entry = mutable_clock(thread)[epoch.slot];
  entry = std::max(entry, epoch.clock);
  tick(thread);
}

void HappensBefore::synchronize(const std::vector<int>& participants) {
  const int used = slots();
  std::fill(joined_.begin(), joined_.begin() + used, 0);
  for (const int t : participants) join_into(joined_, t);
  for (const int t : participants) {
    std::copy(joined_.begin(), joined_.begin() + used, mutable_clock(t));
    tick(t);
  }
}

void HappensBefore::join_into(std::vector<Clock>& into, int thread) const {
  const Clock* theirs = clock(thread);
  const int used = slots();
  for (int s = 0; s < used; ++s) into[static_cast<std::size_t>(s)] = std::max(into[static_cast<std::size_t>(s)], theirs[s]);
}

void HappensBefore::proxy_fence(int thread, Fence fence) {
  auto& fences = fence == Fence::proxy_async ? proxy_fences_ : mbarrier_init_fences_;
  fences[static_cast<std::size_t>(thread)].push_back(clock(thread)[thread]);
  tick(thread);
}

bool HappensBefore::proxy_fenced(int writer, Clock write_clock, const Clock* observer, bool mbarrier_init) const {
  // The first fence after the write: it happens before `observer` iff the writer's
  // clock then (the fence ended that interval) is one `observer` has seen.
  const auto fenced_by = [&](const std::vector<Clock>& fences) {
    const auto first = std::lower_bound(fences.begin(), fences.end(), write_clock);
    return first != fences.end() && *first <= observer[writer];
  };
  return fenced_by(proxy_fences_[static_cast<std::size_t>(writer)]) ||
         (mbarrier_init && fenced_by(mbarrier_init_fences_[static_cast<std::size_t>(writer)]));
}

}  // namespace cudasim
