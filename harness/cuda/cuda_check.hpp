// Error checking for the CUDA runtime and cuBLAS: one macro each, throwing a
// DeviceError that carries the file, line, call text and the library's message,
// and whether the error leaves the context unusable.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// True for errors after which the CUDA context cannot be used again in this
// process (illegal address, launch failure, assertion, …).
bool cuda_error_loses_context(cudaError_t error);

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench

#define ATTNBENCH_CUDA_CHECK(call)                                                         \
  do {                                                                                     \
    const cudaError_t attnbench_cuda_status = (call);                                      \
    if (attnbench_cuda_status != cudaSuccess) {                                            \
      ::attnbench::throw_cuda_error(attnbench_cuda_status, #call, __FILE__, __LINE__);     \
    }                                                                                      \
  } while (0)

// After every kernel launch: the launch's own error (bad configuration, …).
#define ATTNBENCH_CUDA_CHECK_LAUNCH() ATTNBENCH_CUDA_CHECK(cudaGetLastError())

#define ATTNBENCH_CUBLAS_CHECK(call)                                                       \
  do {                                                                                     \
    const cublasStatus_t attnbench_cublas_status = (call);                                 \
    if (attnbench_cublas_status != CUBLAS_STATUS_SUCCESS) {                                \
      ::attnbench::throw_cublas_error(attnbench_cublas_status, #call, __FILE__, __LINE__); \
    }                                                                                      \
  } while (0)
