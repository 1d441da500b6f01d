#include "harness/cudasim/execution.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <thread>

#include <boost/context/stack_context.hpp>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/cta_order_switch.hpp"
#include "harness/cudasim/environment_switch.hpp"
#include "harness/cudasim/report_text.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/symbolize.hpp"
#include "harness/cudasim/tensor_copy.hpp"
#include "harness/errors.hpp"

namespace cudasim {

thread_local SimThread* current_thread = nullptr;
thread_local const ThreadIdentity* current_identity = nullptr;

namespace {

// ---- fiber stacks ------------------------------------------------------------------

// Stacks of kStackBytes with an inaccessible guard page below each, kept for
// reuse across CTAs and launches (every host thread takes from one pool).
constexpr std::size_t kStackBytes = std::size_t{256} << 10;

class StackPool {
 public:
  static StackPool& instance() {
    static StackPool pool;
    return pool;
  }
  boost::context::stack_context take() {
    {
      const std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        const boost::context::stack_context stack = free_.back();
        free_.pop_back();
        return stack;
      }
    }
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* mapping = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    mprotect(mapping, page, PROT_NONE);  // the stack grows down onto the guard page
    boost::context::stack_context stack;
    stack.size = kStackBytes;
    stack.sp = static_cast<char*>(mapping) + page + kStackBytes;
    return stack;
  }
  void give_back(boost::context::stack_context stack) {
    const std::lock_guard lock(mutex_);
    free_.push_back(stack);
  }

 private:
  std::mutex mutex_;
  std::vector<boost::context::stack_context> free_;
};

// Boost.Context's StackAllocator over the pool.
struct PooledStack {
  boost::context::stack_context allocate() { return StackPool::instance().take(); }
  void deallocate(boost::context::stack_context& stack) noexcept { StackPool::instance().give_back(stack); }
};

// ---- launch errors the runtime reports through cudaGetLastError --------------------

thread_local cudaError last_error = cudaSuccess;
thread_local std::string last_error_detail;

std::mutex attribute_mutex;
std::map<const void*, std::size_t>& dynamic_shared_limits() {
  static std::map<const void*, std::size_t> limits;
  return limits;
}

std::size_t dynamic_shared_limit(const void* kernel) {
  const std::lock_guard lock(attribute_mutex);
  const auto found = dynamic_shared_limits().find(kernel);
  return found == dynamic_shared_limits().end() ? kDefaultDynamicSharedLimit : found->second;
}

int fail_launch(cudaError error, std::string detail) {
  last_error = error;
  last_error_detail = std::move(detail);
  return error;
}

std::string thread_range(int first, int last) {
  return first == last ? "thread " + std::to_string(first)
                       : "threads " + std::to_string(first) + "-" + std::to_string(last);
}

std::string strip_namespaces(std::string name) {
  for (const std::string prefix : {"attnbench::simulated::", "(anonymous namespace)::", "attnbench::"}) {
    for (std::size_t at = name.find(prefix); at != std::string::npos; at = name.find(prefix)) name.erase(at, prefix.size());
  }
  return name;
}

}  // namespace

std::string describe_pc(const void* pc, const char* indent) {
  std::string text;
  bool first = true;
  for (const SourceFrame& frame : source_frames(pc)) {
    text += indent;
    text += first ? "at " : "inlined into ";
    text += frame.location + " (" + strip_namespaces(frame.function) + ")\n";
    first = false;
  }
  return text;
}

std::string describe_thread(int linear) {
  return "thread " + std::to_string(linear) + " (warp " + std::to_string(linear / 32) + ", lane " +
         std::to_string(linear % 32) + ")";
}

// ---- the sanitizer switch ----------------------------------------------------------

namespace {
EnvironmentSwitch sanitizer_switch("ATTNBENCH_CUDASIM_SANITIZER", true);
}

bool sanitizer_enabled() { return sanitizer_switch.enabled(); }
void set_sanitizer_enabled(bool enabled) { sanitizer_switch.set(enabled); }

// ---- the CTA order -----------------------------------------------------------------

namespace {
std::atomic<std::int64_t> order_seed{-1};  // -1: not read from the environment yet
}

std::uint64_t cta_order_seed() {
  std::int64_t seed = order_seed.load(std::memory_order_relaxed);
  if (seed < 0) {
    const char* value = std::getenv("ATTNBENCH_CUDASIM_CTA_ORDER");
    seed = value ? static_cast<std::int64_t>(std::strtoull(value, nullptr, 10) & 0x7fffffffffffffffull) : 0;
    order_seed.store(seed);
  }
  return static_cast<std::uint64_t>(seed);
}
void set_cta_order_seed(std::uint64_t seed) { order_seed.store(static_cast<std::int64_t>(seed & 0x7fffffffffffffffull)); }

