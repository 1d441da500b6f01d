// Qualifiers for logic shared by host code and CUDA kernels.
//
// Headers under kernels/common/ are included by the CPU implementations, the
// harness and (compiled by nvcc) the CUDA kernels, so each contract they encode
// (mask predicates, the dropout RNG, the online-softmax update) exists once.
#pragma once

#if defined(__CUDACC__)
#define ATTNBENCH_HD __host__ __device__ __forceinline__
#else
#define ATTNBENCH_HD inline
#endif
