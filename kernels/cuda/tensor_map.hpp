// Tensor maps for TMA (kernels/cuda/hopper_primitives.hpp's tma_load and
// tma_store), made on the host by the driver's cuTensorMapEncodeTiled. The
// function is reached through the runtime (cudaGetDriverEntryPointByVersion),
// never by linking the driver: a binary that links libcuda does not start on a
// machine without one. On the simulator the runtime hands out the simulator's
// encoder, which checks the arguments as the driver documents.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "harness/cuda/cuda_check.hpp"
#include "harness/errors.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// A tiled tensor map's shape: dimensions innermost first, the byte strides of
// dimensions 1 and up, the box (elements per dimension, at most 256 each).
struct TensorMapShape {
  int rank = 2;
  std::uint64_t dims[5] = {1, 1, 1, 1, 1};
  std::uint64_t byte_strides[4] = {0, 0, 0, 0};
  std::uint32_t box[5] = {1, 1, 1, 1, 1};
};

using TensorMapEncoder = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                      const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                      CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline TensorMapEncoder tensor_map_encoder() {
  static const TensorMapEncoder encoder = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult status{};
    ATTNBENCH_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &status));
    if (status != cudaDriverEntryPointSuccess || function == nullptr) {
      throw DeviceError("the CUDA driver does not provide cuTensorMapEncodeTiled (12.0 or later needed)", false);
    }
    return reinterpret_cast<TensorMapEncoder>(function);
  }();
  return encoder;
}

// A tiled tensor map of `shape` over the tensor at `address` (16-byte aligned),
// with the given shared-memory swizzle, unit element strides, zero fill for
// out-of-bound elements. Throws a DeviceError naming `what` when the driver refuses.
inline CUtensorMap make_tensor_map(CUtensorMapDataType type, const void* address, const TensorMapShape& shape,
                                   CUtensorMapSwizzle swizzle, const char* what) {
  CUtensorMap map;
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult result =
      tensor_map_encoder()(&map, type, static_cast<cuuint32_t>(shape.rank), const_cast<void*>(address), shape.dims,
                           shape.byte_strides, shape.box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    std::string why = "cuTensorMapEncodeTiled refused the tensor map of " + std::string(what) + " (CUresult " +
                      std::to_string(static_cast<int>(result)) + ")";
#if defined(ATTNBENCH_CUDASIM)
    why += ": " + std::string(cudasim::tensor_map_error_text());
#endif
    throw DeviceError(why, false);
  }
  return map;
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