std::vector<std::int64_t> cta_order(std::int64_t blocks, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(blocks));
  for (std::int64_t b = 0; b < blocks; ++b) order[static_cast<std::size_t>(b)] = b;
  std::uint64_t state = seed;
  const auto next = [&state] {  // SplitMix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  if (seed == 0) return order;
  for (std::int64_t i = blocks - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

// ---- findings ----------------------------------------------------------------------

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::shuffle:
      return "shfl.sync";
    case CollectiveKind::warp_sync:
      return "bar.warp.sync (__syncwarp)";
    case CollectiveKind::ldmatrix:
      return "ldmatrix";
    case CollectiveKind::stmatrix:
      return "stmatrix";
    case CollectiveKind::mma:
      return "mma.sync";
    case CollectiveKind::elect:
      return "elect.sync";
    case CollectiveKind::wgmma_fence:
      return "wgmma.fence";
    case CollectiveKind::wgmma_mma:
      return "wgmma.mma_async";
    case CollectiveKind::wgmma_commit:
      return "wgmma.commit_group";
    case CollectiveKind::wgmma_wait:
      return "wgmma.wait_group";
    case CollectiveKind::setmaxnreg:
      return "setmaxnreg";
  }
  return "?";
}

void report(SimThread* thread, std::string kind, std::string details, const void* pc, bool fatal,
            const void* related_pc, std::string related_label) {
  Finding finding;
  finding.kind = std::move(kind);
  finding.details = std::move(details);
  finding.pc = pc;
  finding.related_pc = related_pc;
  finding.related_label = std::move(related_label);
  if (thread) {
    finding.has_block = finding.has_thread = true;
    finding.block = thread->identity.block_index;
    finding.thread = thread->identity.thread_index;
    finding.warp = thread->warp;
    finding.lane = thread->lane;
  }
  Cta* cta = thread ? thread->cta : (current_thread ? current_thread->cta : nullptr);
  if (!cta) throw std::logic_error("cudasim: a finding outside any CTA");
  cta->launch().add(std::move(finding), fatal);
  if (fatal) cta->abandon();
}

void report_fatal(SimThread* thread, std::string kind, std::string details, const void* pc) {
  report(thread, std::move(kind), std::move(details), pc, true);
  std::abort();  // report() does not return for a fatal finding
}

Launch::Launch(const GridLaunch& configuration, const std::function<void()>& body, DeviceMemoryMap memory,
               bool sanitize)
    : configuration_(configuration), body_(body), memory_(std::move(memory)), sanitize_(sanitize) {
  if (const std::uint64_t seed = cta_order_seed(); seed != 0) {
    const dim3& grid = configuration.grid;
    order_ = cta_order(std::int64_t{grid.x} * grid.y * grid.z, seed);
  }
}

void Launch::add(Finding finding, bool fatal) {
  const std::lock_guard lock(mutex_);
  if (fatal) aborted_.store(true);
  for (const Finding& known : findings_) {
    if (known.kind == finding.kind && known.pc == finding.pc) {
      ++suppressed_;
      return;
    }
  }
  constexpr std::size_t kMaxFindings = 16;
  if (findings_.size() >= kMaxFindings) {
    ++suppressed_;
    return;
  }
  findings_.push_back(std::move(finding));
}

std::int64_t Launch::next_block() {
  if (aborted()) return -1;
  const dim3& grid = configuration_.grid;
  const std::int64_t blocks = std::int64_t{grid.x} * grid.y * grid.z;
  const std::int64_t next = next_block_.fetch_add(1);
  if (next >= blocks) return -1;
  return order_.empty() ? next : order_[static_cast<std::size_t>(next)];
}

void Launch::join_worker() {
  const std::lock_guard lock(workers_mutex_);
  ++workers_;
}

// Every event wakes the waiting workers to look again; they count as waiting
// only from their next wait on.
void Launch::leave_worker() {
  const std::lock_guard lock(workers_mutex_);
  --workers_;
  ++events_;
  waiting_workers_ = 0;
  workers_changed_.notify_all();
}

std::uint64_t Launch::events() {
  const std::lock_guard lock(workers_mutex_);
  return events_;
}

void Launch::note_event() {
  const std::lock_guard lock(workers_mutex_);
  ++events_;
  waiting_workers_ = 0;
  workers_changed_.notify_all();
}

bool Launch::wait_for_events(std::uint64_t seen) {
  std::unique_lock lock(workers_mutex_);
  if (deadlocked_) return false;
  if (events_ != seen || aborted()) return true;
  if (++waiting_workers_ == workers_) {
    deadlocked_ = true;
    workers_changed_.notify_all();
    return false;
  }
  workers_changed_.wait(lock, [&] { return deadlocked_ || events_ != seen; });
  return !deadlocked_;
}

