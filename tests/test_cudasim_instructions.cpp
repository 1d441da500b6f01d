// The simulator's PTX semantics (harness/cudasim/instructions.hpp) against the
// PTX ISA's figures, with lanes and elements spelled out by hand here: if a
// fragment map in the simulator were wrong, a kernel built on the same
// misunderstanding would pass under it, so these expectations come from the
// ISA's tables (version 9.0) and from nothing in the project.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "harness/cudasim/instructions.hpp"
#include "harness/dtype.hpp"

namespace cudasim::ptx {
namespace {

using Positions = std::vector<std::pair<int, int>>;

Positions a_fragment(int lane) {
  Positions out;
  for (int i = 0; i < 8; ++i) out.emplace_back(mma_a_element(lane, i).row, mma_a_element(lane, i).column);
  return out;
}
Positions b_fragment(int lane) {
  Positions out;
  for (int i = 0; i < 4; ++i) out.emplace_back(mma_b_element(lane, i).row, mma_b_element(lane, i).column);
  return out;
}
Positions c_fragment(int lane) {
  Positions out;
  for (int i = 0; i < 4; ++i) out.emplace_back(mma_c_element(lane, i).row, mma_c_element(lane, i).column);
  return out;
}

// Figure "MMA .m16n8k16 fragment layout for matrix A with .f16/.bf16 type":
// T0 holds a0,a1 at row 0 cols 0,1; a2,a3 at row 8; a4..a7 the same 8 columns on.
TEST(CudasimMmaFragments, MultiplicandAOfLanes0_5_31) {
  EXPECT_EQ(a_fragment(0), (Positions{{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}}));
  EXPECT_EQ(a_fragment(5), (Positions{{1, 2}, {1, 3}, {9, 2}, {9, 3}, {1, 10}, {1, 11}, {9, 10}, {9, 11}}));
  EXPECT_EQ(a_fragment(31), (Positions{{7, 6}, {7, 7}, {15, 6}, {15, 7}, {7, 14}, {7, 15}, {15, 14}, {15, 15}}));
}

// Figure "… fragment layout for matrix B": T0 holds b0,b1 at rows (k) 0,1 of
// column 0 and b2,b3 at rows 8,9.
TEST(CudasimMmaFragments, MultiplicandBOfLanes0_5_31) {
  EXPECT_EQ(b_fragment(0), (Positions{{0, 0}, {1, 0}, {8, 0}, {9, 0}}));
  EXPECT_EQ(b_fragment(5), (Positions{{2, 1}, {3, 1}, {10, 1}, {11, 1}}));
  EXPECT_EQ(b_fragment(31), (Positions{{6, 7}, {7, 7}, {14, 7}, {15, 7}}));
}

// Figure "… fragment layout for accumulator matrix C/D".
TEST(CudasimMmaFragments, AccumulatorOfLanes0_5_31) {
  EXPECT_EQ(c_fragment(0), (Positions{{0, 0}, {0, 1}, {8, 0}, {8, 1}}));
  EXPECT_EQ(c_fragment(5), (Positions{{1, 2}, {1, 3}, {9, 2}, {9, 3}}));
  EXPECT_EQ(c_fragment(31), (Positions{{7, 6}, {7, 7}, {15, 6}, {15, 7}}));
}

TEST(CudasimMmaFragments, EachOperandElementBelongsToExactlyOneLane) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (const auto& e : a_fragment(lane)) EXPECT_TRUE(a.insert(e).second);
    for (const auto& e : b_fragment(lane)) EXPECT_TRUE(b.insert(e).second);
    for (const auto& e : c_fragment(lane)) EXPECT_TRUE(c.insert(e).second);
  }
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(b.size(), 128u);
  EXPECT_EQ(c.size(), 128u);
}

