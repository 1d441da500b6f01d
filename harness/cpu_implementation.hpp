// What every CPU implementation shares, as harness/cuda/cuda_implementation.hpp
// is for the CUDA ones: it runs on the "cpu" backend (harness/host_backend.cpp)
// in host memory, takes every problem unless it overrides supports(), and
// stores fp32 outputs unless it overrides output_type() (the fp64 oracle does).
// One whose products go through the BLAS derives from CpuBlasImplementation:
// it is available only when the BLAS's threading can honour --threads, and it
// declares the BLAS's own buffers as memory outside the arena.
#pragma once

#include <string>

#include "harness/blas.hpp"
#include "harness/implementation.hpp"

namespace attnbench {

class CpuImplementation : public Implementation {
 public:
  std::string_view device() const override { return "cpu"; }
  Verdict supports(const Problem&) const override { return Verdict::yes(); }
  ElementType output_type(const Problem&) const override { return ElementType::f32; }
};

class CpuBlasImplementation : public CpuImplementation {
 public:
  Verdict availability() const override {
    const std::string problem = blas::threading_problem();
    return problem.empty() ? Verdict::yes() : Verdict::no(problem);
  }
  nlohmann::ordered_json memory_outside_arena() const override { return blas::buffers_outside_arena(); }
};

}  // namespace attnbench