std::string Launch::findings_text() const {
  const std::lock_guard lock(mutex_);
  if (findings_.empty()) return {};
  const std::string kernel = strip_namespaces(function_name(configuration_.kernel));
  std::string text = "cudasim sanitizer: " + std::to_string(findings_.size() + suppressed_) + " finding" +
                     (findings_.size() + suppressed_ == 1 ? "" : "s") + " in kernel " + kernel + "\n";
  for (const Finding& f : findings_) {
    text += "- " + f.kind + ": " + f.details + "\n";
    if (f.has_block) {
      text += "    CTA (" + std::to_string(f.block.x) + "," + std::to_string(f.block.y) + "," +
              std::to_string(f.block.z) + ")";
      if (f.has_thread) {
        text += ", thread (" + std::to_string(f.thread.x) + "," + std::to_string(f.thread.y) + "," +
                std::to_string(f.thread.z) + ") (warp " + std::to_string(f.warp) + ", lane " +
                std::to_string(f.lane) + ")";
      }
      text += "\n";
    }
    if (f.pc) text += describe_pc(f.pc, "    ");
    if (f.related_pc) text += "    " + f.related_label + ":\n" + describe_pc(f.related_pc, "      ");
  }
  if (suppressed_ > 0) {
    text += "(" + std::to_string(suppressed_) + " more at the same places, or beyond the first 16, not shown)\n";
  }
  return text;
}

// ---- the CTA scheduler -------------------------------------------------------------

Cta::Cta(Launch& launch) : launch_(launch) {
  const dim3& block = launch.configuration().block;
  const int count = static_cast<int>(block.x * block.y * block.z);
  threads_.resize(static_cast<std::size_t>(count));
  warps_.resize(static_cast<std::size_t>((count + 31) / 32));
  warpgroups_.resize(static_cast<std::size_t>((count + 127) / 128));
}

Cta::~Cta() {
  // A CTA still waiting when its launch ends (abandoned): its threads are unwound.
  abandoned_ = true;
  for (SimThread& t : threads_) t.fiber = boost::context::fiber();
}

void Cta::start_threads(uint3 block) {
  const GridLaunch& configuration = launch_.configuration();
  const dim3& dim = configuration.block;
  block_ = block;
  linear_block_ = block.x + std::int64_t{configuration.grid.x} * (block.y + std::int64_t{configuration.grid.y} * block.z);
  acquired_.clear();
  finished_ = 0;
  abandoned_ = false;
  progress_ = 0;
  progress_at_last_time_out_ = ~std::uint64_t{0};
  fruitless_time_outs_ = 0;
  ready_.clear();
  for (WarpState& warp : warps_) warp = WarpState{};
  for (std::size_t g = 0; g < warpgroups_.size(); ++g) {
    warpgroups_[g] = WarpgroupState{};
    warpgroups_[g].index = static_cast<int>(g);
  }
  order_.begin_cta(thread_count());
  for (NamedBarrier& barrier : barriers_) {
    barrier = NamedBarrier{};
    barrier.released = order_.empty_clock();
  }
  mbarriers_.begin_cta();
  shared_.begin_cta(configuration.dynamic_shared_bytes, launch_.sanitize(), &order_);
  for (int linear = 0; linear < thread_count(); ++linear) {
    SimThread& t = thread(linear);
    t.identity = ThreadIdentity{uint3{static_cast<unsigned>(linear) % dim.x,
                                      static_cast<unsigned>(linear) / dim.x % dim.y,
                                      static_cast<unsigned>(linear) / (dim.x * dim.y)},
                                block, dim, configuration.grid};
    t.linear = linear;
    t.warp = linear / 32;
    t.lane = linear % 32;
    t.warpgroup = linear / 128;
    t.cta = this;
    t.state = ThreadState::ready;
    t.wait_pc = nullptr;
    t.wait_what = "";
    t.wait_mbarrier = 0;
    t.wait_timed_out = false;
    t.early_time_out_taken = false;
    t.wait_barrier = -1;
    t.wait_address = nullptr;
    t.wait_value = 0;
    t.poll_address = nullptr;
    t.poll_value = 0;
    t.barriers_joined = 0;
    t.open_group.clear();
    t.committed_groups.clear();
    t.wgmma = WgmmaThreadState{};
    t.bulk = BulkThreadState{};
    t.fiber = boost::context::fiber(std::allocator_arg, PooledStack{}, [this, &t](boost::context::fiber&& from) {
      keep_continuation(std::move(from));
      try {
        launch_.body()();
      } catch (const CtaAborted&) {
      } catch (const std::exception& error) {
        Finding finding;
        finding.kind = "kernel threw";
        finding.details = error.what();
        launch_.add(std::move(finding), true);
        abandoned_ = true;
      }
      finish_thread(t);
      return std::move(hand_over(&t));
    });
    ready_.push_back(&t);
  }
}