// Packs a warp's fragments from whole matrices with the ISA's formulas written
// out in the test (groupID g = lane / 4, threadID_in_group t = lane % 4).
struct Warp {
  std::uint32_t a[32][4];
  std::uint32_t b[32][2];
  float c[32][4];
  float d[32][4];
};
Warp pack(const std::uint16_t (&A)[16][16], const std::uint16_t (&B)[16][8], const float (&C)[16][8]) {
  Warp w{};
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    // a0,a1: (g, 2t..2t+1); a2,a3: (g+8, …); a4,a5: (g, 2t+8..); a6,a7: (g+8, 2t+8..)
    const int a_rows[4] = {g, g + 8, g, g + 8};
    const int a_cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
    for (int r = 0; r < 4; ++r) {
      w.a[lane][r] = A[a_rows[r]][a_cols[r]] | std::uint32_t{A[a_rows[r]][a_cols[r] + 1]} << 16;
    }
    w.b[lane][0] = B[2 * t][g] | std::uint32_t{B[2 * t + 1][g]} << 16;
    w.b[lane][1] = B[2 * t + 8][g] | std::uint32_t{B[2 * t + 9][g]} << 16;
    w.c[lane][0] = C[g][2 * t];
    w.c[lane][1] = C[g][2 * t + 1];
    w.c[lane][2] = C[g + 8][2 * t];
    w.c[lane][3] = C[g + 8][2 * t + 1];
  }
  return w;
}

TEST(CudasimMma, ComputesDEqualsABPlusCOnSmallIntegers) {
  for (const MmaInputType type : {MmaInputType::f16, MmaInputType::bf16}) {
    const auto encode = [type](float x) {
      return type == MmaInputType::f16 ? attnbench::float_to_half(x) : attnbench::float_to_bfloat16(x);
    };
    std::uint16_t A[16][16], B[16][8];
    float C[16][8];
    for (int i = 0; i < 16; ++i) {
      for (int k = 0; k < 16; ++k) A[i][k] = encode(static_cast<float>((3 * i + 5 * k) % 7 - 3));
    }
    for (int k = 0; k < 16; ++k) {
      for (int j = 0; j < 8; ++j) B[k][j] = encode(static_cast<float>((2 * k + j) % 5 - 2));
    }
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 8; ++j) C[i][j] = static_cast<float>(i - j);
    }
    Warp w = pack(A, B, C);
    mma_m16n8k16(type, w.a, w.b, w.c, w.d);
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, t = lane % 4;
      const int rows[4] = {g, g, g + 8, g + 8};
      const int cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
      for (int e = 0; e < 4; ++e) {
        double expected = C[rows[e]][cols[e]];
        for (int k = 0; k < 16; ++k) {
          expected += ((3 * rows[e] + 5 * k) % 7 - 3) * ((2 * k + cols[e]) % 5 - 2);
        }
        EXPECT_EQ(w.d[lane][e], expected) << "lane " << lane << " element " << e;
      }
    }
  }
}

// Each product of two 16-bit values is exact, and the sum is rounded once:
// (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 needs 21 bits, and 2^24 + 16 products of 1
// would lose them all in a running fp32 sum.
TEST(CudasimMma, ProductsAreExactAndTheSumIsRoundedOnce) {
  std::uint16_t A[16][16] = {}, B[16][8] = {};
  float C[16][8] = {};
  A[0][0] = attnbench::float_to_half(1.0f + 0x1p-10f);
  B[0][0] = attnbench::float_to_half(1.0f + 0x1p-10f);
  for (int k = 0; k < 16; ++k) {
    A[1][k] = attnbench::float_to_half(1.0f);
    B[k][1] = attnbench::float_to_half(0.5f);
  }
  C[1][1] = 0x1p24f;
  Warp w = pack(A, B, C);
  mma_m16n8k16(MmaInputType::f16, w.a, w.b, w.c, w.d);
  EXPECT_EQ(w.d[0][0], 1.0f + 0x1p-9f + 0x1p-20f);  // lane 0 element 0 is D[0][0]
  EXPECT_EQ(w.d[4][1], 0x1p24f + 8.0f);             // lane 4 (g 1, t 0) element 1 is D[1][1]
}

