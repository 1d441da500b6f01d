// What the "cuda" backend observes of a plug-in's call (harness/plugin/call_audit.hpp):
// the device's free memory (cudaMemGetInfo), and one call captured on the
// backend's stream (cudaStreamBeginCapture in global mode, so a call that
// would synchronize or allocate with cudaMalloc fails instead of escaping the
// capture), whose graph is counted by node type and destroyed, never run;
// and the captured graphs of timing "graph".
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "harness/backend.hpp"
#include "harness/plugin/call_audit.hpp"

namespace attnbench {

std::unique_ptr<CallObserver> make_stream_capture_observer(cudaStream_t stream);

// Timing "graph" (docs/design.md §4): `calls` captured on `stream` in global
// mode and instantiated once; launch() runs the graph on `stream`. Throws
// CaptureRefused with CUDA's reason when the calls cannot be captured (they
// synchronise, allocate, or use another stream without joining it).
std::unique_ptr<CapturedCalls> capture_graph(cudaStream_t stream, const std::function<void()>& calls);

}  // namespace attnbench