void Cta::finish_thread(SimThread& t) {
  t.state = ThreadState::finished;
  ++finished_;
  note_progress();
  if (abandoned_ || !launch_.sanitize()) return;
  std::size_t pending = t.open_group.size();
  const void* pc = t.open_group.empty() ? nullptr : t.open_group.front().pc;
  for (const auto& group : t.committed_groups) {
    pending += group.size();
    if (!pc && !group.empty()) pc = group.front().pc;
  }
  if (pending > 0) {
    report(&t, "cp.async still pending at thread exit",
           std::to_string(pending) +
               " asynchronous copies were never waited for (cp.async.wait_group/wait_all); their bytes never "
               "land. The first was issued here:",
           pc, false);
  }
  if (!t.wgmma.accumulators.empty()) {
    report(&t, "wgmma still in flight at thread exit",
           "a wgmma.mma_async was never covered by a wgmma.wait_group; its accumulators never land. It was issued "
           "here:",
           t.wgmma.accumulators.front().pc, false);
  }
  if (!t.bulk.open.empty() || t.bulk.read_complete < t.bulk.committed_count) {
    report(&t, "bulk copy still pending at thread exit",
           "a TMA store was never committed and waited for (cp.async.bulk.commit_group, "
           "cp.async.bulk.wait_group[.read]) before the thread exited, which may still be reading shared memory. "
           "The first was issued here:",
           t.bulk.first_pc, false);
  }
  // Global writes of bulk copies whose reads are done still complete.
  for (auto& group : t.bulk.committed) {
    for (const BulkStore& store : group) complete_bulk_store(t, store);
  }
  t.bulk.committed.clear();
}

// When every thread has finished: asynchronous copies nobody waited for.
void Cta::finish_cta() {
  if (abandoned_ || !launch_.sanitize()) return;
  for (Mbarrier& barrier : mbarriers_.all()) {
    if (!barrier.loads.empty()) {
      report(barrier.loads.front().issuer, "TMA load never waited for",
             std::to_string(barrier.loads.size()) + " TMA load(s) completing on the mbarrier at " +
                 shared_.describe_address(barrier.address) +
                 " never landed: no thread waited for the phase they complete. The first was issued here:",
             barrier.loads.front().pc, false);
    }
  }
}

bool Cta::run(uint3 block) {
  start_threads(block);
  return run_threads();
}

bool Cta::resume() {
  wake_pollers();
  return run_threads();
}

bool Cta::any_poller() const {
  return std::any_of(threads_.begin(), threads_.end(),
                     [](const SimThread& t) { return t.state == ThreadState::at_global_poll; });
}

bool Cta::can_resume() const {
  return std::any_of(threads_.begin(), threads_.end(), [](const SimThread& t) {
    return t.state == ThreadState::at_global_poll &&
           std::atomic_ref<int>(*const_cast<int*>(t.wait_address)).load(std::memory_order_acquire) != t.wait_value;
  });
}

bool Cta::wake_pollers() {
  bool any = false;
  for (SimThread& t : threads_) {
    if (t.state != ThreadState::at_global_poll ||
        std::atomic_ref<int>(*const_cast<int*>(t.wait_address)).load(std::memory_order_acquire) == t.wait_value) {
      continue;
    }
    make_ready(t);
    note_progress();
    any = true;
  }
  return any;
}

void Cta::report_global_deadlock() {
  diagnose_stall();
  for (SimThread& t : threads_) t.fiber = boost::context::fiber();
}

bool Cta::run_threads() {
  // Threads hand over to each other; control comes back here when none is ready.
  for (;;) {
    while (!ready_.empty() && !abandoned_) {
      SimThread* t = ready_.front();
      ready_.pop_front();
      t->state = ThreadState::running;
      current_thread = t;
      current_identity = &t->identity;
      switcher_ = nullptr;
      keep_continuation(std::move(t->fiber).resume());
      current_thread = nullptr;
      current_identity = nullptr;
      if (launch_.aborted()) abandoned_ = true;
    }
    if (abandoned_ || finished_ == thread_count()) break;
    if (wake_pollers()) continue;
    if (any_poller()) return false;  // set aside until the word it polls changes
    if (!time_out_waits()) break;
  }
  if (!abandoned_ && finished_ < thread_count()) diagnose_stall();
  if (finished_ == thread_count()) finish_cta();
  // Suspended fibers (an abandoned CTA) are unwound as they are destroyed.
  for (SimThread& t : threads_) t.fiber = boost::context::fiber();
  return true;
}

