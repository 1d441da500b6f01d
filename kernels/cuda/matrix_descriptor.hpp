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

}  // namespace attnbench
