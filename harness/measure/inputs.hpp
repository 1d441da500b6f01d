// Host-side input generation: Q, K, V and dO of a problem, in its dtype and
// layout, from the seeded distribution of kernels/common/input_distribution.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

// Owns host memory for one tensor.
struct HostTensor {
  std::vector<std::byte> storage;
  TensorBuffer buffer;
  HostTensor() = default;
  HostTensor(ElementType type, std::size_t elements);
  HostTensor(HostTensor&& other) noexcept;
  HostTensor& operator=(HostTensor&& other) noexcept;
};

struct HostInputs {
  HostTensor q, k, v, d_out;  // d_out is empty when the direction has no backward
  // A buffer set pointing at these inputs (outputs and workspace left empty).
  AttentionBuffers buffers() const;
};

// Generated with `threads` OpenMP threads: the run's count, so that no team of
// another size is left behind to spin beside the implementations' own.
HostInputs generate_inputs(const Problem& problem, int threads);

// Host tensors of the inputs' shapes and dtype, uninitialised (to receive
// inputs a device generated).
HostInputs allocate_inputs(const Problem& problem);

// Bytes generate_inputs allocates, for the pre-flight memory check.
std::uint64_t host_input_bytes(const Problem& problem);

}  // namespace attnbench