bool Cta::time_out_waits() {
  if (progress_ != progress_at_last_time_out_) {
    fruitless_time_outs_ = 0;
  } else if (++fruitless_time_outs_ >= kFruitlessTimeOuts) {
    return false;
  }
  bool any = false;
  for (SimThread& t : threads_) {
    if (t.state != ThreadState::at_mbarrier) continue;
    // No longer a waiter: a phase that completes before the thread runs again must not make it ready twice.
    if (Mbarrier* barrier = mbarriers_.find(t.wait_mbarrier)) std::erase(barrier->waiters, &t);
    t.wait_timed_out = true;
    make_ready(t);
    any = true;
  }
  progress_at_last_time_out_ = progress_;
  return any;
}

boost::context::fiber&& Cta::hand_over(SimThread* thread) {
  switcher_ = thread;
  if (!abandoned_ && !ready_.empty() && !launch_.aborted()) {
    SimThread* next = ready_.front();
    ready_.pop_front();
    next->state = ThreadState::running;
    current_thread = next;
    current_identity = &next->identity;
    return std::move(next->fiber);
  }
  current_thread = nullptr;
  current_identity = nullptr;
  return std::move(scheduler_);
}

void Cta::keep_continuation(boost::context::fiber&& from) {
  if (switcher_) {
    switcher_->fiber = std::move(from);
  } else {
    scheduler_ = std::move(from);
  }
}

void Cta::suspend(SimThread& t) {
  keep_continuation(std::move(hand_over(&t)).resume());
  current_thread = &t;
  current_identity = &t.identity;
  if (abandoned_) throw CtaAborted{};
}

void Cta::make_ready(SimThread& t) {
  t.state = ThreadState::ready;
  ready_.push_back(&t);
}

void Cta::abandon() {
  abandoned_ = true;
  throw CtaAborted{};
}

void Cta::arrive_at_barrier(SimThread& t, int id, int count, bool wait, const void* pc) {
  const char* name = wait ? "bar.sync" : "bar.arrive";
  if (id < 0 || id > 15) {
    report_fatal(&t, "invalid barrier", std::string(name) + " names barrier " + std::to_string(id) +
                                            "; a CTA has barriers 0 to 15",
                 pc);
  }
  const bool whole_cta = count == 0;
  if (!whole_cta && (count % 32 != 0 || count > thread_count() + 31 - (thread_count() - 1) % 32)) {
    report_fatal(&t, "invalid barrier",
                 std::string(name) + " " + std::to_string(id) + ", " + std::to_string(count) +
                     ": the thread count must be a non-zero multiple of 32 and at most the CTA's threads (" +
                     std::to_string(thread_count()) + ")",
                 pc);
  }
  const int expected = whole_cta ? thread_count() : count;
  NamedBarrier& barrier = barriers_[static_cast<std::size_t>(id)];
  if (barrier.arrived > 0) {
    if (barrier.whole_cta && whole_cta && !same_source(barrier.pc, pc)) {
      report_fatal(&t, "divergent barrier",
                   "this thread reached __syncthreads here while " + std::to_string(barrier.arrived) +
                       " thread(s) of the CTA (thread " + std::to_string(barrier.participants.back()) +
                       " among them) wait at another:\n" + describe_pc(barrier.pc, "      "),
                   pc);
    }
    if (barrier.expected != expected) {
      report_fatal(&t, "divergent barrier",
                   std::string(name) + " " + std::to_string(id) + " for " + std::to_string(expected) +
                       " threads while " + std::to_string(barrier.arrived) + " thread(s) (thread " +
                       std::to_string(barrier.participants.back()) + " among them) arrived at it for " +
                       std::to_string(barrier.expected) + ":\n" + describe_pc(barrier.pc, "      "),
                   pc);
    }
  } else {
    barrier.expected = expected;
    barrier.whole_cta = whole_cta;
    barrier.pc = pc;
  }
  if (t.barriers_joined >> id & 1u) {
    report_fatal(&t, "barrier arrived at twice",
                 "this thread arrived at barrier " + std::to_string(id) +
                     " again before it completed (a bar.arrive followed by another bar instruction on the same "
                     "barrier before the other threads arrived)",
                 pc);
  }
  t.barriers_joined = static_cast<std::uint16_t>(t.barriers_joined | 1u << id);
  if (launch_.sanitize()) order_.release(t.linear, barrier.released);
  barrier.participants.push_back(t.linear);
  if (wait) barrier.waiting.push_back(t.linear);
  if (++barrier.arrived < barrier.expected) {
    if (!wait) return;
    t.state = ThreadState::at_barrier;
    t.wait_pc = pc;
    t.wait_what = whole_cta ? "__syncthreads" : "bar.sync";
    t.wait_barrier = id;
    suspend(t);
    return;
  }
  // The last arrival: every access before an arrival is ordered before every access after a bar.sync.
  for (const int linear : barrier.participants) {
    SimThread& other = thread(linear);
    other.barriers_joined = static_cast<std::uint16_t>(other.barriers_joined & ~(1u << id));
  }
  for (const int linear : barrier.waiting) {
    if (launch_.sanitize()) order_.acquire(linear, barrier.released);
    if (linear != t.linear) make_ready(thread(linear));
  }
  barrier.arrived = 0;
  barrier.participants.clear();
  barrier.waiting.clear();
  std::fill(barrier.released.begin(), barrier.released.end(), 0);
  note_progress();
}

