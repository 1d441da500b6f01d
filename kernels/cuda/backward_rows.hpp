// The row-wise kernels around the fused backwards (kernels/cuda/flash_backward.cu
// on mma.sync, kernels/cuda/flash_sm90_backward.cu on wgmma): their
// pre-processes compute D = rowsum(dO ∘ O) per query row, their post-processes
// turn the fp32 dQ accumulator into dQ in the output dtype. A CTA of
// kFlashBackwardRowThreads threads takes kFlashBackwardRowsPerBlock query rows
// of one (head, batch), kFlashBackwardRowLanes lanes per row, each lane the
// 8-element chunks at row_chunk_column(pass, part)
// (kernels/cuda/flash_backward_geometry.hpp). What both share: which row and
// lane a thread is, D of its row, and eight fp32 values stored scaled.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/element_conversion.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// The query row, the lane within the row's lanes, the head and the batch of
// this thread (grid: row blocks × heads × batch).
struct BackwardRowLane {
  int row, part, head, batch;
};

__device__ __forceinline__ BackwardRowLane backward_row_lane() {
  return {static_cast<int>(blockIdx.x) * kFlashBackwardRowsPerBlock +
              static_cast<int>(threadIdx.x) / kFlashBackwardRowLanes,
          static_cast<int>(threadIdx.x) % kFlashBackwardRowLanes, static_cast<int>(blockIdx.y),
          static_cast<int>(blockIdx.z)};
}

// D = Σ_c dO[c]·O[c] over the row's head_dim columns, 0 for a row at or past
// seqlen_q; every lane of the row returns it (all lanes of the warp must call).
template <typename Element, int kHeadDim>
__device__ __forceinline__ float output_gradient_dot(const AttentionParams& params, const Element* __restrict__ out,
                                                     const Element* __restrict__ d_out, const BackwardRowLane& lane) {
  float sum = 0.0f;
  if (lane.row < params.seqlen_q) {
    const std::int64_t offset = params.q_offset(lane.batch, lane.row, lane.head);
#pragma unroll
    for (int pass = 0; pass < kHeadDim / (8 * kFlashBackwardRowLanes); ++pass) {
      const int column = row_chunk_column(pass, lane.part);
      const uint4 o_chunk = *reinterpret_cast<const uint4*>(out + offset + column);
      const uint4 d_chunk = *reinterpret_cast<const uint4*>(d_out + offset + column);
      const Element* const o_values = reinterpret_cast<const Element*>(&o_chunk);
      const Element* const d_values = reinterpret_cast<const Element*>(&d_chunk);
#pragma unroll
      for (int e = 0; e < 8; ++e) sum += to_float(o_values[e]) * to_float(d_values[e]);
    }
  }
#pragma unroll
  for (int distance = 1; distance < kFlashBackwardRowLanes; distance *= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, distance);
  return sum;
}

// Stores `scale` times the eight values low, high as Element at `destination`
// (16 bytes, aligned).
template <typename Element>
__device__ __forceinline__ void store_scaled_chunk(Element* destination, float4 low, float4 high, float scale) {
  uint4 packed;
  packed.x = pack_pair<Element>(low.x * scale, low.y * scale);
  packed.y = pack_pair<Element>(low.z * scale, low.w * scale);
  packed.z = pack_pair<Element>(high.x * scale, high.y * scale);
  packed.w = pack_pair<Element>(high.z * scale, high.w * scale);
  *reinterpret_cast<uint4*>(destination) = packed;
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