// Figure "ldmatrix fragment layout for one 8x8 Matrix with 16-bit elements":
// T0 receives row 0's elements 0 and 1, T1 elements 2 and 3, …, T4 row 1.
TEST(CudasimLdmatrix, PlainAndTransposedRegistersOfLanes0_5_31) {
  std::uint16_t rows[4][8][8];
  for (int m = 0; m < 4; ++m) {
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 8; ++c) rows[m][r][c] = static_cast<std::uint16_t>(100 * m + 10 * r + c);
    }
  }
  const auto pair = [](int low, int high) { return static_cast<std::uint32_t>(low) | static_cast<std::uint32_t>(high) << 16; };
  EXPECT_EQ(ldmatrix_register(rows, 0, 0, false), pair(0, 1));
  EXPECT_EQ(ldmatrix_register(rows, 2, 5, false), pair(212, 213));    // matrix 2, row 1, cols 2, 3
  EXPECT_EQ(ldmatrix_register(rows, 3, 31, false), pair(376, 377));   // matrix 3, row 7, cols 6, 7
  // .trans: lane l gets column l / 4 of rows 2(l % 4) and 2(l % 4) + 1.
  EXPECT_EQ(ldmatrix_register(rows, 0, 0, true), pair(0, 10));
  EXPECT_EQ(ldmatrix_register(rows, 1, 5, true), pair(121, 131));     // matrix 1, rows 2, 3, col 1
  EXPECT_EQ(ldmatrix_register(rows, 3, 31, true), pair(367, 377));    // matrix 3, rows 6, 7, col 7
}

// CUDA's intrinsics pass c = (32 - width) << 8 | 0x1f (.up: without the 0x1f).
std::uint32_t clamp(int width) { return static_cast<std::uint32_t>(32 - width) << 8 | 0x1fu; }

TEST(CudasimShuffle, SourceLanesOfEveryModeAndWidth) {
  bool in_range = false;
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::butterfly, 5, 1, clamp(32), in_range), 4);
  EXPECT_TRUE(in_range);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::butterfly, 6, 16, clamp(32), in_range), 22);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::butterfly, 6, 16, clamp(16), in_range), 6);  // 22 is past the segment
  EXPECT_FALSE(in_range);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::index, 7, 3, clamp(32), in_range), 3);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::index, 13, 3, clamp(8), in_range), 11);  // segment 8..15
  EXPECT_TRUE(in_range);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::up, 5, 3, 0, in_range), 2);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::up, 2, 3, 0, in_range), 2);  // nothing 3 below lane 2
  EXPECT_FALSE(in_range);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::up, 17, 2, static_cast<std::uint32_t>(16) << 8, in_range), 17);
  EXPECT_FALSE(in_range);  // width 16: lane 17 is the second segment's lane 1
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::down, 5, 3, clamp(32), in_range), 8);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::down, 30, 3, clamp(32), in_range), 30);
  EXPECT_FALSE(in_range);
  EXPECT_EQ(shuffle_source_lane(ShuffleMode::down, 5, 3, clamp(8), in_range), 5);  // 8 is past the segment 0..7
  EXPECT_FALSE(in_range);
}

TEST(CudasimEx2, ApproximatesExp2AndFlushesSubnormals) {
  EXPECT_EQ(ex2_approx_ftz(0.0f), 1.0f);
  EXPECT_EQ(ex2_approx_ftz(3.0f), 8.0f);
  EXPECT_EQ(ex2_approx_ftz(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(ex2_approx_ftz(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(ex2_approx_ftz(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(ex2_approx_ftz(-126.0f), 0x1p-126f);                           // the smallest normal
  EXPECT_EQ(ex2_approx_ftz(-127.0f), 0.0f);                                // a subnormal result
  EXPECT_EQ(ex2_approx_ftz(std::numeric_limits<float>::denorm_min()), 1.0f);  // a subnormal input is 0
  EXPECT_NEAR(ex2_approx_ftz(0.5f), std::sqrt(2.0f), 2e-7f);
}

}  // namespace
}  // namespace cudasim::ptx