std::string Cta::describe_wait(const SimThread& t) {
  if (t.state == ThreadState::at_barrier && t.wait_barrier > 0) {
    const NamedBarrier& barrier = barriers_[static_cast<std::size_t>(t.wait_barrier)];
    return "bar.sync " + std::to_string(t.wait_barrier) + ", " + std::to_string(barrier.expected) + " (" +
           std::to_string(barrier.arrived) + " arrived)";
  }
  if (t.state == ThreadState::at_mbarrier) {
    std::string text = std::string(t.wait_what) + " on the mbarrier at " + shared_.describe_address(t.wait_mbarrier);
    if (const Mbarrier* barrier = mbarriers_.find(t.wait_mbarrier)) {
      text += " (phase " + std::to_string(barrier->phase) + ": " + std::to_string(barrier->pending) + " of " +
              std::to_string(barrier->expected) + " arrivals pending, tx-count " + std::to_string(barrier->tx) + ")";
    }
    return text;
  }
  if (t.state == ThreadState::at_global_poll) {
    return std::string(t.wait_what) + " of the word at " + hex(reinterpret_cast<std::uintptr_t>(t.wait_address)) +
           " (it reads " + std::to_string(t.wait_value) + " and waits for another value)";
  }
  return t.wait_what;
}

// No thread can run and some have not finished: say where each one is.
void Cta::diagnose_stall() {
  std::string where;
  int first = 0;
  const auto same = [](const SimThread& a, const SimThread& b) {
    if (a.state != b.state) return false;
    if (a.state == ThreadState::finished) return true;
    return a.wait_pc == b.wait_pc && (a.state != ThreadState::at_mbarrier || a.wait_mbarrier == b.wait_mbarrier) &&
           (a.state != ThreadState::at_barrier || a.wait_barrier == b.wait_barrier) &&
           (a.state != ThreadState::at_global_poll || a.wait_address == b.wait_address);
  };
  bool at_barrier = false, at_mbarrier = false, at_global_poll = false;
  for (int i = 1; i <= thread_count(); ++i) {
    if (i < thread_count() && same(thread(i), thread(first))) continue;
    const SimThread& t = thread(first);
    where += "      " + thread_range(first, i - 1) + ": ";
    if (t.state == ThreadState::finished) {
      where += "finished\n";
    } else {
      at_barrier = at_barrier || t.state == ThreadState::at_barrier;
      at_mbarrier = at_mbarrier || t.state == ThreadState::at_mbarrier;
      at_global_poll = at_global_poll || t.state == ThreadState::at_global_poll;
      where += "waiting at " + describe_wait(t) + "\n" + describe_pc(t.wait_pc, "        ");
    }
    first = i;
  }
  std::string why;
  for (const Mbarrier& barrier : mbarriers_.all()) {
    if (!barrier.valid || barrier.waiters.empty() || barrier.pending != 0 || barrier.tx == 0) continue;
    why += "    the mbarrier at " + shared_.describe_address(barrier.address) + " has all " +
           std::to_string(barrier.expected) + " arrivals of phase " + std::to_string(barrier.phase) +
           " but its tx-count is " + std::to_string(barrier.tx) + ": " +
           (barrier.tx > 0 ? std::to_string(barrier.tx) + " bytes announced by expect_tx were never delivered"
                           : std::to_string(-barrier.tx) + " bytes more were delivered than expect_tx announced") +
           "\n";
  }
  bool at_warpgroup_collective = false;
  for (const SimThread& t : threads_) {
    const WarpgroupState& group = warpgroups_[static_cast<std::size_t>(t.warpgroup)];
    if (t.state == ThreadState::at_collective && group.arrived > 0 && group.pc == t.wait_pc) {
      at_warpgroup_collective = true;
    }
  }
  const std::string kind = at_global_poll ? "global-memory wait that can never end"
                           : at_mbarrier                ? "mbarrier phase that can never complete"
                           : at_barrier              ? "barrier not reached by every thread"
                           : at_warpgroup_collective ? "warpgroup collective with missing threads"
                                                     : "warp collective with missing lanes";
  Finding finding;
  finding.kind = kind;
  finding.details = std::string(at_global_poll ? "the CTA waits for a word of global memory that no CTA of the launch "
                                                 "will change: every other CTA has finished or waits too (deadlock); "
                                                 "its threads:\n"
                                               : "the CTA can make no progress (deadlock); its threads:\n") +
                    where + why;
  finding.has_block = true;
  finding.block = block_;
  launch_.add(std::move(finding), true);
  abandoned_ = true;
}

