// The index arithmetic of cuda.flash (kernels/cuda/flash_geometry.hpp), checked
// on the CPU against the definitions it must agree with: ldmatrix and mma.sync
// fragment layouts from the PTX ISA, the swizzle and its step form, the tile
// copies, the key tiles a block of rows visits against the mask predicate, and
// the dropout words each lane ends up with against the contract; and the mask
// arithmetic of cuda.flash.sm90's tiling (kernels/cuda/flash_sm90_geometry.hpp)
// against the mask predicate.
#include <gtest/gtest.h>

#include <array>
#include <initializer_list>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "kernels/common/dropout.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"
#include "tests/mask_edges.hpp"
#include "tests/mask_kinds.hpp"

namespace attnbench {
namespace {

// A 16x16 block whose element (r, c) is the value 100·r + c.
int block_value(int row, int column) { return 100 * row + column; }

// What ldmatrix.x4 leaves in lane `lane`'s register `reg` (two elements), given
// every lane's row address as a (row, column) position in the block.
std::array<int, 2> ldmatrix(const std::array<FragmentPosition, 32>& addresses, int lane, int reg, bool transposed) {
  std::array<int, 2> elements{};
  for (int half = 0; half < 2; ++half) {
    // Plain: row lane / 4, column 2(lane % 4) + half of matrix reg.
    // Transposed: row 2(lane % 4) + half, column lane / 4.
    const int matrix_row = transposed ? 2 * (lane % 4) + half : lane / 4;
    const int matrix_column = transposed ? lane / 4 : 2 * (lane % 4) + half;
    const FragmentPosition row_start = addresses[static_cast<std::size_t>(8 * reg + matrix_row)];
    elements[static_cast<std::size_t>(half)] = block_value(row_start.row, row_start.column + matrix_column);
  }
  return elements;
}

template <typename Address>
std::array<FragmentPosition, 32> lane_addresses(Address address) {
  std::array<FragmentPosition, 32> addresses{};
  for (int lane = 0; lane < 32; ++lane) addresses[static_cast<std::size_t>(lane)] = address(lane);
  return addresses;
}

TEST(FlashGeometry, QLoadedWithLdmatrixIsTheAFragment) {
  const auto addresses = lane_addresses(ldmatrix_row_for_a);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const auto loaded = ldmatrix(addresses, lane, reg, false);
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition expected = mma_a_position(lane, 2 * reg + half);
        EXPECT_EQ(loaded[static_cast<std::size_t>(half)], block_value(expected.row, expected.column))
            << "lane " << lane << " register " << reg;
      }
    }
  }
}

// K is stored [key][dim]; the B operand of S = Q·Kᵀ has k = dim, n = key.
TEST(FlashGeometry, KLoadedWithLdmatrixIsTheBFragmentOfTwoKeyTiles) {
  const auto addresses = lane_addresses(ldmatrix_row_for_b);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const int key_tile = reg / 2;
      const auto loaded = ldmatrix(addresses, lane, reg, false);
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition b = mma_b_position(lane, 2 * (reg % 2) + half);
        EXPECT_EQ(loaded[static_cast<std::size_t>(half)], block_value(8 * key_tile + b.column, b.row))
            << "lane " << lane << " register " << reg;
      }
    }
  }
}

// V is stored [key][dim]; the B operand of O = P·V has k = key, n = dim.
TEST(FlashGeometry, VLoadedWithTransposedLdmatrixIsTheBFragmentOfTwoDimTiles) {
  const auto addresses = lane_addresses(ldmatrix_row_for_transposed_b);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const int dim_tile = reg / 2;
      const auto loaded = ldmatrix(addresses, lane, reg, true);
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition b = mma_b_position(lane, 2 * (reg % 2) + half);
        EXPECT_EQ(loaded[static_cast<std::size_t>(half)], block_value(b.row, 8 * dim_tile + b.column))
            << "lane " << lane << " register " << reg;
      }
    }
  }
}

