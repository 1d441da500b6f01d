// Device-side helpers of the CUDA backend: poison, and seeded input generation.
#pragma once

#include <cuda_runtime.h>

#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"

namespace attnbench::cuda {

// Fills `buffer` with a quiet NaN of its type on `stream`.
void fill_with_nan(const TensorBuffer& buffer, cudaStream_t stream);

// Fills Q, K, V (and dO when the direction has a backward) on `stream` from the
// problem's seeded distribution, element for element as harness/measure/inputs.cpp does
// on the host (kernels/common/input_distribution.hpp).
void generate_inputs(const Problem& problem, const AttentionBuffers& buffers, cudaStream_t stream);

// One kernel that does nothing, on `stream`: what a launch costs.
void launch_empty_kernel(cudaStream_t stream);

}  // namespace attnbench::cuda