// ---- warp collectives --------------------------------------------------------------

namespace {
// The calling thread waits for the rest of its collective; the last to arrive runs it.
void wait_at_collective(Cta& cta, SimThread& t, CollectiveKind kind, const void* pc) {
  t.state = ThreadState::at_collective;
  t.wait_pc = pc;
  t.wait_what = collective_name(kind);
  cta.suspend(t);
}
}  // namespace

SimThread& lane_thread(Cta& cta, int warp, int lane) { return cta.thread(32 * warp + lane); }
SimThread& warpgroup_thread(Cta& cta, int warpgroup, int thread) { return cta.thread(128 * warpgroup + thread); }

void warp_collective(CollectiveKind kind, std::uint32_t qualifiers, unsigned mask, bool aligned, const void* pc,
                     const void* input, void* output, CollectiveCompletion completion) {
  SimThread& t = *current_thread;
  Cta& cta = *t.cta;
  WarpState& warp = cta.warp(t.warp);
  const unsigned bit = 1u << t.lane;
  if ((mask & bit) == 0) {
    report_fatal(&t, "collective outside its member mask",
                 std::string(collective_name(kind)) + " with member mask 0x" + [&] {
                   char text[16];
                   std::snprintf(text, sizeof text, "%08x", mask);
                   return std::string(text);
                 }() + " does not name the executing lane " + std::to_string(t.lane),
                 pc);
  }
  if (warp.arrived != 0) {
    const bool agrees = warp.kind == kind && warp.qualifiers == qualifiers && warp.mask == mask &&
                        (!aligned || same_source(warp.pc, pc));
    if (!agrees) {
      report_fatal(&t, "divergent warp collective",
                   "this lane reached " + std::string(collective_name(kind)) + " here while lanes of its warp wait at " +
                       collective_name(warp.kind) + (warp.mask != mask ? " with another member mask" : "") +
                       (warp.qualifiers != qualifiers ? " with other qualifiers" : "") + ":\n" +
                       describe_pc(warp.pc, "      "),
                   pc);
    }
  } else {
    warp.kind = kind;
    warp.qualifiers = qualifiers;
    warp.mask = mask;
    warp.pc = pc;
    warp.completion = completion;
  }
  warp.inputs[static_cast<std::size_t>(t.lane)] = input;
  warp.outputs[static_cast<std::size_t>(t.lane)] = output;
  warp.arrived |= bit;
  if (warp.arrived != mask) {
    wait_at_collective(cta, t, kind, pc);
    return;
  }
  warp.completion(warp, cta);
  warp.arrived = 0;
  for (int lane = 0; lane < 32; ++lane) {
    if (lane != t.lane && (mask >> lane & 1u)) cta.make_ready(lane_thread(cta, t.warp, lane));
  }
  cta.note_progress();
}

void warpgroup_collective(CollectiveKind kind, std::uint64_t qualifiers, const void* pc, const void* input, void* output,
                          WarpgroupCompletion completion) {
  SimThread& t = *current_thread;
  Cta& cta = *t.cta;
  WarpgroupState& group = cta.warpgroup(t.warpgroup);
  if (128 * (t.warpgroup + 1) > cta.thread_count()) {
    report_fatal(&t, "warpgroup collective outside a warpgroup",
                 std::string(collective_name(kind)) + " needs the four warps of a warpgroup; the CTA's " +
                     std::to_string(cta.thread_count()) + " threads leave warpgroup " +
                     std::to_string(t.warpgroup) + " incomplete",
                 pc);
  }
  if (group.arrived != 0) {
    if (group.kind != kind || group.qualifiers != qualifiers || !same_source(group.pc, pc)) {
      report_fatal(&t, "divergent warpgroup collective",
                   "this thread reached " + std::string(collective_name(kind)) + " here while threads of warpgroup " +
                       std::to_string(t.warpgroup) + " wait at " + collective_name(group.kind) +
                       (group.kind == kind && group.qualifiers != qualifiers ? " with other qualifiers" : "") +
                       ":\n" + describe_pc(group.pc, "      "),
                   pc);
    }
  } else {
    group.kind = kind;
    group.qualifiers = qualifiers;
    group.pc = pc;
    group.completion = completion;
  }
  const auto index = static_cast<std::size_t>(t.linear % 128);
  group.inputs[index] = input;
  group.outputs[index] = output;
  if (++group.arrived < 128) {
    wait_at_collective(cta, t, kind, pc);
    return;
  }
  group.completion(group, cta);
  group.arrived = 0;
  for (int other = 0; other < 128; ++other) {
    SimThread& member = warpgroup_thread(cta, t.warpgroup, other);
    if (&member != &t) cta.make_ready(member);
  }
  cta.note_progress();
}