// The kernel packs A register r of P from C tile r / 2, elements 2(r % 2) and 2(r % 2) + 1.
TEST(FlashGeometry, TwoAccumulatorTilesAreTheAFragmentOfTheirSixteenColumns) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition a = mma_a_position(lane, 2 * reg + half);
        FragmentPosition c = mma_c_position(lane, 2 * (reg % 2) + half);
        c.column += 8 * (reg / 2);
        EXPECT_EQ(a.row, c.row) << lane;
        EXPECT_EQ(a.column, c.column) << lane;
      }
    }
  }
}

TEST(FlashGeometry, FragmentLayoutsCoverTheirTilesOnce) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < 8; ++e) a.insert({mma_a_position(lane, e).row, mma_a_position(lane, e).column});
    for (int e = 0; e < 4; ++e) b.insert({mma_b_position(lane, e).row, mma_b_position(lane, e).column});
    for (int e = 0; e < 4; ++e) c.insert({mma_c_position(lane, e).row, mma_c_position(lane, e).column});
  }
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(b.size(), 128u);
  EXPECT_EQ(c.size(), 128u);
}

TEST(FlashGeometry, SwizzlePermutesChunksWithinRowsAndSpreadsLdmatrixRowsOverBanks) {
  for (int row_elements : {64, 128}) {
    for (int row = 0; row < 64; ++row) {
      std::set<int> offsets;
      for (int column = 0; column < row_elements; ++column) {
        const int offset = swizzled_offset(row, column, row_elements);
        EXPECT_GE(offset, row * row_elements);
        EXPECT_LT(offset, (row + 1) * row_elements);
        offsets.insert(offset);
      }
      EXPECT_EQ(static_cast<int>(offsets.size()), row_elements);
    }
    // Eight consecutive rows at the same logical chunk (one ldmatrix matrix) land
    // on eight different 16-byte bank groups of a 128-byte line.
    for (int first_row = 0; first_row < 64; first_row += 8) {
      for (int chunk = 0; chunk < row_elements / 8; ++chunk) {
        std::set<int> bank_groups;
        for (int r = 0; r < 8; ++r) bank_groups.insert((2 * swizzled_offset(first_row + r, 8 * chunk, row_elements) / 16) % 8);
        EXPECT_EQ(bank_groups.size(), 8u);
      }
    }
  }
}

// The kernel's addresses: a lane base at (row, chunk 0 or 1) moved by even chunk
// steps and 8-row steps, applied to a 128-byte aligned tile base.
TEST(FlashGeometry, SwizzleStepsAgreeWithTheSwizzle) {
  for (int row_elements : {64, 128}) {
    const int row_bytes = 2 * row_elements;
    for (std::uint32_t tile_base : {0u, 128u * 40u, 16384u + 2048u}) {
      for (int row = 0; row < 16; ++row) {
        for (int chunk = 0; chunk < 2; ++chunk) {
          const std::uint32_t lane = tile_base + static_cast<std::uint32_t>(swizzled_lane_bytes(row, chunk, row_bytes));
          for (int chunk_step = 0; chunk + chunk_step < row_elements / 8; chunk_step += 2) {
            for (int row_step = 0; row_step < 64; row_step += 8) {
              const std::uint32_t expected =
                  tile_base + 2u * static_cast<std::uint32_t>(
                                       swizzled_offset(row + row_step, 8 * (chunk + chunk_step), row_elements));
              EXPECT_EQ(swizzled_step(lane, chunk_step, row_step, row_bytes), expected)
                  << "row " << row << " chunk " << chunk << " +" << chunk_step << " +" << row_step << " rows";
            }
          }
        }
      }
    }
  }
}

