// What every CUDA implementation shares: it runs on the "cuda" backend, is
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

namespace attnbench {

class CudaImplementation : public Implementation {
 public:
  std::string_view device() const override { return "cuda"; }
  Verdict availability() const override {
    Backend* backend = BackendRegistry::instance().get("cuda");
    return backend ? backend->availability() : Verdict::no("the cuda backend is not built into this binary");
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
  static cudaStream_t stream_of(const ExecutionContext& context) { return static_cast<cudaStream_t>(context.stream); }
};

}  // namespace attnbench
