#include "harness/cudasim/execution.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <thread>

#include <boost/context/stack_context.hpp>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/symbolize.hpp"
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

}  // namespace

// ---- the sanitizer switch ----------------------------------------------------------

namespace {
std::atomic<int> sanitizer_setting{-1};  // -1: not decided yet
}

bool sanitizer_enabled() {
  int setting = sanitizer_setting.load();
  if (setting < 0) {
    const char* value = std::getenv("ATTNBENCH_CUDASIM_SANITIZER");
    setting = value && (std::string(value) == "0" || std::string(value) == "off") ? 0 : 1;
    sanitizer_setting.store(setting);
  }
  return setting == 1;
}
void set_sanitizer_enabled(bool enabled) { sanitizer_setting.store(enabled ? 1 : 0); }

// ---- findings ----------------------------------------------------------------------

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::shuffle:
      return "shfl.sync";
    case CollectiveKind::warp_sync:
      return "bar.warp.sync (__syncwarp)";
    case CollectiveKind::ldmatrix:
      return "ldmatrix";
    case CollectiveKind::mma:
      return "mma.sync";
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
    : configuration_(configuration), body_(body), memory_(std::move(memory)), sanitize_(sanitize) {}

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
  return next < blocks ? next : -1;
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
}

void Cta::start_threads(uint3 block) {
  const GridLaunch& configuration = launch_.configuration();
  const dim3& dim = configuration.block;
  block_ = block;
  finished_ = 0;
  barrier_arrived_ = 0;
  barrier_pc_ = nullptr;
  abandoned_ = false;
  ready_.clear();
  for (WarpState& warp : warps_) warp = WarpState{};
  shared_.begin_cta(configuration.dynamic_shared_bytes, launch_.sanitize());
  for (int linear = 0; linear < thread_count(); ++linear) {
    SimThread& t = thread(linear);
    t.identity = ThreadIdentity{uint3{static_cast<unsigned>(linear) % dim.x,
                                      static_cast<unsigned>(linear) / dim.x % dim.y,
                                      static_cast<unsigned>(linear) / (dim.x * dim.y)},
                                block, dim, configuration.grid};
    t.linear = linear;
    t.warp = linear / 32;
    t.lane = linear % 32;
    t.cta = this;
    t.state = ThreadState::ready;
    t.wait_pc = nullptr;
    t.wait_what = "";
    t.open_group.clear();
    t.committed_groups.clear();
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
}

void Cta::run(uint3 block) {
  start_threads(block);
  // Threads hand over to each other; control comes back here when none is ready.
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
  if (!abandoned_ && finished_ < thread_count()) diagnose_stall();
  // Suspended fibers (an abandoned CTA) are unwound as they are destroyed.
  for (SimThread& t : threads_) t.fiber = boost::context::fiber();
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

void Cta::arrive_at_barrier(SimThread& t, const void* pc) {
  if (barrier_arrived_ > 0 && !same_source(barrier_pc_, pc)) {
    SimThread* other = nullptr;
    for (SimThread& candidate : threads_) {
      if (candidate.state == ThreadState::at_barrier) other = &candidate;
    }
    report_fatal(&t, "divergent barrier",
                 "this thread reached __syncthreads here while " + std::to_string(barrier_arrived_) +
                     " thread(s) of the CTA (thread " + std::to_string(other ? other->linear : -1) +
                     " among them) wait at another:\n" + describe_pc(barrier_pc_, "      "),
                 pc);
  }
  barrier_pc_ = pc;
  if (++barrier_arrived_ < thread_count()) {
    t.state = ThreadState::at_barrier;
    t.wait_pc = pc;
    t.wait_what = "__syncthreads";
    suspend(t);
    return;
  }
  // The last arrival: every earlier access is now ordered before every later one.
  barrier_arrived_ = 0;
  barrier_pc_ = nullptr;
  shared_.next_interval();
  for (SimThread& other : threads_) {
    if (other.state == ThreadState::at_barrier) make_ready(other);
  }
}

// No thread can run and some have not finished: say where each one is.
void Cta::diagnose_stall() {
  std::string where;
  int first = 0;
  const auto same = [](const SimThread& a, const SimThread& b) {
    return a.state == b.state && a.wait_pc == b.wait_pc;
  };
  bool at_barrier = false;
  for (int i = 1; i <= thread_count(); ++i) {
    if (i < thread_count() && same(thread(i), thread(first))) continue;
    const SimThread& t = thread(first);
    where += "      " + thread_range(first, i - 1) + ": ";
    if (t.state == ThreadState::finished) {
      where += "finished\n";
    } else {
      at_barrier = at_barrier || t.state == ThreadState::at_barrier;
      where += std::string("waiting at ") + t.wait_what + "\n" + describe_pc(t.wait_pc, "        ");
    }
    first = i;
  }
  const std::string kind = at_barrier ? "barrier not reached by every thread" : "warp collective with missing lanes";
  Finding finding;
  finding.kind = kind;
  finding.details = "the CTA can make no progress (deadlock); its threads:\n" + where;
  finding.has_block = true;
  finding.block = block_;
  launch_.add(std::move(finding), true);
  abandoned_ = true;
}

// ---- warp collectives --------------------------------------------------------------

SimThread& lane_thread(Cta& cta, int warp, int lane) { return cta.thread(32 * warp + lane); }

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
    t.state = ThreadState::at_collective;
    t.wait_pc = pc;
    t.wait_what = collective_name(kind);
    cta.suspend(t);
    return;
  }
  warp.completion(warp, cta);
  warp.arrived = 0;
  for (int lane = 0; lane < 32; ++lane) {
    if (lane != t.lane && (mask >> lane & 1u)) cta.make_ready(lane_thread(cta, t.warp, lane));
  }
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
  const auto run_blocks = [&launch] {
    Cta cta(launch);
    const dim3& g = launch.configuration().grid;
    for (std::int64_t b = launch.next_block(); b >= 0; b = launch.next_block()) {
      cta.run(uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
                    static_cast<unsigned>(b / (std::int64_t{g.x} * g.y))});
    }
  };
  const std::int64_t blocks = std::int64_t{grid.x} * grid.y * grid.z;
  const auto workers = static_cast<int>(std::clamp<std::int64_t>(configuration.host_threads, 1, blocks));
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
