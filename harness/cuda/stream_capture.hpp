// What the "cuda" backend observes of a plug-in's call (harness/plugin/call_audit.hpp):
// the device's free memory (cudaMemGetInfo), and one call captured on the
// backend's stream (cudaStreamBeginCapture in global mode, so a call that
// would synchronize or allocate with cudaMalloc fails instead of escaping the
// capture), whose graph is counted by node type and destroyed, never run.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "harness/plugin/call_audit.hpp"

namespace attnbench {

std::unique_ptr<CallObserver> make_stream_capture_observer(cudaStream_t stream);

}  // namespace attnbench