// copy_tile_async (kernels/cuda/tile_copy.hpp): thread x writes chunk x % (d/8)
// of rows x / (d/8) + r·(threads / (d/8)), with the forward's and the backward's
// thread counts and tile heights: every chunk of the tile exactly once.
TEST(FlashGeometry, TileCopiesWriteEveryChunkOnce) {
  for (int head_dim : {64, 128}) {
    const FlashTileShape forward = flash_tile_shape(head_dim);
    const FlashBackwardShape backward = flash_backward_shape(head_dim);
    const std::pair<int, std::vector<int>> uses[] = {{32 * forward.warps, {forward.block_m, forward.block_n}},
                                                     {32 * backward.warps, {backward.block_m, backward.block_n}}};
    for (const auto& [threads, heights] : uses) {
      const int chunks_per_row = head_dim / 8;
      const int rows_per_round = threads / chunks_per_row;
      ASSERT_EQ(rows_per_round % 8, 0);
      for (int rows : heights) {
        ASSERT_EQ(rows % rows_per_round, 0);
        std::set<int> written;
        for (int thread = 0; thread < threads; ++thread) {
          const int row = thread / chunks_per_row;
          const int base = swizzled_offset(row, thread % chunks_per_row * 8, head_dim);
          for (int round = 0; round < rows / rows_per_round; ++round) {
            const int offset = base + round * rows_per_round * head_dim;
            EXPECT_EQ(offset, swizzled_offset(row + round * rows_per_round, thread % chunks_per_row * 8, head_dim));
            written.insert(offset);
          }
        }
        EXPECT_EQ(static_cast<int>(written.size()), rows * chunks_per_row) << threads << " threads, " << rows << " rows";
      }
    }
  }
}

TEST(FlashGeometry, SharedMemoryFitsEveryTargetAndTheGridCoversEveryQueryTileOnce) {
  for (int head_dim : {64, 128}) {
    EXPECT_LE(flash_shared_bytes(head_dim, 2), 163 * 1024) << "sm_80 allows 163 KiB per CTA";
    const FlashTileShape shape = flash_tile_shape(head_dim);
    EXPECT_EQ(shape.block_m, 16 * shape.warps);
    EXPECT_EQ(shape.block_n % 16, 0);
    for (std::int64_t seqlen : {1, 63, 64, 65, 1000, 16384}) {
      const auto tiles = static_cast<int>(flash_query_tiles(seqlen, shape));
      EXPECT_GE(tiles * shape.block_m, seqlen);
      EXPECT_LT((tiles - 1) * shape.block_m, seqlen);
      std::set<int> seen;
      for (int x = 0; x < tiles; ++x) seen.insert(flash_query_tile_of_block(x, tiles));
      EXPECT_EQ(static_cast<int>(seen.size()), tiles);
      EXPECT_EQ(*seen.begin(), 0);
      EXPECT_EQ(flash_query_tile_of_block(0, tiles), tiles - 1) << "the heaviest causal tile first";
    }
  }
}

// Against the predicate: a visited tile range holds every visible key of the
// rows, and every tile outside it holds none.
TEST(FlashGeometry, KeyTilesHoldEveryVisibleKeyAndSkippedTilesNone) {
  const std::int64_t shapes[][4] = {{200, 200, 200, 200}, {129, 257, 129, 257}, {257, 129, 257, 129},
                                    {300, 300, 170, 90},  {64, 640, 64, 640},   {640, 64, 600, 50}};
  for (const MaskSpec& mask : every_mask_kind()) {
    for (const auto& shape : shapes) {
      const std::int64_t seqlen_q = shape[0], seqlen_k = shape[1], len_q = shape[2], len_k = shape[3];
      for (int block_n : {64, 128}) {
        for (int rows : {16, 64}) {
          const int key_tiles = static_cast<int>((seqlen_k + block_n - 1) / block_n);
          for (std::int64_t row_begin = 0; row_begin < seqlen_q; row_begin += rows) {
            const KeyTileRange range = flash_key_tiles(mask, row_begin, row_begin + rows, len_q, len_k, block_n);
            for (int tile = 0; tile < key_tiles; ++tile) {
              bool any_visible = false;
              for (std::int64_t i = row_begin; i < row_begin + rows; ++i) {
                for (std::int64_t j = tile * block_n; j < (tile + 1) * block_n; ++j) {
                  any_visible = any_visible || is_visible(mask, i, j, len_q, len_k);
                }
              }
              const bool visited = tile >= range.first && tile < range.end;
              if (any_visible) {
                EXPECT_TRUE(visited) << "tile " << tile << " rows from " << row_begin;
              }
              if (!visited) {
                EXPECT_FALSE(any_visible);
              }
            }
            // The bound is tight for a single interval: the first and last visited tiles hold a visible key.
            if (!range.empty()) {
              for (int tile : {range.first, range.end - 1}) {
                bool any_visible = false;
                for (std::int64_t i = row_begin; i < row_begin + rows; ++i) {
                  for (std::int64_t j = tile * block_n; j < (tile + 1) * block_n; ++j) {
                    any_visible = any_visible || is_visible(mask, i, j, len_q, len_k);
                  }
                }
                EXPECT_TRUE(any_visible) << "tile " << tile << " visited for nothing";
              }
            }
          }
        }
      }
    }
  }
}

