// The part of the CUDA driver API (cuda.h) that the kernels' host code uses,
// for the simulator's build: tensor maps for TMA, made by
// cuTensorMapEncodeTiled, which a program reaches through the runtime's
// cudaGetDriverEntryPointByVersion (runtime_api.hpp) and never by linking the
// driver. As for the runtime, the types live in namespace cudasim under the
// driver's names; the values of the enumerations are the driver's.
#pragma once

#include <cstdint>

namespace cudasim {

enum CUresult_enum : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
};

using cuuint32_t = std::uint32_t;
using cuuint64_t = std::uint64_t;

enum CUtensorMapDataType_enum : int {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_UINT16,
  CU_TENSOR_MAP_DATA_TYPE_UINT32,
  CU_TENSOR_MAP_DATA_TYPE_INT32,
  CU_TENSOR_MAP_DATA_TYPE_UINT64,
  CU_TENSOR_MAP_DATA_TYPE_INT64,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B,
  CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B,
};
enum CUtensorMapInterleave_enum : int {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_INTERLEAVE_16B,
  CU_TENSOR_MAP_INTERLEAVE_32B,
};
enum CUtensorMapSwizzle_enum : int {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B,
  CU_TENSOR_MAP_SWIZZLE_64B,
  CU_TENSOR_MAP_SWIZZLE_128B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
};
enum CUtensorMapL2promotion_enum : int {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
};
enum CUtensorMapFloatOOBfill_enum : int {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
};

// An opaque 128-byte, 64-byte aligned object, as the driver's.
struct alignas(64) CUtensorMap_st {
  std::uint64_t opaque[16];
};

// The simulator's cuTensorMapEncodeTiled (tensor_copy.cpp), with the argument
// checks the driver documents; CUDA_ERROR_INVALID_VALUE with the simulator's
// explanation in tensor_map_error_text().
CUresult_enum encode_tensor_map_tiled(CUtensorMap_st* tensor_map, CUtensorMapDataType_enum data_type,
                                      cuuint32_t rank, void* global_address, const cuuint64_t* global_dim,
                                      const cuuint64_t* global_strides, const cuuint32_t* box_dim,
                                      const cuuint32_t* element_strides, CUtensorMapInterleave_enum interleave,
                                      CUtensorMapSwizzle_enum swizzle, CUtensorMapL2promotion_enum l2_promotion,
                                      CUtensorMapFloatOOBfill_enum oob_fill);
// Why the calling host thread's last encode_tensor_map_tiled failed.
const char* tensor_map_error_text();

}  // namespace cudasim

using CUresult = cudasim::CUresult_enum;
using cudasim::cuuint32_t;
using cudasim::cuuint64_t;
using CUtensorMap = cudasim::CUtensorMap_st;
using CUtensorMapDataType = cudasim::CUtensorMapDataType_enum;
using CUtensorMapInterleave = cudasim::CUtensorMapInterleave_enum;
using CUtensorMapSwizzle = cudasim::CUtensorMapSwizzle_enum;
using CUtensorMapL2promotion = cudasim::CUtensorMapL2promotion_enum;
using CUtensorMapFloatOOBfill = cudasim::CUtensorMapFloatOOBfill_enum;
using enum cudasim::CUresult_enum;
using enum cudasim::CUtensorMapDataType_enum;
using enum cudasim::CUtensorMapInterleave_enum;
using enum cudasim::CUtensorMapSwizzle_enum;
using enum cudasim::CUtensorMapL2promotion_enum;
using enum cudasim::CUtensorMapFloatOOBfill_enum;
