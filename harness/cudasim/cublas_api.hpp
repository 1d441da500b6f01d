// The part of cuBLAS (cublas_v2.h) that cuda.cublas calls, for the simulator's
// build: handles, streams, workspaces, the math mode and cublasGemmBatchedEx,
// executed on the host (cublas.cpp) with cuBLAS's documented argument checks.
// Types live in namespace cudasim, so nothing collides with the real cuBLAS.
#pragma once

#include "harness/cudasim/runtime_api.hpp"

namespace cudasim {

enum cublasStatus : int {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasOperation : int { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasMath : int { CUBLAS_DEFAULT_MATH = 0, CUBLAS_PEDANTIC_MATH = 2 };
enum cublasComputeType : int { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_PEDANTIC = 69 };
enum cublasGemmAlgo : int { CUBLAS_GEMM_DEFAULT = -1 };
enum cudaDataType_enum : int { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
struct CublasContext;

}  // namespace cudasim

using cublasStatus_t = cudasim::cublasStatus;
using cublasHandle_t = cudasim::CublasContext*;
using cublasOperation_t = cudasim::cublasOperation;
using cublasMath_t = cudasim::cublasMath;
using cublasComputeType_t = cudasim::cublasComputeType;
using cublasGemmAlgo_t = cudasim::cublasGemmAlgo;
using cudaDataType = cudasim::cudaDataType_enum;
using enum cudasim::cublasStatus;
using enum cudasim::cublasOperation;
using enum cudasim::cublasMath;
using enum cudasim::cublasComputeType;
using enum cudasim::cublasGemmAlgo;
using enum cudasim::cudaDataType_enum;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, std::size_t bytes);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
const char* cublasGetStatusName(cublasStatus_t status);
const char* cublasGetStatusString(cublasStatus_t status);
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const a_array[], cudaDataType a_type,
                                   int lda, const void* const b_array[], cudaDataType b_type, int ldb,
                                   const void* beta, void* const c_array[], cudaDataType c_type, int ldc,
                                   int batch_count, cublasComputeType_t compute_type, cublasGemmAlgo_t algo);
