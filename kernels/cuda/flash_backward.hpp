// The backward pass of cuda.flash (kernels/cuda/flash_backward.cu): dQ, dK, dV
// from Q, K, V, O, dO and the forward's LSE, in the FlashAttention-2 structure.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Bytes of device workspace the backward needs beyond what the forward uses
// (kernels/cuda/flash_backward_geometry.hpp, flash_backward_workspace_layout):
// O(B·H·Nq·d), nothing N². Head dims 64 and 128.
std::size_t flash_backward_workspace_bytes(const Problem& problem);

// Writes buffers.d_q, d_k and d_v for `problem` (head_dim 64 or 128, fp16 or
// bf16) after the forward has written buffers.out and buffers.lse. `params` is
// the forward's (make_attention_params, lengths uploaded when padded);
// `backward_workspace` has flash_backward_workspace_bytes(problem) bytes, 256-byte
// aligned, and must not overlap the forward's workspace. Launches three kernels
// on `stream`.
void launch_flash_backward(const Problem& problem, const AttentionParams& params, const AttentionBuffers& buffers,
                           void* backward_workspace, cudaStream_t stream);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
