// What every CUDA implementation shares: it runs on the "cuda" backend (the
// "cudasim" one in the simulator's build, kernels/cuda/cuda_build.hpp), is
// available exactly when that backend is (and otherwise says why, with the CUDA
// error text), stores its outputs in the input dtype and launches on the stream
// the harness hands it. One without a backward keeps the default backward(),
// which is never reached because its supports() refuses with
// supports_forward_only().
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "harness/backend.hpp"
#include "harness/implementation.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

class CudaImplementation : public Implementation {
 public:
  std::string_view device() const override { return ATTNBENCH_CUDA_DEVICE; }
  Verdict availability() const override {
    Backend* backend = BackendRegistry::instance().get(ATTNBENCH_CUDA_DEVICE);
    return backend ? backend->availability()
                   : Verdict::no("the " ATTNBENCH_CUDA_DEVICE " backend is not built into this binary");
  }
  ElementType output_type(const Problem& problem) const override { return element_type(problem.dtype); }
  void backward(const Problem&, const AttentionBuffers&, ExecutionContext&) override {
    throw std::logic_error(std::string(name()) + " has no backward; supports() refuses it");
  }

 protected:
  // The refusal shared by every forward-only CUDA implementation, or yes.
  Verdict supports_forward_only(const Problem& problem) const {
    if (has_backward(problem.direction)) {
      return Verdict::no(std::string(name()) + " implements the forward only; it has no backward pass yet");
    }
    return Verdict::yes();
  }
  // The simulator's stream also carries the host threads its launches may use.
  static cudaStream_t stream_of(const ExecutionContext& context) {
    const auto stream = static_cast<cudaStream_t>(context.stream);
#if defined(ATTNBENCH_CUDASIM)
    stream->host_threads = context.thread_count();
#endif
    return stream;
  }
};

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
