// The simulator's Hopper semantics (harness/cudasim/instructions.hpp) against
// the PTX ISA 9.0's figures and tables, typed here by hand: matrix descriptor
// bit fields (9.7.15.5.1.2.2), the swizzle patterns (5.5.7's tables), the
// canonical shared-memory layouts (9.7.15.5.1.2.1.3, with the ISA's own
// examples), the m64nNk16 register fragments (Figures 148 and 149), stmatrix's
// fragment (Figure 107). A wrong map in the simulator would let a kernel built
// on the same mistake pass; these expectations come from the ISA, never from
// the code under test.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/cudasim/instructions.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"

namespace cudasim::ptx {
namespace {

// ---- 9.7.15.5.1.2.2 Matrix Descriptor Format ------------------------------------------

// Bits 13-0: start address >> 4; 29-16: leading byte offset >> 4; 45-32: stride
// byte offset >> 4; 51-49: base offset; 63-62: 0 none, 1 128B, 2 64B, 3 32B.
TEST(CudasimMatrixDescriptor, DecodesEachBitField) {
  // start 0x400 (field 0x40), LBO 16 (field 1), SBO 1024 (field 0x40), 128-byte swizzle (1 << 62).
  const MatrixDescriptor a = decode_matrix_descriptor(0x4000004000010040ull);
  EXPECT_EQ(a.start_address, 0x400u);
  EXPECT_EQ(a.leading_byte_offset, 16u);
  EXPECT_EQ(a.stride_byte_offset, 1024u);
  EXPECT_EQ(a.base_offset, 0u);
  EXPECT_EQ(a.swizzle, Swizzle::bytes128);
  // start field 0x3fff (address 0x3fff0), LBO field 2 (32), SBO field 0x20 (512), base offset 3, 64-byte swizzle.
  const MatrixDescriptor b = decode_matrix_descriptor(0x8006002000023fffull);
  EXPECT_EQ(b.start_address, 0x3fff0u);
  EXPECT_EQ(b.leading_byte_offset, 32u);
  EXPECT_EQ(b.stride_byte_offset, 512u);
  EXPECT_EQ(b.base_offset, 3u);
  EXPECT_EQ(b.swizzle, Swizzle::bytes64);
  EXPECT_EQ(decode_matrix_descriptor(0xc000000000000000ull).swizzle, Swizzle::bytes32);
  EXPECT_EQ(decode_matrix_descriptor(0x0000000000000000ull).swizzle, Swizzle::none);
  // Bits outside the fields (14-15, 30-31, 46-48, 52-61) are not part of any field.
  const MatrixDescriptor c = decode_matrix_descriptor(0x3ff1c000c000c000ull);
  EXPECT_EQ(c.start_address, 0u);
  EXPECT_EQ(c.leading_byte_offset, 0u);
  EXPECT_EQ(c.stride_byte_offset, 0u);
  EXPECT_EQ(c.base_offset, 0u);
  EXPECT_EQ(c.swizzle, Swizzle::none);
}

// The kernels' encoder (kernels/cuda/matrix_descriptor.hpp) writes the same fields:
// matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4.
TEST(CudasimMatrixDescriptor, TheKernelsEncoderWritesTheIsasFields) {
  using attnbench::make_matrix_descriptor;
  using attnbench::MatrixSwizzle;
  EXPECT_EQ(make_matrix_descriptor(0x400, 16, 1024, MatrixSwizzle::bytes128), 0x4000004000010040ull);
  EXPECT_EQ(make_matrix_descriptor(0x2000, 256, 128, MatrixSwizzle::none), 0x0000000800100200ull);
  EXPECT_EQ(make_matrix_descriptor(0x40000 + 0x80, 0, 512, MatrixSwizzle::bytes64), 0x8000002000000008ull);
  EXPECT_EQ(make_matrix_descriptor(0x100, 0, 256, MatrixSwizzle::bytes32), 0xc000001000000010ull);
  EXPECT_EQ(attnbench::advance_matrix_descriptor(0x4000004000010040ull, 32), 0x4000004000010042ull);
}

// The Hopper kernels' operands: tiles in 64-column panels of 128-byte rows with the 128-byte swizzle.
// K-major: step s of row r starts at panel s / 4, row r, 32 bytes per step in the row; MN-major: step s
// starts 16 rows down, the panels `panel_bytes` apart as the leading offset. 8-row groups are 1024 apart.
TEST(CudasimMatrixDescriptor, ThePanelHelpersAddressEachK16StepOfATile) {
  const MatrixDescriptor k = decode_matrix_descriptor(attnbench::k_major_descriptor(0x1000, 16384, 64, 5));
  EXPECT_EQ(k.start_address, 0x1000u + 16384u + 64u * 128u + 32u);
  EXPECT_EQ(k.leading_byte_offset, 16u);
  EXPECT_EQ(k.stride_byte_offset, 1024u);
  EXPECT_EQ(k.swizzle, Swizzle::bytes128);
  EXPECT_EQ(decode_matrix_descriptor(attnbench::k_major_descriptor(0x1000, 16384, 0, 3)).start_address, 0x1000u + 96u);
  const MatrixDescriptor v = decode_matrix_descriptor(attnbench::mn_major_descriptor(0x8000, 10240, 2));
  EXPECT_EQ(v.start_address, 0x8000u + 2u * 16u * 128u);
  EXPECT_EQ(v.leading_byte_offset, 10240u);
  EXPECT_EQ(v.stride_byte_offset, 1024u);
  EXPECT_EQ(v.swizzle, Swizzle::bytes128);
}

// ---- 5.5.7 Swizzling Modes: the destination patterns, 16-byte chunks per 128-byte line ----

// Position p of line r holds chunk kPattern[r][p] (the ISA's tables, which repeat).
constexpr int k32[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}};
constexpr int k64[4][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4}};
constexpr int k128[8][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5},
                            {3, 2, 1, 0, 7, 6, 5, 4}, {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
                            {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};

// The table's chunk at the position swizzle_address puts chunk `chunk` of line `line`.
template <int kLines>
void expect_pattern(Swizzle swizzle, const int (&pattern)[kLines][8], std::uint32_t base) {
  for (int line = 0; line < 16; ++line) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      for (const std::uint32_t byte : {0u, 6u, 15u}) {
        const std::uint32_t address = base + static_cast<std::uint32_t>(128 * line + 16 * chunk) + byte;
        const std::uint32_t moved = swizzle_address(address, swizzle);
        ASSERT_EQ(moved / 128, address / 128) << "stays in its line";
        ASSERT_EQ(moved % 16, byte) << "a chunk moves whole";
        EXPECT_EQ(pattern[line % kLines][moved / 16 % 8], chunk) << "line " << line << " chunk " << chunk;
      }
    }
  }
}

