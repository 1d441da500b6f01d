// The grid of a grid-stride launch: a kernel whose blocks loop over their work
// with the grid as the stride (the row kernels of baselines/cuda/softmax_kernel.cu,
// the pointer-array kernel of baselines/cuda/cublas_attention.cu) launches one
// block per unit of work up to a cap, past which each block takes several trips
// through its loop. On a GPU that happens only past 2^20 blocks; the simulator's
// tests lower every cap (simulated_grid_stride_cap) so that the loops' later
// trips, and the barriers in them, run at test sizes. The GPU build never reads
// the setting. Pure C++ (no CUDA headers), so host tests set it.
#pragma once

#include <atomic>
#include <cstdint>

#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {

// 0: every grid-stride launch keeps its own cap; n > 0: the simulator's
// grid-stride launches get at most n blocks (more than a kernel's own cap is
// harmless there: the loops take any grid).
inline std::atomic<std::int64_t> simulated_grid_stride_cap{0};

// Sets simulated_grid_stride_cap for a scope (a test), and back to 0 after it.
class LoweredGridStrideCap {
 public:
  explicit LoweredGridStrideCap(std::int64_t blocks) { simulated_grid_stride_cap.store(blocks); }
  ~LoweredGridStrideCap() { simulated_grid_stride_cap.store(0); }
  LoweredGridStrideCap(const LoweredGridStrideCap&) = delete;
  LoweredGridStrideCap& operator=(const LoweredGridStrideCap&) = delete;
};

ATTNBENCH_CUDA_BUILD_BEGIN

// The blocks of a grid-stride launch that has `blocks` units of work and launches
// at most `cap` blocks.
inline std::int64_t grid_stride_blocks(std::int64_t blocks, std::int64_t cap) {
#if defined(ATTNBENCH_CUDASIM)
  const std::int64_t lowered = simulated_grid_stride_cap.load();
  if (lowered > 0) cap = lowered;
#endif
  return blocks < cap ? blocks : cap;
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
