#include "cuda_check.hpp"

#include <string>

#include "harness/errors.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

bool cuda_error_loses_context(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  throw DeviceError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                        cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")",
                    cuda_error_loses_context(error));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  // A cuBLAS failure after a sticky kernel error reports it only as an
  // execution failure; the context is checked separately by the next CUDA call.
  throw DeviceError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                        cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")",
                    false);
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