TEST(CudasimSwizzle, EachModePermutesChunksAsTheIsasTables) {
  expect_pattern(Swizzle::bytes32, k32, 0);
  expect_pattern(Swizzle::bytes64, k64, 0);
  expect_pattern(Swizzle::bytes128, k128, 0);
  expect_pattern(Swizzle::bytes128, k128, 8192);
  const int identity[1][8] = {{0, 1, 2, 3, 4, 5, 6, 7}};
  expect_pattern(Swizzle::none, identity, 0);
  EXPECT_EQ(swizzle_bytes(Swizzle::bytes32), 32);
  EXPECT_EQ(swizzle_bytes(Swizzle::bytes128), 128);
}

// A pattern that does not start at its repeat's boundary: the phase is the
// shared address's (the base offset formula (dstMem / 128) % 8).
TEST(CudasimSwizzle, ThePatternFollowsTheAbsoluteSharedAddress) {
  // Line 3 of a 128-byte pattern: chunk 0 is at position 3 (k128[3][3] == 0).
  EXPECT_EQ(swizzle_address(3 * 128 + 0, Swizzle::bytes128), 3u * 128 + 3 * 16);
  EXPECT_EQ(swizzle_address(1024 + 3 * 128 + 0, Swizzle::bytes128), 1024u + 3 * 128 + 3 * 16);
  EXPECT_EQ(swizzle_address(512 + 128 + 16 * 2, Swizzle::bytes64), 512u + 128 + 16 * 3);  // line 1: 2 -> 3
}

