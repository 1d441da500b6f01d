// The semantics of the PTX instructions the kernels use, as pure functions of
// a whole warp's operands, written from the PTX ISA (version 9.0; section
// titles below) and nothing else: not from kernels/cuda/flash_geometry.hpp,
// whose index maps these check rather than repeat. tests/test_cudasim_instructions.cpp
// holds them to lanes and elements spelled out by hand from the ISA's figures.
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

}  // namespace cudasim::ptx
