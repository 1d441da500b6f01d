// The full/empty mbarrier ring of a warp-specialised Hopper kernel: one
// producer thread fills kStages stages of shared memory with TMA loads, the
// consumer warpgroups read them, and each stage is reused in turn.
//
// Who arrives how many times on which barrier, per use of a stage:
//   - each "full" barrier of the stage (kFull of them, e.g. K and V apart so
//     that a consumer can start on K before V has landed) expects 1 arrival
//     and the bytes of its TMA loads: the producer arms it (producer_arm:
//     arrive.expect_tx with the bytes), the loads it then issues complete the
//     transaction count (complete_tx), and the phase completes once both have
//     happened. Every consumer thread waits on it (consumer_wait) for the
//     phase of this use.
//   - the "empty" barrier of the stage expects one arrival per consumer
//     warpgroup: one thread of each (consumer_release) once the warpgroup's
//     reads of the stage are finished (its wgmma.wait_group covered them).
//     The producer waits on it (producer_acquire) before refilling the stage;
//     for the first use it waits for the phase before phase 0, which counts as
//     complete, so it does not block.
// Every consumer must wait on and release every use of every stage the
// producer fills, in order, or the ring stalls.
//
// A PipelineState counts the uses of the ring; the stage and the parity of
// its phase are derived from that one count (use mod kStages and
// (use / kStages) mod 2), so they advance together and cannot drift apart.
// The producer and each consumer keep their own.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/hopper_shared_storage.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// The 32-bit shared address of the first 1024-byte boundary of the dynamic
// shared memory, where a kernel's storage struct (hopper_shared_storage.hpp)
// starts; its members are offsetof() further on.
__device__ __forceinline__ std::uint32_t shared_storage_base() {
  const std::uint32_t window = shared_address(dynamic_shared_memory());
  return (window + (kSwizzleAlignment - 1)) / kSwizzleAlignment * kSwizzleAlignment;
}

template <int kStages>
struct PipelineState {
  static_assert(kStages > 0 && (kStages & (kStages - 1)) == 0, "stage and phase are a mask and a shift of the count");
  int use = 0;  // uses of the ring before this one

  __device__ __forceinline__ int stage() const { return use % kStages; }
  __device__ __forceinline__ std::uint32_t phase() const { return static_cast<std::uint32_t>(use / kStages) & 1u; }
  __device__ __forceinline__ void advance() { ++use; }
  __device__ __forceinline__ PipelineState next() const { return PipelineState{use + 1}; }
};

// The ring's barriers (a PipelineBarriers<kStages, kFull> in the kernel's
// storage struct, at the 32-bit shared address given) and the four steps on
// them. `part` picks one of a stage's kFull full barriers.
template <int kStages, int kFull = 1>
class MbarrierPipeline {
 public:
  using State = PipelineState<kStages>;
  using Barriers = PipelineBarriers<kStages, kFull>;

  __device__ __forceinline__ explicit MbarrierPipeline(std::uint32_t barriers) : barriers_(barriers) {}

  // By one thread before the __syncthreads that precedes the roles, followed
  // there by fence_mbarrier_init().
  __device__ __forceinline__ void init(int consumers) const {
    for (int s = 0; s < kStages; ++s) {
      for (int part = 0; part < kFull; ++part) mbarrier_init(full(part, s), 1);
      mbarrier_init(empty(s), static_cast<std::uint32_t>(consumers));
    }
  }

  // Producer: wait until every consumer has released the stage's previous use.
  __device__ __forceinline__ void producer_acquire(State state) const {
    mbarrier_wait_parity(empty(state.stage()), state.phase() ^ 1u);
  }
  // Producer: announce `bytes` of TMA loads on a full barrier and arrive;
  // returns the barrier, which the loads complete on.
  __device__ __forceinline__ std::uint32_t producer_arm(State state, std::uint32_t bytes, int part = 0) const {
    const std::uint32_t barrier = full(part, state.stage());
    mbarrier_arrive_expect_tx(barrier, bytes);
    return barrier;
  }
  // Consumer, every thread: wait until a full barrier's loads of this use have landed.
  __device__ __forceinline__ void consumer_wait(State state, int part = 0) const {
    mbarrier_wait_parity(full(part, state.stage()), state.phase());
  }
  // Consumer, one thread per warpgroup: the warpgroup is done reading the stage.
  __device__ __forceinline__ void consumer_release(State state) const { mbarrier_arrive(empty(state.stage())); }

 private:
  __device__ __forceinline__ std::uint32_t full(int part, int stage) const {
    return barriers_ + 8u * static_cast<std::uint32_t>(part * kStages + stage);
  }
  __device__ __forceinline__ std::uint32_t empty(int stage) const {
    return barriers_ + static_cast<std::uint32_t>(sizeof(Barriers::full)) + 8u * static_cast<std::uint32_t>(stage);
  }

  std::uint32_t barriers_;
};

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