// ---- 9.7.15.5.1.2.1.3 Canonical Layouts, through wgmma_element_address ---------------

MatrixDescriptor descriptor(std::uint32_t lbo, std::uint32_t sbo, Swizzle swizzle, std::uint32_t start = 0) {
  return MatrixDescriptor{start, lbo, sbo, 0, swizzle};
}

// The chunk permutation of the tables above, applied to a byte offset from a
// pattern-aligned start.
std::uint32_t through_table(std::uint32_t offset, Swizzle swizzle) {
  const std::uint32_t line = offset / 128, chunk = offset / 16 % 8;
  int position = static_cast<int>(chunk);
  for (int p = 0; p < 8; ++p) {
    const int at = swizzle == Swizzle::bytes32   ? k32[line % 2][p]
                   : swizzle == Swizzle::bytes64 ? k64[line % 4][p]
                   : swizzle == Swizzle::bytes128 ? k128[line % 8][p]
                                                  : p;
    if (at == static_cast<int>(chunk)) position = p;
  }
  return line * 128 + static_cast<std::uint32_t>(position) * 16 + offset % 16;
}

// The ISA's examples, bf16: "MN-major, no-swizzling": ((8,1,2),(8,2)):((1,8,64),(8,128)) elements, LBO = 128
// elements, SBO = 64; "MN-major, 32B swizzling": Swizzle<1,4,3> o ((8,2,2),(8,2)):((1,8,128),(16,256)), LBO
// = 128, SBO = 256; "MN-major, 64B swizzling": Swizzle<2,4,3> o ((8,4,2),(8,2)):((1,8,256),(32,512)), LBO =
// 256, SBO = 512. (mn, k) = ((i0, i1, i2), (j0, j1)).
TEST(CudasimCanonicalLayout, MnMajorMatchesTheIsasBf16Examples) {
  for (int mn = 0; mn < 16; ++mn) {
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t none = 2 * static_cast<std::uint32_t>(mn % 8 + 64 * (mn / 8) + 8 * (k % 8) + 128 * (k / 8));
      EXPECT_EQ(wgmma_element_address(descriptor(256, 128, Swizzle::none), true, mn, k), none) << mn << "," << k;
      const std::uint32_t s32 =
          2 * static_cast<std::uint32_t>(mn % 8 + 8 * (mn / 8 % 2) + 128 * (mn / 16) + 16 * (k % 8) + 256 * (k / 8));
      EXPECT_EQ(wgmma_element_address(descriptor(256, 512, Swizzle::bytes32), true, mn, k),
                through_table(s32, Swizzle::bytes32));
    }
  }
  for (int mn = 0; mn < 64; ++mn) {
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t s64 =
          2 * static_cast<std::uint32_t>(mn % 8 + 8 * (mn / 8 % 4) + 256 * (mn / 32) + 32 * (k % 8) + 512 * (k / 8));
      EXPECT_EQ(wgmma_element_address(descriptor(512, 1024, Swizzle::bytes64), true, mn, k),
                through_table(s64, Swizzle::bytes64))
          << mn << "," << k;
    }
  }
}

