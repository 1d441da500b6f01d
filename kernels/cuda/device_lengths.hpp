// Uploads the per-batch valid lengths of a padded problem into workspace memory
// for AttentionParams (kernels/cuda/attention_params.hpp).
//
// The copy is a cudaMemcpyAsync of 16·batch bytes from the Problem's own
// vectors (pageable host memory, staged by the driver before the call returns)
// on the call's stream, so it is part of the timed call of a padded case; an
// unpadded problem copies nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Returns the device copy (lengths_q then lengths_k) at `destination`, which has
// device_lengths_bytes(p) bytes, or nullptr when the problem is not padded.
inline const std::int64_t* upload_lengths(const Problem& p, void* destination, cudaStream_t stream) {
  if (!has_padding(p)) return nullptr;
  auto* lengths = static_cast<std::int64_t*>(destination);
  const std::size_t bytes = static_cast<std::size_t>(p.batch) * sizeof(std::int64_t);
  ATTNBENCH_CUDA_CHECK(cudaMemcpyAsync(lengths, p.lengths_q.data(), bytes, cudaMemcpyHostToDevice, stream));
  ATTNBENCH_CUDA_CHECK(cudaMemcpyAsync(lengths + p.batch, p.lengths_k.data(), bytes, cudaMemcpyHostToDevice, stream));
  return lengths;
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
