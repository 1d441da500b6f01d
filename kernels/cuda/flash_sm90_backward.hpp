// The backward of cuda.flash.sm90 (kernels/cuda/flash_sm90_backward.cu): dQ,
// dK and dV from Q, K, V, O, dO and the forward's LSE with Hopper's TMA,
// mbarriers and wgmma, warp-specialised. Compiled for sm_90a only on the GPU,
// and for the simulator (docs/cudasim.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "harness/common/problem.hpp"
#include "harness/implementation.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// The tile shape of the main kernel for `head_dim` (one of
// Sm90BackwardHeadDims, kernels/cuda/flash_sm90_backward_geometry.hpp), for the
// configuration record; std::invalid_argument for another.
struct FlashSm90BackwardShape {
  int block_m;       // query rows per tile of the loop
  int block_n;       // keys per CTA, 64 per MMA warpgroup
  int consumers;     // MMA warpgroups (one producer warpgroup beside them)
  int stages;        // query tiles in flight
  int shared_bytes;  // dynamic shared memory per CTA
  bool p_from_registers;  // dV's A operand Pᵀ: registers (RS), or the Pᵀ tile in shared memory (SS)
  int dq_part_columns;    // a consumer's dQ part: 64 rows × this many dims
  bool staged_dq;         // the default mode stages each part and adds it with one bulk reduce-add
};
FlashSm90BackwardShape flash_sm90_backward_shape(int head_dim);

// Bytes of device workspace the backward needs (D, LSE·log2(e) and the fp32 dQ
// accumulator): O(B·H·Nq·d).
std::size_t flash_sm90_backward_workspace_bytes(const Problem& problem);

// Writes buffers.d_q, d_k and d_v (head_dim of Sm90BackwardHeadDims, fp16 or
// bf16, every mask, padding, grouped heads, both layouts) after the forward has
// written buffers.out and buffers.lse. `params` from make_attention_params
// (lengths uploaded when padded); `backward_workspace` has
// flash_sm90_backward_workspace_bytes() bytes, 256-byte aligned. Launches three
// kernels on `stream`. With `deterministic`, the key tiles add their dQ
// contributions in a fixed order (a semaphore per query tile), so that two
// calls give the same bits; otherwise in whatever order they finish. Throws
// DeviceError when the driver refuses a tensor map.
void launch_flash_sm90_backward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                                void* backward_workspace, bool deterministic, cudaStream_t stream);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