// K-major, the canonical forms with T = 8 (16-bit elements): no swizzle
// ((8,m),(T,2k)):((1T,SBO),(1,LBO)); 128-byte swizzle ((8,m),(T,2k)):((8T,SBO),(1,T)).
TEST(CudasimCanonicalLayout, KMajorMatchesTheCanonicalForms) {
  for (int mn = 0; mn < 64; ++mn) {
    for (int k = 0; k < 16; ++k) {
      // LBO 128 bytes (64 elements), SBO 256 bytes (128 elements).
      const std::uint32_t none = 2 * static_cast<std::uint32_t>(8 * (mn % 8) + 128 * (mn / 8) + k % 8 + 64 * (k / 8));
      EXPECT_EQ(wgmma_element_address(descriptor(128, 256, Swizzle::none), false, mn, k), none);
      // SBO 1024 bytes (512 elements): 8 rows of 128 bytes per group.
      const std::uint32_t s128 = 2 * static_cast<std::uint32_t>(64 * (mn % 8) + 512 * (mn / 8) + k);
      EXPECT_EQ(wgmma_element_address(descriptor(16, 1024, Swizzle::bytes128), false, mn, k),
                through_table(s128, Swizzle::bytes128))
          << mn << "," << k;
    }
  }
  // The second k16 step of a 128-byte K-major row starts 32 bytes in: row 1's chunk 2 moves to position 3.
  EXPECT_EQ(wgmma_element_address(descriptor(16, 1024, Swizzle::bytes128, 32), false, 1, 0), 128u + 3 * 16);
}

// ---- 9.7.15.5.1.1.1 Register fragments of m64nNk16 --------------------------------------

