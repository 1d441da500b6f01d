// The epilogue of a Hopper consumer warpgroup: its 64 x kColumns fp32
// accumulator fragment (wgmma's m64nNk16 layout) to global memory through
// shared memory and TMA.
//   1. Each thread rounds its accumulators to fp16/bf16 in pairs and writes
//      them with stmatrix (four 8 x 8 matrices per 16 columns) into staging
//      panels of 64 columns: 64 rows of 128 bytes each, 128-byte swizzle,
//      `panel_bytes` from one panel to the next, the layout a TMA tensor map
//      with a 64-column box and CU_TENSOR_MAP_SWIZZLE_128B reads. The staging
//      must be 1024-byte aligned and no longer read by anyone.
//   2. fence.proxy.async makes the writes (generic proxy) visible to the TMA
//      store (async proxy); the warpgroup's 128 threads then synchronise on
//      named barrier `barrier`, so every thread's writes precede the store.
//   3. Thread 0 of the warpgroup stores panel p at tensor coordinates
//      (first_column + 64·p, rest...) and waits until the copies have read
//      shared memory (cp.async.bulk.wait_group.read), so that the CTA may exit
//      or reuse the staging. The tensor map's bounds clip what lies outside it.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Step 1 for 16 columns: stmatrix of `registers` (register m: the packed pair
// of accumulator elements 4j + 2m and 4j + 2m + 1 of the 16 columns from 8j,
// which is also the A fragment wgmma's RS form takes for them) into the
// panels at `staging`, rows from `first_row` (a multiple of 64) of the panels.
__device__ __forceinline__ void store_fragment_columns(std::uint32_t staging, int panel_bytes, int first_row, int j,
                                                       const std::uint32_t (&registers)[4]) {
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const int warp = thread / 32, lane = thread % 32;
  // stmatrix takes the lane addresses ldmatrix would for an A fragment.
  const FragmentPosition lane_position = ldmatrix_row_for_a(lane);
  const int lane_row = first_row + 16 * warp + lane_position.row;
  const int column = 8 * j + lane_position.column;
  store_matrix_x4(
      staging + static_cast<std::uint32_t>(column / 64 * panel_bytes + swizzled_lane_bytes(lane_row, column % 64 / 8, 128)),
      registers);
}

template <typename Element, int kColumns, typename... Coordinates>
__device__ __forceinline__ void store_accumulators_with_tma(const float (&accumulators)[kColumns / 2],
                                                            std::uint32_t staging, int panel_bytes, int barrier,
                                                            const CUtensorMap* map, int first_column,
                                                            Coordinates... rest) {
  static_assert(kColumns % 64 == 0, "whole 64-column panels");
  const int thread = static_cast<int>(threadIdx.x) % 128;
#pragma unroll
  for (int j = 0; j < kColumns / 8; j += 2) {  // 16 columns: rows 0-7 and 8-15 of columns 8j, then of 8j + 8
    std::uint32_t registers[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      registers[m] = pack_pair<Element>(accumulators[4 * j + 2 * m], accumulators[4 * j + 2 * m + 1]);
    }
    store_fragment_columns(staging, panel_bytes, 0, j, registers);
  }
  fence_proxy_async();
  named_barrier_sync(barrier, 128);
  if (thread == 0) {
#pragma unroll
    for (int panel = 0; panel < kColumns / 64; ++panel) {
      tma_store(map, staging + static_cast<std::uint32_t>(panel * panel_bytes), first_column + 64 * panel, rest...);
    }
    bulk_commit_group();
    bulk_wait_group_read<0>();  // the staging must outlive the copies' reads
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