// Rows of a CTA that a kernel treats as a unit: a CTA, a warp, a consumer warpgroup.
struct RowGroup {
  int rows;
  const char* name;
};

// Every mask and length edge at every position of a kernel's tiling,
// exhaustively: each group of `bounded` (its rows) visits exactly the key tiles
// from the first to the last that hold a key one of its rows sees, by
// is_visible() over every element, and each group of `predicated` skips the
// per-element predicates (tile_fully_visible) exactly on the tiles whose every
// element is visible to its rows. One CTA and one key tile past the valid
// lengths are checked as well (a padded grid): they hold nothing, so nothing is
// visited.
void expect_key_tiles_at_every_edge_position(const test::Tiling& tiling, std::initializer_list<RowGroup> bounded,
                                             RowGroup predicated) {
  test::FailureLog log;
  test::for_every_edge_position(tiling, [&](const test::MaskedLengths& c, const test::VisibilityGrid& grid,
                                            int query_tiles, int key_tiles) {
    for (int cta = 0; cta < query_tiles; ++cta) {
      const std::int64_t cta_row = std::int64_t{cta} * tiling.block_m;
      for (const RowGroup& group : bounded) {
        for (std::int64_t row = cta_row; row < cta_row + tiling.block_m; row += group.rows) {
          const KeyTileRange range = flash_key_tiles(c.mask, row, row + group.rows, c.len_q, c.len_k, tiling.block_n);
          const test::TileHull expected = test::tiles_with_visible_elements(key_tiles, [&](int tile) {
            return grid.any(row, row + group.rows, std::int64_t{tile} * tiling.block_n,
                            std::int64_t{tile + 1} * tiling.block_n);
          });
          if (!expected.is(range.first, range.end) && log.add()) {
            ADD_FAILURE() << group.name << " rows [" << row << ", " << row + group.rows << ") of " << c.describe()
                          << ": visits key tiles [" << range.first << ", " << range.end
                          << "), the tiles with a visible key are [" << expected.first << ", " << expected.end << ")";
          }
        }
      }
      for (std::int64_t row = cta_row; row < cta_row + tiling.block_m; row += predicated.rows) {
        for (int tile = 0; tile < key_tiles; ++tile) {
          const std::int64_t first_key = std::int64_t{tile} * tiling.block_n;
          const bool full = tile_fully_visible(c.mask, row, row + predicated.rows, first_key,
                                               first_key + tiling.block_n, c.len_q, c.len_k);
          if (full != grid.all(row, row + predicated.rows, first_key, first_key + tiling.block_n) && log.add()) {
            ADD_FAILURE() << predicated.name << " rows from " << row << ", key tile " << tile << " of "
                          << c.describe() << ": tile_fully_visible says " << full;
          }
        }
      }
    }
  });
  EXPECT_EQ(log.failures(), 0);
}

// cuda.flash: each CTA (kBlockM rows) and each warp (kWarpRows rows) bounds its
// key tiles; a warp decides which tiles skip the predicates.
template <typename Traits>
void expect_forward_tiles_at_every_edge_position() {
  const test::Tiling tiling = test::tiling_of<Traits>();
  expect_key_tiles_at_every_edge_position(tiling, {{tiling.block_m, "CTA"}, {tiling.warp_rows, "warp"}},
                                          {tiling.warp_rows, "warp"});
}

