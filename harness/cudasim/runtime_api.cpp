// The CUDA runtime calls of runtime_api.hpp on the simulator. Work is
// synchronous: a launch or a copy has finished when its call returns, so the
// synchronisations have nothing to wait for.
#include "harness/cudasim/runtime_api.hpp"

#include <cstring>
#include <string>

#include "harness/cudasim/device_memory.hpp"
#include "harness/cudasim/driver_api.hpp"
#include "harness/cudasim/execution.hpp"
#include "harness/cudasim/launch.hpp"
#include "harness/errors.hpp"

namespace cudasim {

void launch_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, Stream* stream,
                 const std::function<void()>& body) {
  if (stream && stream->captured) {
    stream->captured->push_back([=] {
      run_grid(GridLaunch{kernel, grid, block, dynamic_shared_bytes, stream->host_threads}, body);
    });
    return;
  }
  run_grid(GridLaunch{kernel, grid, block, dynamic_shared_bytes, stream ? stream->host_threads : 1}, body);
}

}  // namespace cudasim

cudaError_t cudaGetLastError() { return cudasim::take_last_error(); }
cudaError_t cudaPeekAtLastError() { return cudasim::peek_last_error(); }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorMisalignedAddress:
      return "cudaErrorMisalignedAddress";
    default:
      return "cudaError (simulated)";
  }
}

// The runtime's text, and the simulator's explanation of the last failed call.
const char* cudaGetErrorString(cudaError_t error) {
  thread_local std::string text;
  switch (error) {
    case cudaSuccess:
      text = "no error";
      break;
    case cudaErrorInvalidValue:
      text = "invalid argument";
      break;
    case cudaErrorInvalidConfiguration:
      text = "invalid configuration argument";
      break;
    case cudaErrorMemoryAllocation:
      text = "out of memory";
      break;
    default:
      text = "simulated error";
      break;
  }
  if (error != cudaSuccess && !cudasim::last_error_text().empty()) text += "; cudasim: " + cudasim::last_error_text();
  return text.c_str();
}

cudaError_t cudaMemcpyAsync(void* destination, const void* source, std::size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  if (stream && stream->captured) {
    stream->capture_refusal = "cudaMemcpyAsync runs at once on the simulator, so it cannot be captured";
    return cudaSuccess;
  }
  std::string why;
  const auto& registry = cudasim::DeviceMemoryRegistry::instance();
  for (const void* end : {static_cast<const void*>(destination), source}) {
    if (registry.place(end, bytes, &why) == cudasim::DeviceMemoryMap::Placement::outside) {
      throw attnbench::DeviceError("cudasim: cudaMemcpyAsync of " + std::to_string(bytes) +
                                  " bytes touches device memory outside every buffer: " + why,
                                  false);
    }
  }
  if (bytes) std::memcpy(destination, source, bytes);
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int cuda_version,
                                             unsigned long long, cudaDriverEntryPointQueryResult* status) {
  const auto answer = [&](void* found, cudaDriverEntryPointQueryResult result) {
    *function = found;
    if (status) *status = result;
    return cudaSuccess;
  };
  if (std::string(symbol) != "cuTensorMapEncodeTiled") return answer(nullptr, cudaDriverEntryPointSymbolNotFound);
  if (cuda_version < 12000) return answer(nullptr, cudaDriverEntryPointVersionNotSufficent);
  return answer(reinterpret_cast<void*>(&cudasim::encode_tensor_map_tiled), cudaDriverEntryPointSuccess);
}

cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
