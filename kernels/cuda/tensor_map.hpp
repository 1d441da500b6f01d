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

#include "harness/common/problem.hpp"
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

// Q, K, V, O or their gradients as a 4-d tensor map (dim, sequence, head,
// batch) of 16-bit elements with the strides of either layout, read or written
// in boxes of 64 columns (one 128-byte swizzle span) by `rows` rows.
inline CUtensorMap attention_tensor_map(const void* data, const TensorStrides& strides, std::int64_t seqlen,
                                        std::int64_t heads, std::int64_t batch, std::int64_t head_dim,
                                        std::uint32_t rows, bool bf16, const char* what) {
  TensorMapShape shape;
  shape.rank = 4;
  shape.dims[0] = static_cast<std::uint64_t>(head_dim);
  shape.dims[1] = static_cast<std::uint64_t>(seqlen);
  shape.dims[2] = static_cast<std::uint64_t>(heads);
  shape.dims[3] = static_cast<std::uint64_t>(batch);
  shape.byte_strides[0] = 2 * static_cast<std::uint64_t>(strides.seq);
  shape.byte_strides[1] = 2 * static_cast<std::uint64_t>(strides.head);
  shape.byte_strides[2] = 2 * static_cast<std::uint64_t>(strides.batch);
  shape.box[0] = 64;
  shape.box[1] = rows;
  return make_tensor_map(bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, data, shape,
                         CU_TENSOR_MAP_SWIZZLE_128B, what);
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
