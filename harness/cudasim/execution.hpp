// The simulator's execution model (docs/cudasim.md): a grid's CTAs run on the
// host threads of the launch's stream, one CTA at a time per host thread; the
// threads of a CTA are fibers (Boost.Context, each on its own stack with a
// guard page) that run one at a time, each until it blocks (at a barrier, at
// a warp or warpgroup collective, at an mbarrier wait, or at its end) and
// hands over straight to the next thread that is ready; the CTA's scheduler
// only starts the first and takes over when none is ready.
//   - __syncthreads and bar.sync / bar.arrive are arrival-counting barriers
//     (sixteen per CTA) over every thread of the CTA or over the thread count
//     they name; the count-less form must be reached from one source location
//     (a place in the source, not an address: the host compiler may duplicate
//     a call that nvcc never would); reaching it from two places, or not at
//     all from a thread that exited, is reported.
//   - A warp collective (shfl.sync, bar.warp.sync, ldmatrix, stmatrix, mma,
//     elect.sync) is a rendezvous of the lanes its member mask names; a
//     warpgroup collective (the wgmma instructions, setmaxnreg) of the 128
//     threads of a warpgroup. The last thread to arrive executes it for all of
//     them. Threads must agree on the kind and the qualifiers, and for .aligned
//     instructions on the source location.
//   - A thread that spins on global memory (an ld.acquire.gpu that reads the
//     same word with the same value as its last one) waits
//     until the word changes. A CTA whose threads all wait, some of them so,
//     is set aside, and its host thread runs other CTAs of the launch (the
//     next ones to start, or those set aside whose word changed): one CTA may
//     wait for another to release it, in whatever order the CTAs start
//     (cta_order_switch.hpp).
//   - When no thread can run and some have not finished, the CTA is
//     deadlocked: the report lists every thread's wait point; so is a launch
//     whose every unfinished CTA waits on global memory nobody will change.
// Shared memory is one window per CTA (shared_memory.hpp); every access to it
// and to global memory is checked (docs/cudasim.md, "Sanitizer"), shared
// accesses against the CTA's happens-before (happens_before.hpp).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/context/fiber.hpp>

#include "harness/cudasim/async_state.hpp"
#include "harness/cudasim/device_memory.hpp"
#include "harness/cudasim/runtime_api.hpp"

