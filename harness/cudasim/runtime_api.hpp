// The part of the CUDA runtime API (cuda_runtime.h) that the kernels' host code
// calls, for the simulator's build: errors, streams, cudaMemcpyAsync,
// cudaFuncSetAttribute, cudaDeviceSynchronize. The types live in namespace
// cudasim, so no symbol of the simulator's build can collide with the real
// runtime's in a binary that links both.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "harness/cudasim/device_runtime.hpp"

namespace cudasim {

enum cudaError : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorECCUncorrectable = 214,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorIllegalAddress = 700,
  cudaErrorAssert = 710,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidAddressSpace = 717,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind : int {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute : int {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};
enum cudaGetDriverEntryPointFlags : unsigned long long {
  cudaEnableDefault = 0,
};
enum cudaDriverEntryPointQueryResult : int {
  cudaDriverEntryPointSuccess = 0,
  cudaDriverEntryPointSymbolNotFound = 1,
  cudaDriverEntryPointVersionNotSufficent = 2,
};

// What a simulated launch runs on: the host threads its CTAs may use. While
// `captured` is set (timing "graph", harness/cudasim/cudasim_backend.cpp), a
// launch is recorded there to run later instead of running now, and any other
// work on the stream, which the simulator does at once, refuses the capture
// (`capture_refusal` names it).
struct Stream {
  int host_threads = 1;
  std::vector<std::function<void()>>* captured = nullptr;
  std::string capture_refusal;
};

cudaError set_function_attribute(const void* kernel, cudaFuncAttribute attribute, int value);

}  // namespace cudasim

using cudaError_t = cudasim::cudaError;
using cudaStream_t = cudasim::Stream*;
using cudasim::cudaError;
using enum cudasim::cudaError;
using enum cudasim::cudaMemcpyKind;
using enum cudasim::cudaFuncAttribute;
using enum cudasim::cudaGetDriverEntryPointFlags;
using enum cudasim::cudaDriverEntryPointQueryResult;
using cudasim::cudaDriverEntryPointQueryResult;
using cudasim::cudaFuncAttribute;
using cudasim::cudaMemcpyKind;

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaMemcpyAsync(void* destination, const void* source, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
// The driver functions a simulated program may ask for: cuTensorMapEncodeTiled
// (version 12000 and later), the simulator's (driver_api.hpp).
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int cuda_version,
                                             unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* status = nullptr);
template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attribute, int value) {
  return cudasim::set_function_attribute(reinterpret_cast<const void*>(kernel), attribute, value);
}
