// Asynchronous copies of row tiles from a [rows, head_dim] tensor slice into the
// swizzled shared-memory tiles of the tensor-core kernels (flash_forward.cu,
// flash_backward.cu). Layout: kernels/cuda/flash_geometry.hpp's swizzled_offset.
#pragma once

#include <cstdint>

#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/warp_primitives.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Copies rows [first_row, first_row + kRows) of a [rows, kHeadDim] tensor slice
// (row stride `row_stride` elements) into the swizzled shared tile at
// `tile_address`, zero-filling rows at or past `rows`. Every thread of the CTA
// takes part: thread x copies chunk x % (kHeadDim / 8) of rows x / (kHeadDim / 8)
// + r·kRowsPerRound; kRowsPerRound is a multiple of 8, so the thread's swizzle is
// the same in every round and its shared address moves by a constant.
template <int kRows, int kHeadDim, int kThreads, typename Element>
__device__ __forceinline__ void copy_tile_async(std::uint32_t tile_address, const Element* slice,
                                                std::int64_t row_stride, int first_row, int rows) {
  constexpr int kChunksPerRow = kHeadDim / 8;
  constexpr int kRowsPerRound = kThreads / kChunksPerRow;
  constexpr int kRounds = kRows / kRowsPerRound;
  static_assert(kRowsPerRound % 8 == 0 && kRounds * kRowsPerRound == kRows, "whole rounds of 8-row groups");
  const int row = static_cast<int>(threadIdx.x) / kChunksPerRow;
  const int column = static_cast<int>(threadIdx.x) % kChunksPerRow * 8;
  const std::uint32_t destination = tile_address + 2 * swizzled_offset(row, column, kHeadDim);
  const Element* const source = slice + (first_row + row) * row_stride + column;
#pragma unroll
  for (int round = 0; round < kRounds; ++round) {
    const bool inside = first_row + row + round * kRowsPerRound < rows;
    copy_async_16(destination + round * kRowsPerRound * kHeadDim * 2,
                  inside ? source + round * kRowsPerRound * row_stride : slice, inside);
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
