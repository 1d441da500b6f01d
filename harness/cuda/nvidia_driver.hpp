// Why no CUDA device can be used, said so that a user can act on it. When
// cudaGetDeviceCount fails, the CUDA runtime's own words ("CUDA driver version
// is insufficient for CUDA runtime version") suggest upgrading a driver even on
// a machine that has none; whether an NVIDIA driver is installed at all (its
// library loads, its device files exist) tells the cases apart.
#pragma once

#include <string>

namespace attnbench {

struct NvidiaDriverPresence {
  bool library = false;       // libcuda.so.1 loads
  bool device_files = false;  // /dev/nvidiactl or /dev/nvidia0 exists
};

// This machine's.
NvidiaDriverPresence probe_nvidia_driver();

// The reason the "cuda" device is unavailable after cudaGetDeviceCount failed
// with `error_name` (cudaErrorInsufficientDriver, …) and `error_text`: "no
// NVIDIA driver or GPU found" alone when neither the library nor the device
// files are there, else the runtime's error with advice fitting what is
// installed.
std::string cuda_unavailable_reason(const std::string& error_name, const std::string& error_text,
                                    const NvidiaDriverPresence& presence);

}  // namespace attnbench
