// Whether the device of this build runs sm_90a code (the Hopper kernels:
// kernels/cuda/hopper_gemm.cu, flash_sm90_forward.cu): on the GPU, compute
// capability 9.0 exactly, since "a" targets run on no other; the simulator
// always does.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// True when sm_90a kernels can run here; otherwise `why` says why not.
inline bool sm90a_code_runs_here(std::string& why) {
#if defined(ATTNBENCH_CUDASIM)
  (void)why;
  return true;
#else
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    why = "no CUDA device";
    return false;
  }
  if (major != 9 || minor != 0) {
    why = "the kernel is sm_90a code (wgmma, setmaxnreg); this GPU has compute capability " + std::to_string(major) +
          "." + std::to_string(minor);
    return false;
  }
  return true;
#endif
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
