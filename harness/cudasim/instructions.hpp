// The semantics of the PTX instructions the kernels use, as pure functions of
// a whole warp's (or warpgroup's) operands, written from the PTX ISA (version
// 9.0; section numbers and titles below) and nothing else: not from
// kernels/cuda/flash_geometry.hpp or kernels/cuda/hopper_primitives.hpp, whose
// index maps these check rather than repeat. tests/test_cudasim_instructions.cpp
// and tests/test_cudasim_hopper_instructions.cpp hold them to lanes, elements,
// bit fields and addresses spelled out by hand from the ISA's figures.
#pragma once

#include <cstdint>

#include "harness/cudasim/instruction_types.hpp"

namespace cudasim::ptx {

// A position in a matrix operand: row, column.
struct Element {
  int row;
  int column;
};

// "Matrix Fragments for mma.m16n8k16 with floating point type" (§9.7.14.5.8),
// .f16 and .bf16 multiplicands, .f32 accumulators, with groupID = lane >> 2 and
// threadID_in_group = lane % 4. Element i of a lane's fragment is half i % 2 of
// register i / 2 (A and B) or register i (C and D).
Element mma_a_element(int lane, int i);  // i in 0..7, A is 16x16 (row-major)
Element mma_b_element(int lane, int i);  // i in 0..3, B is 16x8 (k x n)
Element mma_c_element(int lane, int i);  // i in 0..3, C and D are 16x8

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (§9.7.14.5.14,
// "Matrix Multiply-Accumulate Instruction: mma") for the whole warp: d = a·b + c
// from every lane's fragments. Each product of two 16-bit values is exact; the
// sixteen products of a k step and the accumulator are added in double precision,
// in order of k, and the sum is rounded once to fp32 (nearest even). The ISA leaves
// the order and the internal precision of the sum to the implementation; tensor
// cores keep fewer bits, so a simulated d can differ from a GPU's in the last
// bits of fp32.
void mma_m16n8k16(MmaInputType type, const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][2],
                  const float (&c)[32][4], float (&d)[32][4]);

// "Warp-level matrix load instruction: ldmatrix" (§9.7.14.5.15), .m8n8 .b16:
// `rows[m][r]` is row r of matrix m as 8 b16 elements, read from the address
// that lane 8m + r supplied. Register m of `lane` holds, low half first, row
// lane / 4, columns 2(lane % 4) and 2(lane % 4) + 1 of matrix m; with .trans
// the matrix is read column-major: column lane / 4 of rows 2(lane % 4) and
// 2(lane % 4) + 1.
std::uint32_t ldmatrix_register(const std::uint16_t (&rows)[4][8][8], int matrix, int lane, bool transposed);

// "Data Movement and Conversion Instructions: shfl.sync" (§9.7.9.6): the lane
// whose `a` lane `lane` receives for operands b and c (c[4:0] the clamp value,
// c[12:8] the segment mask). `in_range` is false when the computed lane is out
// of range, and the lane then keeps its own value (the returned lane is `lane`).
int shuffle_source_lane(ShuffleMode mode, int lane, std::uint32_t b, std::uint32_t c, bool& in_range);

// "Floating Point Instructions: ex2" (§9.7.4.13), ex2.approx.ftz.f32: 2^x with
// subnormal inputs and results flushed to sign-preserving zero; ex2(-inf) = +0,
// ex2(+inf) = +inf, NaN in, NaN out. The simulator returns 2^x rounded to fp32
// (computed in double), which is within the ISA's bound on the approximation's
// error (2^-22 relative, at most 2 ulp, on the range the kernels use).
float ex2_approx_ftz(float x);

// ---- Hopper (sm_90a) -----------------------------------------------------------------

// 5.5.7 "Swizzling Modes" (the tensor copy's shared-memory layout) and
// 9.7.15.5.1.2 "Shared Memory Matrix Layout" (wgmma's): within each repeat of
// the pattern (256, 512 or 1024 bytes, at shared addresses aligned to it), the
// 16-byte chunk c of 128-byte line r holds chunk c XOR (r mod 2, 4 or 8).
enum class Swizzle { none, bytes32, bytes64, bytes128 };
std::uint32_t swizzle_address(std::uint32_t address, Swizzle swizzle);
// The span a swizzle permutes chunks within (32, 64, 128 bytes; 16 for none).
int swizzle_bytes(Swizzle swizzle);

// 9.7.15.5.1.2.2 "Matrix Descriptor Format": bits 13-0 the start address,
// 29-16 the leading dimension byte offset, 45-32 the stride dimension byte
// offset (each encoded as (x & 0x3FFFF) >> 4), 51-49 the base offset, 63-62
// the swizzling mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
struct MatrixDescriptor {
  std::uint32_t start_address = 0;
  std::uint32_t leading_byte_offset = 0;  // in bytes
  std::uint32_t stride_byte_offset = 0;   // in bytes
  unsigned base_offset = 0;
  Swizzle swizzle = Swizzle::none;
};
MatrixDescriptor decode_matrix_descriptor(std::uint64_t descriptor);

// 9.7.15.5.1.2.1.3 "Canonical Layouts", for 16-bit elements (T = 8 elements per
// 16 bytes): the shared address of element (mn, k) of a wgmma operand (mn the
// row of A or the column of B, k < 16), swizzled. K-major: 8-row core
// matrices of 16 bytes (no swizzle; the second 8 k at LBO) or of the swizzle's
// width (swizzled; LBO unused), 8-row groups at SBO. MN-major: 8 k-rows of 16
// bytes of mn (no swizzle: the next 8 mn at SBO, the next 8 k at LBO) or of the
// swizzle's width (swizzled: the next such span of mn at LBO, the next 8 k at SBO).
std::uint32_t wgmma_element_address(const MatrixDescriptor& descriptor, bool mn_major, int mn, int k);

// 9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16" (Figures 148
// and 149), for thread `thread` of the warpgroup (0-127): element i of its
// accumulator fragment (fp32 register i, i < N/2) and of its A fragment
// (a0-a7: half i % 2 of register i / 2). Warp w of the warpgroup holds rows
// 16w to 16w + 15, laid out as mma.m16n8k16's C and A fragments (N/8 of them
// side by side for the accumulator).
Element wgmma_accumulator_element(int thread, int i);
Element wgmma_a_element(int thread, int i);

// 9.7.15.5.2 "wgmma.mma_async" for .m64nNk16.f32 with .f16 or .bf16 inputs: D
// (64 x N, row-major) = A (64 x 16) · B (16 x N) + (scale_d ? D : 0), A and B
// already decoded and negated per imm-scale-a/-b. As for mma: products exact,
// each element's sum in order of k in double precision, rounded once to fp32.
void wgmma_m64nNk16(int n, const double* a, const double* b, bool scale_d, float* d);

// 9.7.14.5.16 "stmatrix" (.m8n8, .b16): the inverse of ldmatrix's fragment —
// register m of `lane` holds, low half first, row lane / 4, columns 2(lane % 4)
// and 2(lane % 4) + 1 of matrix m; with .trans, column lane / 4 of rows
// 2(lane % 4) and 2(lane % 4) + 1. Element (row, column) of matrix m.
Element stmatrix_element(int lane, int half, bool transposed);

}  // namespace cudasim::ptx