// ---- grids -------------------------------------------------------------------------

const DeviceMemoryMap& current_device_memory() { return current_thread->cta->launch().memory(); }
bool sanitizing() { return current_thread && current_thread->cta->launch().sanitize(); }

int run_grid(const GridLaunch& configuration, const std::function<void()>& body) {
  const dim3& grid = configuration.grid;
  const dim3& block = configuration.block;
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || threads > 1024 || block.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    return fail_launch(cudaErrorInvalidConfiguration,
                       "grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," +
                           std::to_string(grid.z) + ") x block (" + std::to_string(block.x) + "," +
                           std::to_string(block.y) + "," + std::to_string(block.z) +
                           ") is outside the limits (blocks of 1 to 1024 threads, z at most 64; grid x < 2^31, "
                           "y and z at most 65535)");
  }
  const std::size_t limit = dynamic_shared_limit(configuration.kernel);
  if (configuration.dynamic_shared_bytes > limit) {
    return fail_launch(cudaErrorInvalidValue,
                       "the launch asks for " + std::to_string(configuration.dynamic_shared_bytes) +
                           " bytes of dynamic shared memory; this kernel allows " + std::to_string(limit) +
                           (limit == kDefaultDynamicSharedLimit
                                ? " (raise it with cudaFuncSetAttribute(kernel, "
                                  "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes))"
                                : " (its cudaFuncAttributeMaxDynamicSharedMemorySize)"));
  }
  if (current_thread) throw std::logic_error("cudasim: a kernel launched a kernel (dynamic parallelism)");

  Launch launch(configuration, body, DeviceMemoryRegistry::instance().snapshot(), sanitizer_enabled());
  // A host thread starts CTAs until none is left; a CTA that waits on global
  // memory is set aside, and run on once the word it polls changes.
  const auto run_blocks = [&launch] {
    const dim3& g = launch.configuration().grid;
    std::unique_ptr<Cta> spare;
    std::vector<std::unique_ptr<Cta>> waiting;
    for (;;) {
      const std::uint64_t seen = launch.events();
      if (const std::int64_t b = launch.next_block(); b >= 0) {
        if (!spare) spare = std::make_unique<Cta>(launch);
        if (!spare->run(uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
                              static_cast<unsigned>(b / (std::int64_t{g.x} * g.y))})) {
          waiting.push_back(std::move(spare));
        }
        launch.note_event();
        continue;
      }
      if (waiting.empty() || launch.aborted()) break;
      bool resumed = false;
      for (auto cta = waiting.begin(); cta != waiting.end();) {
        if (!(*cta)->can_resume()) {
          ++cta;
          continue;
        }
        resumed = true;
        if (!(*cta)->resume()) {
          ++cta;
          continue;
        }
        spare = std::move(*cta);
        cta = waiting.erase(cta);
      }
      if (resumed) {
        launch.note_event();
      } else if (!launch.wait_for_events(seen)) {
        for (const auto& cta : waiting) cta->report_global_deadlock();
        break;
      }
    }
    launch.leave_worker();
  };
  const std::int64_t blocks = std::int64_t{grid.x} * grid.y * grid.z;
  const auto workers = static_cast<int>(std::clamp<std::int64_t>(configuration.host_threads, 1, blocks));
  for (int w = 0; w < workers; ++w) launch.join_worker();
  std::vector<std::thread> helpers;
  for (int w = 1; w < workers; ++w) helpers.emplace_back(run_blocks);
  run_blocks();
  for (std::thread& helper : helpers) helper.join();

  const std::string findings = launch.findings_text();
  if (!findings.empty()) throw attnbench::DeviceError(findings, false);
  return cudaSuccess;
}

cudaError set_function_attribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) {
    return static_cast<cudaError>(fail_launch(cudaErrorInvalidValue, "cudasim knows no other function attribute"));
  }
  if (value < 0 || static_cast<std::size_t>(value) > kMaxSharedBytesPerBlock) {
    return static_cast<cudaError>(fail_launch(
        cudaErrorInvalidValue, std::to_string(value) + " bytes of dynamic shared memory is more than the " +
                                   std::to_string(kMaxSharedBytesPerBlock) + " an sm_90 block can have"));
  }
  const std::lock_guard lock(attribute_mutex);
  dynamic_shared_limits()[kernel] = static_cast<std::size_t>(value);
  return cudaSuccess;
}

cudaError take_last_error() {
  const cudaError error = last_error;
  last_error = cudaSuccess;
  return error;
}
cudaError peek_last_error() { return last_error; }
const std::string& last_error_text() { return last_error_detail; }

}  // namespace cudasim
