// Kernel launches and shared-memory declarations, written once for both builds
// of the CUDA sources (kernels/cuda/cuda_build.hpp): on the GPU they are
// kernel<<<…>>>(…), `extern __shared__` and `__shared__`; on the simulator
// (harness/cudasim) the launch runs every CTA on the host and the shared
// memory lives in the CTA's simulated shared window.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "kernels/cuda/cuda_build.hpp"

#if defined(ATTNBENCH_CUDASIM)
#include "harness/cudasim/launch.hpp"
#endif

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// The type of a static shared variable, named as one token (so an array type
// like float[8] can precede the variable's name).
template <typename T>
using SharedVariable = T;

// The arguments take the kernel's parameter types (no deduction from them).
template <typename T>
struct KernelArgument {
  using type = T;
};

// kernel<<<grid, block, dynamic_shared_bytes, stream>>>(arguments...); check the
// launch afterwards with ATTNBENCH_CUDA_CHECK_LAUNCH(), as on the GPU.
template <typename... Params>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
                   cudaStream_t stream, typename KernelArgument<Params>::type... arguments) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::launch(kernel, grid, block, dynamic_shared_bytes, stream, arguments...);
#else
  kernel<<<grid, block, dynamic_shared_bytes, stream>>>(arguments...);
#endif
}

// The CTA's dynamic shared memory (dynamic_shared_bytes of the launch), 128-byte aligned.
__device__ __forceinline__ unsigned char* dynamic_shared_memory() {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::dynamic_shared_memory();
#else
  extern __shared__ __align__(128) unsigned char dynamic_shared_bytes[];
  return dynamic_shared_bytes;
#endif
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench

// Declares `name`, a reference to one static shared-memory variable of the CTA
// of type __VA_ARGS__ (a struct or an array type):
//   ATTNBENCH_STATIC_SHARED(partial_sums, float[8]);
#if defined(ATTNBENCH_CUDASIM)
#define ATTNBENCH_STATIC_SHARED(name, ...)                                                                \
  std::add_lvalue_reference_t<__VA_ARGS__> name = *static_cast<std::add_pointer_t<__VA_ARGS__>>(          \
      ::cudasim::static_shared_memory([] { static const char site = 0; return &site; }(), sizeof(__VA_ARGS__), \
                                      alignof(__VA_ARGS__)))
#else
#define ATTNBENCH_STATIC_SHARED(name, ...) __shared__ ::attnbench::SharedVariable<__VA_ARGS__> name
#endif
