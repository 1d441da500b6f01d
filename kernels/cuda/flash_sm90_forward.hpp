// The forward of cuda.flash.sm90 (kernels/cuda/flash_sm90_forward.cu): O and
// LSE from Q, K and V with Hopper's TMA, mbarriers and wgmma, warp-specialised.
// Compiled for sm_90a only on the GPU, and for the simulator (docs/cudasim.md).
#pragma once

#include <cuda_runtime.h>

#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// The tile shape the kernel uses for `head_dim` (one of Sm90HeadDims,
// kernels/cuda/flash_sm90_geometry.hpp), for the implementation's
// configuration record and traffic model; std::invalid_argument for another.
struct FlashSm90Shape {
  int block_m;          // query rows per CTA: 64 per consumer warpgroup
  int block_n;          // keys per K/V tile
  int consumers;        // consumer warpgroups (one producer warpgroup beside them)
  int stages;           // K/V tiles in flight
  int shared_bytes;     // dynamic shared memory per CTA
  bool softmax_overlap_fits;  // the softmax/P·V overlap fits the registers (not at d256)
};
FlashSm90Shape flash_sm90_shape(int head_dim);

// The kernel's two overlaps, switched at run time in one kernel instance, so
// that a GPU run measures what each is worth (the ablations).
struct Sm90Schedule {
  // Each tile's softmax runs while the previous tile's P·V is in flight
  // (where it fits the registers: FlashSm90Shape::softmax_overlap_fits).
  bool softmax_overlaps_pv = true;
  // The consumer warpgroups issue their GEMMs in turns (named barriers), so
  // one's softmax runs while the other's products occupy the tensor cores.
  bool pingpong = true;
};

// Writes buffers.out and buffers.lse for every head_dim of Sm90HeadDims, fp16 or bf16,
// every mask, padding, grouped heads, dropout and both layouts; `params` from
// make_attention_params (lengths uploaded when padded). One kernel launch on
// `stream`. Throws DeviceError when the driver refuses a tensor map.
void launch_flash_sm90_forward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                               Sm90Schedule schedule, cudaStream_t stream);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