TEST(FlashGeometry, EveryCtaAndWarpVisitsExactlyTheKeyTilesWithVisibleKeysAtEveryEdgePosition) {
  expect_forward_tiles_at_every_edge_position<FlashTraits<64>>();
  if (test::tiling_of<FlashTraits<128>>() != test::tiling_of<FlashTraits<64>>()) {
    expect_forward_tiles_at_every_edge_position<FlashTraits<128>>();
  }
}

// cuda.flash.sm90: each CTA (kBlockM rows) bounds its key tiles (its two
// consumers follow the CTA's range), and a consumer warpgroup (kConsumerRows
// rows) decides which tiles skip the predicates.
template <typename Traits>
void expect_sm90_tiles_at_every_edge_position() {
  const test::Tiling tiling = test::tiling_of<Traits>();
  expect_key_tiles_at_every_edge_position(tiling, {{tiling.block_m, "CTA"}}, {Traits::kConsumerRows, "consumer"});
}

TEST(FlashSm90Geometry, EveryCtaAndConsumerBoundsItsKeyTilesExactlyAtEveryEdgePosition) {
  expect_sm90_tiles_at_every_edge_position<Sm90Traits<64>>();
  if (test::tiling_of<Sm90Traits<128>>() != test::tiling_of<Sm90Traits<64>>()) {
    expect_sm90_tiles_at_every_edge_position<Sm90Traits<128>>();
  }
  // d256's 80-key tiles, which the generated shapes (head dims 64 and 128) do not place edges in.
  ASSERT_NE(test::tiling_of<Sm90Traits<256>>(), test::tiling_of<Sm90Traits<128>>());
  expect_sm90_tiles_at_every_edge_position<Sm90Traits<256>>();
}

// The kernel's dropout exchange emulated for a whole warp: each lane draws one
// Philox call per 8-key fragment, sends two words to lane ^ 1, and must end up
// with the contract's word for every element it holds.
TEST(FlashGeometry, DropoutWordsReachTheLanesThatHoldTheirElements) {
  const DropoutRng rng = make_dropout_rng(0.1, 0x0123456789abcdefull, 7, 6);
  const std::uint32_t batch = 3, head = 5;
  for (int row0_base : {0, 16, 4080}) {
    for (int first_key : {0, 8, 64, 1000}) {
      std::array<PhiloxBlock, 32> draws{};
      for (int lane = 0; lane < 32; ++lane) {
        const int row = row0_base + lane / 4 + 8 * dropout_draw_row_half(lane);
        const auto group = static_cast<std::uint32_t>(first_key / 4 + (lane % 4) / 2);
        draws[static_cast<std::size_t>(lane)] = dropout_words(rng, batch, head, static_cast<std::uint32_t>(row), group);
      }
      for (int lane = 0; lane < 32; ++lane) {
        const PhiloxBlock& partner = draws[static_cast<std::size_t>(lane ^ 1)];
        const int sent_by_partner = dropout_sent_word(lane ^ 1);
        for (int half = 0; half < 2; ++half) {
          const DropoutWordSource source = dropout_word_source(lane, half);
          for (int pair = 0; pair < 2; ++pair) {
            const std::uint32_t word = source.own ? draws[static_cast<std::size_t>(lane)].word[source.word + pair]
                                                  : partner.word[sent_by_partner + pair];
            const FragmentPosition c = mma_c_position(lane, 2 * half + pair);
            const auto row = static_cast<std::uint32_t>(row0_base + c.row);
            const auto key = static_cast<std::uint32_t>(first_key + c.column);
            const PhiloxBlock expected = dropout_words(rng, batch, head, row, key / 4);
            EXPECT_EQ(word, expected.word[key % 4]) << "lane " << lane << " row " << row << " key " << key;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnbench
