// Which of the two builds of the CUDA sources a translation unit belongs to.
// The same kernel sources compile with nvcc for the GPU and with the host
// compiler for the simulator (harness/cudasim, docs/cudasim.md), and both link
// into one binary: the simulator's build therefore lives in an inline
// namespace of its own, and its implementations carry its device's name
// ("cudasim.flash" beside "cuda.flash").
#pragma once

#if defined(ATTNBENCH_CUDASIM)
#define ATTNBENCH_CUDA_DEVICE "cudasim"
#define ATTNBENCH_CUDA_BUILD_BEGIN inline namespace simulated {
#define ATTNBENCH_CUDA_BUILD_END }
#else
#define ATTNBENCH_CUDA_DEVICE "cuda"
#define ATTNBENCH_CUDA_BUILD_BEGIN
#define ATTNBENCH_CUDA_BUILD_END
#endif

// "<device>.<algorithm>", e.g. ATTNBENCH_CUDA_IMPLEMENTATION("flash").
#define ATTNBENCH_CUDA_IMPLEMENTATION(algorithm) ATTNBENCH_CUDA_DEVICE "." algorithm
