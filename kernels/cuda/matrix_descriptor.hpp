// wgmma's shared-memory matrix descriptors (PTX ISA, "Matrix Descriptor
// Format"), pure C++ so tests/test_cudasim_hopper_instructions.cpp checks the
// encoding on the CPU: the matrix's start address (bits 13-0), leading
// dimension byte offset (29-16) and stride dimension byte offset (45-32), each
// encoded as (x & 0x3FFFF) >> 4, base offset 0 (bits 51-49), and the swizzle
// (63-62). For a K-major operand with a swizzle the leading offset is unused
// (the ISA assumes 1) and the stride offset is the distance between 8-row
// groups; docs/cudasim.md has the canonical layouts.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace attnbench {

// The layout field (bits 63-62).
enum class MatrixSwizzle : std::uint64_t { none = 0, bytes128 = 1, bytes64 = 2, bytes32 = 3 };

ATTNBENCH_HD constexpr std::uint64_t make_matrix_descriptor(std::uint32_t start_address,
                                                            std::uint32_t leading_byte_offset,
                                                            std::uint32_t stride_byte_offset, MatrixSwizzle swizzle) {
  return std::uint64_t{(start_address & 0x3FFFFu) >> 4} | std::uint64_t{(leading_byte_offset & 0x3FFFFu) >> 4} << 16 |
         std::uint64_t{(stride_byte_offset & 0x3FFFFu) >> 4} << 32 | static_cast<std::uint64_t>(swizzle) << 62;
}

// The same descriptor `bytes` further on (a multiple of 16): the next k16 step
// inside a swizzled row, or the next tile.
ATTNBENCH_HD constexpr std::uint64_t advance_matrix_descriptor(std::uint64_t descriptor, std::uint32_t bytes) {
  return descriptor + (bytes >> 4);
}

// The operands of this project's Hopper kernels are tiles stored as panels of
// 64 columns of 16-bit elements: rows of 128 bytes, the 128-byte swizzle, 8-row
// groups 1024 bytes apart, `panel_bytes` from one panel to the next (the
// layout a TMA load with a 64-column box and CU_TENSOR_MAP_SWIZZLE_128B writes).

// A K-major operand (k along the 128-byte rows: A or B of a product whose k is
// the tile's columns) for the k16 step `step`, from row `first_row`: 32 bytes
// into the row per step, the next panel every four steps. The leading offset
// is unused with a swizzle (the ISA assumes 1).
ATTNBENCH_HD constexpr std::uint64_t k_major_descriptor(std::uint32_t tile, int panel_bytes, int first_row, int step) {
  return make_matrix_descriptor(
      tile + static_cast<std::uint32_t>(step / 4 * panel_bytes + first_row * 128 + 32 * (step % 4)), 16, 1024,
      MatrixSwizzle::bytes128);
}

// An MN-major operand (n along the rows, k down the tile: B of a product
// whose k is the tile's rows, as V of P·V) for the k16 step `step`, i.e. rows
// 16·step to 16·step + 15: element (n, k) at (n % 64)·2 + (n / 64)·panel_bytes
// (the leading offset) + (k % 8)·128 + (k / 8)·1024 (the stride offset).
ATTNBENCH_HD constexpr std::uint64_t mn_major_descriptor(std::uint32_t tile, int panel_bytes, int step) {
  return make_matrix_descriptor(tile + static_cast<std::uint32_t>(step * 16 * 128),
                                static_cast<std::uint32_t>(panel_bytes), 1024, MatrixSwizzle::bytes128);
}

}  // namespace attnbench