// Figure 149, "WGMMA .m64nNk16 register fragment layout for accumulator matrix
// D", for N = 16: rows 0-15 (warp 0; warp w holds rows 16w-16w+15 the same way,
// its threads named T0-T31 here), each cell the thread and register holding it.
const std::vector<std::string> kFigure149 = {
      "T0:d0 T0:d1 T1:d0 T1:d1 T2:d0 T2:d1 T3:d0 T3:d1 T0:d4 T0:d5 T1:d4 T1:d5 T2:d4 T2:d5 T3:d4 T3:d5",
      "T4:d0 T4:d1 T5:d0 T5:d1 T6:d0 T6:d1 T7:d0 T7:d1 T4:d4 T4:d5 T5:d4 T5:d5 T6:d4 T6:d5 T7:d4 T7:d5",
      "T8:d0 T8:d1 T9:d0 T9:d1 T10:d0 T10:d1 T11:d0 T11:d1 T8:d4 T8:d5 T9:d4 T9:d5 T10:d4 T10:d5 T11:d4 T11:d5",
      "T12:d0 T12:d1 T13:d0 T13:d1 T14:d0 T14:d1 T15:d0 T15:d1 T12:d4 T12:d5 T13:d4 T13:d5 T14:d4 T14:d5 T15:d4 T15:d5",
      "T16:d0 T16:d1 T17:d0 T17:d1 T18:d0 T18:d1 T19:d0 T19:d1 T16:d4 T16:d5 T17:d4 T17:d5 T18:d4 T18:d5 T19:d4 T19:d5",
      "T20:d0 T20:d1 T21:d0 T21:d1 T22:d0 T22:d1 T23:d0 T23:d1 T20:d4 T20:d5 T21:d4 T21:d5 T22:d4 T22:d5 T23:d4 T23:d5",
      "T24:d0 T24:d1 T25:d0 T25:d1 T26:d0 T26:d1 T27:d0 T27:d1 T24:d4 T24:d5 T25:d4 T25:d5 T26:d4 T26:d5 T27:d4 T27:d5",
      "T28:d0 T28:d1 T29:d0 T29:d1 T30:d0 T30:d1 T31:d0 T31:d1 T28:d4 T28:d5 T29:d4 T29:d5 T30:d4 T30:d5 T31:d4 T31:d5",
      "T0:d2 T0:d3 T1:d2 T1:d3 T2:d2 T2:d3 T3:d2 T3:d3 T0:d6 T0:d7 T1:d6 T1:d7 T2:d6 T2:d7 T3:d6 T3:d7",
      "T4:d2 T4:d3 T5:d2 T5:d3 T6:d2 T6:d3 T7:d2 T7:d3 T4:d6 T4:d7 T5:d6 T5:d7 T6:d6 T6:d7 T7:d6 T7:d7",
      "T8:d2 T8:d3 T9:d2 T9:d3 T10:d2 T10:d3 T11:d2 T11:d3 T8:d6 T8:d7 T9:d6 T9:d7 T10:d6 T10:d7 T11:d6 T11:d7",
      "T12:d2 T12:d3 T13:d2 T13:d3 T14:d2 T14:d3 T15:d2 T15:d3 T12:d6 T12:d7 T13:d6 T13:d7 T14:d6 T14:d7 T15:d6 T15:d7",
      "T16:d2 T16:d3 T17:d2 T17:d3 T18:d2 T18:d3 T19:d2 T19:d3 T16:d6 T16:d7 T17:d6 T17:d7 T18:d6 T18:d7 T19:d6 T19:d7",
      "T20:d2 T20:d3 T21:d2 T21:d3 T22:d2 T22:d3 T23:d2 T23:d3 T20:d6 T20:d7 T21:d6 T21:d7 T22:d6 T22:d7 T23:d6 T23:d7",
      "T24:d2 T24:d3 T25:d2 T25:d3 T26:d2 T26:d3 T27:d2 T27:d3 T24:d6 T24:d7 T25:d6 T25:d7 T26:d6 T26:d7 T27:d6 T27:d7",
      "T28:d2 T28:d3 T29:d2 T29:d3 T30:d2 T30:d3 T31:d2 T31:d3 T28:d6 T28:d7 T29:d6 T29:d7 T30:d6 T30:d7 T31:d6 T31:d7",
};
// Figure 148, "… register fragment layout for matrix A": the same grid over A's 16 columns.
const std::vector<std::string> kFigure148 = {
      "T0:a0 T0:a1 T1:a0 T1:a1 T2:a0 T2:a1 T3:a0 T3:a1 T0:a4 T0:a5 T1:a4 T1:a5 T2:a4 T2:a5 T3:a4 T3:a5",
      "T4:a0 T4:a1 T5:a0 T5:a1 T6:a0 T6:a1 T7:a0 T7:a1 T4:a4 T4:a5 T5:a4 T5:a5 T6:a4 T6:a5 T7:a4 T7:a5",
      "T8:a0 T8:a1 T9:a0 T9:a1 T10:a0 T10:a1 T11:a0 T11:a1 T8:a4 T8:a5 T9:a4 T9:a5 T10:a4 T10:a5 T11:a4 T11:a5",
      "T12:a0 T12:a1 T13:a0 T13:a1 T14:a0 T14:a1 T15:a0 T15:a1 T12:a4 T12:a5 T13:a4 T13:a5 T14:a4 T14:a5 T15:a4 T15:a5",
      "T16:a0 T16:a1 T17:a0 T17:a1 T18:a0 T18:a1 T19:a0 T19:a1 T16:a4 T16:a5 T17:a4 T17:a5 T18:a4 T18:a5 T19:a4 T19:a5",
      "T20:a0 T20:a1 T21:a0 T21:a1 T22:a0 T22:a1 T23:a0 T23:a1 T20:a4 T20:a5 T21:a4 T21:a5 T22:a4 T22:a5 T23:a4 T23:a5",
      "T24:a0 T24:a1 T25:a0 T25:a1 T26:a0 T26:a1 T27:a0 T27:a1 T24:a4 T24:a5 T25:a4 T25:a5 T26:a4 T26:a5 T27:a4 T27:a5",
      "T28:a0 T28:a1 T29:a0 T29:a1 T30:a0 T30:a1 T31:a0 T31:a1 T28:a4 T28:a5 T29:a4 T29:a5 T30:a4 T30:a5 T31:a4 T31:a5",
      "T0:a2 T0:a3 T1:a2 T1:a3 T2:a2 T2:a3 T3:a2 T3:a3 T0:a6 T0:a7 T1:a6 T1:a7 T2:a6 T2:a7 T3:a6 T3:a7",
      "T4:a2 T4:a3 T5:a2 T5:a3 T6:a2 T6:a3 T7:a2 T7:a3 T4:a6 T4:a7 T5:a6 T5:a7 T6:a6 T6:a7 T7:a6 T7:a7",
      "T8:a2 T8:a3 T9:a2 T9:a3 T10:a2 T10:a3 T11:a2 T11:a3 T8:a6 T8:a7 T9:a6 T9:a7 T10:a6 T10:a7 T11:a6 T11:a7",
      "T12:a2 T12:a3 T13:a2 T13:a3 T14:a2 T14:a3 T15:a2 T15:a3 T12:a6 T12:a7 T13:a6 T13:a7 T14:a6 T14:a7 T15:a6 T15:a7",
      "T16:a2 T16:a3 T17:a2 T17:a3 T18:a2 T18:a3 T19:a2 T19:a3 T16:a6 T16:a7 T17:a6 T17:a7 T18:a6 T18:a7 T19:a6 T19:a7",
      "T20:a2 T20:a3 T21:a2 T21:a3 T22:a2 T22:a3 T23:a2 T23:a3 T20:a6 T20:a7 T21:a6 T21:a7 T22:a6 T22:a7 T23:a6 T23:a7",
      "T24:a2 T24:a3 T25:a2 T25:a3 T26:a2 T26:a3 T27:a2 T27:a3 T24:a6 T24:a7 T25:a6 T25:a7 T26:a6 T26:a7 T27:a6 T27:a7",
      "T28:a2 T28:a3 T29:a2 T29:a3 T30:a2 T30:a3 T31:a2 T31:a3 T28:a6 T28:a7 T29:a6 T29:a7 T30:a6 T30:a7 T31:a6 T31:a7",
};

