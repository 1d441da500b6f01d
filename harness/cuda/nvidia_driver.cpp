#include "harness/cuda/nvidia_driver.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace attnbench {

NvidiaDriverPresence probe_nvidia_driver() {
  NvidiaDriverPresence presence;
  if (void* library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    presence.library = true;
    dlclose(library);
  }
  std::error_code error;
  presence.device_files =
      std::filesystem::exists("/dev/nvidiactl", error) || std::filesystem::exists("/dev/nvidia0", error);
  return presence;
}

std::string cuda_unavailable_reason(const std::string& error_name, const std::string& error_text,
                                    const NvidiaDriverPresence& presence) {
  const std::string runtime_error = "cudaGetDeviceCount: " + error_name + ", " + error_text;
  if (!presence.library && !presence.device_files) {
    return "no NVIDIA driver or GPU found (no libcuda.so.1, no /dev/nvidia* device)";
  }
  if (!presence.library) {
    return "no usable CUDA device: /dev/nvidia* exists but libcuda.so.1 does not load; install the driver's "
           "user-space library or add its directory to the loader's path (" + runtime_error + ")";
  }
  if (error_name == "cudaErrorInsufficientDriver") {
    return "no usable CUDA device: the installed NVIDIA driver is older than this build's CUDA runtime (" +
           runtime_error + ")";
  }
  return "no usable CUDA device (" + runtime_error + ")";
}

}  // namespace attnbench
