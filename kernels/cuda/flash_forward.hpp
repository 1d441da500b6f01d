// The forward of cuda.flash (kernels/cuda/flash_forward.cu): O and LSE from Q, K
// and V in the FlashAttention-2 structure, nothing N×N in memory.
#pragma once

#include <cuda_runtime.h>

#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Writes buffers.out and buffers.lse for head_dim 64 or 128 and fp16 or bf16
// inputs; `params` from make_attention_params (lengths uploaded when padded).
// One kernel launch on `stream`.
void launch_flash_forward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                          cudaStream_t stream);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