// The grid the simulator's map gives, warp by warp, and whether each cell of
// warp w's rows was filled by a thread of warp w, exactly once.
std::vector<std::string> printed_grid(Element (*map)(int, int), int registers, char name, int warp, bool& owned) {
  std::vector<std::vector<std::string>> cells(16, std::vector<std::string>(16));
  owned = true;
  for (int thread = 0; thread < 128; ++thread) {
    for (int i = 0; i < registers; ++i) {
      const Element at = map(thread, i);
      if (at.row / 16 != thread / 32) owned = false;
      if (at.row / 16 != warp) continue;
      std::string& cell = cells[static_cast<std::size_t>(at.row % 16)][static_cast<std::size_t>(at.column)];
      if (!cell.empty()) owned = false;
      cell = "T" + std::to_string(thread % 32) + ":" + name + std::to_string(i);
    }
  }
  std::vector<std::string> rows;
  for (const auto& row : cells) {
    std::string text;
    for (const std::string& cell : row) text += (text.empty() ? "" : " ") + cell;
    rows.push_back(text);
  }
  return rows;
}

TEST(CudasimWgmmaFragments, AccumulatorOfM64N16MatchesFigure149CellByCell) {
  for (int warp = 0; warp < 4; ++warp) {
    bool owned = false;
    const std::vector<std::string> grid = printed_grid(&wgmma_accumulator_element, 8, 'd', warp, owned);
    if (warp == 0) {
      for (const std::string& row : grid) std::cout << row << "\n";
    }
    EXPECT_TRUE(owned);
    for (std::size_t r = 0; r < 16; ++r) EXPECT_EQ(grid[r], kFigure149[r]) << "warp " << warp << ", row " << r;
  }
}

TEST(CudasimWgmmaFragments, MultiplicandAMatchesFigure148CellByCell) {
  for (int warp = 0; warp < 4; ++warp) {
    bool owned = false;
    const std::vector<std::string> grid = printed_grid(&wgmma_a_element, 8, 'a', warp, owned);
    if (warp == 0) {
      for (const std::string& row : grid) std::cout << row << "\n";
    }
    EXPECT_TRUE(owned);
    for (std::size_t r = 0; r < 16; ++r) EXPECT_EQ(grid[r], kFigure148[r]) << "warp " << warp << ", row " << r;
  }
}