namespace cudasim {

class Cta;
class Launch;

enum class ThreadState { ready, running, at_barrier, at_collective, at_mbarrier, at_global_poll, finished };

struct SimThread {
  ThreadIdentity identity{};
  int linear = 0;  // threadIdx.x + blockDim.x·(threadIdx.y + blockDim.y·threadIdx.z)
  int warp = 0, lane = 0;
  int warpgroup = 0;
  Cta* cta = nullptr;
  boost::context::fiber fiber;  // the thread while it is suspended (empty while it runs)
  ThreadState state = ThreadState::ready;
  const void* wait_pc = nullptr;  // where it waits (at_barrier, at_collective, at_mbarrier) or ended
  const char* wait_what = "";
  std::uint32_t wait_mbarrier = 0;  // at_mbarrier: the object's shared address
  bool wait_timed_out = false;      // at_mbarrier: woken by the time limit, not by the phase
  bool early_time_out_taken = false;  // its last try_wait timed out early (time_out_switch.hpp)
  int wait_barrier = -1;            // at_barrier: the barrier's id
  // at_global_poll: the word it polls and the value it read (it waits for another).
  const int* wait_address = nullptr;
  int wait_value = 0;
  // Its last ld.acquire.gpu: reading the same word's same value again is a spin-wait.
  const int* poll_address = nullptr;
  int poll_value = 0;
  std::uint16_t barriers_joined = 0;  // named barriers (bit per id) it arrived at that have not completed
  std::vector<PendingCopy> open_group;                     // issued, not yet committed
  std::deque<std::vector<PendingCopy>> committed_groups;  // oldest first
  WgmmaThreadState wgmma;
  BulkThreadState bulk;
};

// The simulated thread running on this host thread (null outside kernels).
extern thread_local SimThread* current_thread;

// ---- reports ---------------------------------------------------------------------

// A sanitizer finding. Fatal ones (out-of-bounds or misaligned accesses,
// divergent barriers and collectives, deadlocks) end the launch at once; the
// others are collected (once per kind and program counter) and reported when
// the launch ends. Either way the launch then fails with a DeviceError.
struct Finding {
  std::string kind;     // "shared memory race", "out-of-bounds global access", …
  std::string details;  // what happened, in words
  const void* pc = nullptr;
  const void* related_pc = nullptr;  // the other access of a race, the cp.async of an in-flight byte
  std::string related_label;         // "the write", …
  bool has_block = false, has_thread = false;
  uint3 block{}, thread{};
  int warp = 0, lane = 0;
};

// Records a finding of `thread` (or of the CTA as a whole when thread is null).
// A fatal one unwinds the calling simulated thread and stops the launch.
void report(SimThread* thread, std::string kind, std::string details, const void* pc, bool fatal,
            const void* related_pc = nullptr, std::string related_label = {});
[[noreturn]] void report_fatal(SimThread* thread, std::string kind, std::string details, const void* pc);

// Thrown inside a simulated thread to unwind it once its CTA is being abandoned.
struct CtaAborted {};

// ---- warp collectives --------------------------------------------------------------

enum class CollectiveKind {
  shuffle, warp_sync, ldmatrix, stmatrix, mma, elect,                           // warp
  wgmma_fence, wgmma_mma, wgmma_commit, wgmma_wait, setmaxnreg                   // warpgroup
};
const char* collective_name(CollectiveKind kind);

struct WarpState;
// Runs the collective for every lane of `warp.mask`, reading each lane's
// input and writing its output (both of the type the collective's caller chose).
using CollectiveCompletion = void (*)(WarpState& warp, Cta& cta);

struct WarpState {
  CollectiveKind kind{};
  const void* pc = nullptr;
  std::uint32_t qualifiers = 0;
  unsigned mask = 0;
  unsigned arrived = 0;
  CollectiveCompletion completion = nullptr;
  std::array<const void*, 32> inputs{};
  std::array<void*, 32> outputs{};
};

// The same for the 128 threads of a warpgroup (inputs and outputs by thread
// of the warpgroup, warp-major).
struct WarpgroupState;
using WarpgroupCompletion = void (*)(WarpgroupState& group, Cta& cta);
struct WarpgroupState {
  int index = 0;
  CollectiveKind kind{};
  const void* pc = nullptr;
  std::uint64_t qualifiers = 0;
  int arrived = 0;
  WarpgroupCompletion completion = nullptr;
  std::array<const void*, 128> inputs{};
  std::array<void*, 128> outputs{};
  // The wgmma agent (its clock counts the warpgroup's wgmma-groups), -1 until its first wgmma.
  int wgmma_agent = -1;
  int registers = 0;  // setmaxnreg's last count (0: none yet)
  // The join of the warpgroup's vector clocks, as of the sum of their own clocks `view_key`.
  std::vector<std::uint32_t> view;
  std::uint64_t view_key = 0;
};

// The calling lane's part of a collective. `aligned` collectives (ldmatrix,
// mma) need every lane at the same program counter; all need the same kind,
// qualifiers and member mask. Returns once the collective has run.
void warp_collective(CollectiveKind kind, std::uint32_t qualifiers, unsigned mask, bool aligned, const void* pc,
                     const void* input, void* output, CollectiveCompletion completion);
// The calling thread's part of a warpgroup collective (all .aligned): every
// thread of its warpgroup at the same program counter with the same kind and
// qualifiers. Returns once the collective has run.
void warpgroup_collective(CollectiveKind kind, std::uint64_t qualifiers, const void* pc, const void* input, void* output,
                          WarpgroupCompletion completion);

// ---- launches ----------------------------------------------------------------------

struct GridLaunch {
  const void* kernel = nullptr;
  dim3 grid, block;
  std::size_t dynamic_shared_bytes = 0;
  int host_threads = 1;
};

// Runs `body` (the kernel with its arguments) in every thread of every CTA.
// Returns the launch error the runtime would (cudaErrorInvalidConfiguration, …)
// without running anything, or cudaSuccess; throws attnbench::DeviceError with
// the sanitizer's findings.
int run_grid(const GridLaunch& launch, const std::function<void()>& body);

// The error of the last failed launch or runtime call on this host thread
// (cudaGetLastError clears it), and the simulator's explanation of it.
cudaError take_last_error();
cudaError peek_last_error();
const std::string& last_error_text();

// The launch the calling simulated thread belongs to.
const DeviceMemoryMap& current_device_memory();
bool sanitizing();

// Checks a global-memory access of `thread` (`what` names it in a report):
// fatal when it is misaligned or outside every buffer of the device.
void check_global_access(SimThread& thread, const void* address, std::size_t bytes, std::size_t alignment,
                         const char* what, const void* pc);

// The CTA's threads of a warp, by lane, and of a warpgroup, by thread of the warpgroup.
SimThread& lane_thread(Cta& cta, int warp, int lane);
SimThread& warpgroup_thread(Cta& cta, int warpgroup, int thread);

// "thread 5 (warp 0, lane 5)"
std::string describe_thread(int linear);
// The source lines of a program counter, one per inlined frame, each line starting with `indent`.
std::string describe_pc(const void* pc, const char* indent);

}  // namespace cudasim