// N = 256: registers d4j..d4j+3 repeat the first block 8j columns on (the figure's "…").
TEST(CudasimWgmmaFragments, TheAccumulatorPatternRepeatsAcrossN256) {
  std::set<std::pair<int, int>> seen;
  for (int thread = 0; thread < 128; ++thread) {
    for (int i = 0; i < 128; ++i) {
      const Element at = wgmma_accumulator_element(thread, i);
      EXPECT_TRUE(seen.insert({at.row, at.column}).second);
    }
  }
  EXPECT_EQ(seen.size(), 64u * 256u);
  EXPECT_EQ((std::pair{wgmma_accumulator_element(0, 124).row, wgmma_accumulator_element(0, 124).column}),
            (std::pair{0, 248}));
  EXPECT_EQ((std::pair{wgmma_accumulator_element(0, 127).row, wgmma_accumulator_element(0, 127).column}),
            (std::pair{8, 249}));
  EXPECT_EQ((std::pair{wgmma_accumulator_element(127, 126).row, wgmma_accumulator_element(127, 126).column}),
            (std::pair{63, 254}));
}

// ---- 9.7.15.5.2: the product ------------------------------------------------------

TEST(CudasimWgmma, ComputesDEqualsABPlusDForEveryN) {
  for (int n = 8; n <= 256; n += 8) {
    std::vector<double> a(64 * 16), b(static_cast<std::size_t>(16 * n));
    std::vector<float> d(static_cast<std::size_t>(64 * n)), start;
    for (int r = 0; r < 64; ++r) {
      for (int k = 0; k < 16; ++k) a[static_cast<std::size_t>(16 * r + k)] = (r + 2 * k) % 5 - 2;
    }
    for (int k = 0; k < 16; ++k) {
      for (int c = 0; c < n; ++c) b[static_cast<std::size_t>(n * k + c)] = (3 * k + c) % 7 - 3;
    }
    for (int i = 0; i < 64 * n; ++i) d[static_cast<std::size_t>(i)] = static_cast<float>(i % 11);
    start = d;
    wgmma_m64nNk16(n, a.data(), b.data(), true, d.data());
    for (int r = 0; r < 64; ++r) {
      for (int c = 0; c < n; ++c) {
        double expected = start[static_cast<std::size_t>(n * r + c)];
        for (int k = 0; k < 16; ++k) expected += ((r + 2 * k) % 5 - 2) * ((3 * k + c) % 7 - 3);
        ASSERT_EQ(d[static_cast<std::size_t>(n * r + c)], expected) << "n " << n << " (" << r << ", " << c << ")";
      }
    }
    wgmma_m64nNk16(n, a.data(), b.data(), false, d.data());  // scale-d false: D = A·B
    double first = 0;
    for (int k = 0; k < 16; ++k) first += ((2 * k) % 5 - 2) * ((3 * k) % 7 - 3);
    EXPECT_EQ(d[0], first);
  }
}

// ---- 9.7.14.5.16 stmatrix (Figure 107): lane l stores row l / 4, columns 2(l % 4), +1 ----

TEST(CudasimStmatrix, PlainAndTransposedElementsOfLanes0_5_31) {
  const auto at = [](int lane, int half, bool transposed) {
    const Element e = stmatrix_element(lane, half, transposed);
    return std::pair{e.row, e.column};
  };
  EXPECT_EQ(at(0, 0, false), (std::pair{0, 0}));
  EXPECT_EQ(at(0, 1, false), (std::pair{0, 1}));
  EXPECT_EQ(at(5, 0, false), (std::pair{1, 2}));
  EXPECT_EQ(at(31, 1, false), (std::pair{7, 7}));
  EXPECT_EQ(at(0, 1, true), (std::pair{1, 0}));
  EXPECT_EQ(at(5, 0, true), (std::pair{2, 1}));
  EXPECT_EQ(at(31, 1, true), (std::pair{7, 7}));
  EXPECT_EQ(at(30, 0, true), (std::pair{4, 7}));
}

}  // namespace
}  // namespace cudasim::ptx
