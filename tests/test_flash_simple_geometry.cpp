// The index logic of cuda.flash.simple (kernels/cuda/flash_simple_geometry.hpp),
// checked on the CPU: the grid covers every query row exactly once, the key
// tiles a CTA visits hold every key its rows see (and the skipped ones none),
// the lanes cover every dim of a row once, and the staging chunks cover a tile
// once, all within the static shared-memory limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/mask.hpp"
#include "kernels/cuda/flash_simple_geometry.hpp"
#include "tests/mask_edges.hpp"

namespace attnbench {
namespace {

using namespace flash_simple;

struct MaskedShape {
  MaskSpec mask;
  std::int64_t seqlen_q, seqlen_k, len_q, len_k;

  std::string describe() const {
    std::ostringstream out;
    out << "Nq=" << seqlen_q << " Nk=" << seqlen_k << " Lq=" << len_q << " Lk=" << len_k << " causal=" << mask.causal
        << " br=" << mask.bottom_right << " window=(" << mask.window_left << "," << mask.window_right << ")";
    return out.str();
  }
};

std::vector<MaskedShape> masked_shapes() {
  const std::int64_t seqlens[] = {1, 15, 16, 17, 32, 33, 100, 129};
  const MaskSpec masks[] = {
      MaskSpec{},
      MaskSpec{true, false, -1, -1},
      MaskSpec{true, true, -1, -1},
      MaskSpec{false, true, 37, 5},
      MaskSpec{false, false, 0, 0},
      MaskSpec{false, true, -1, 3},
      MaskSpec{true, false, 64, -1},
      MaskSpec{true, true, 20, -1},
  };
  std::vector<MaskedShape> shapes;
  for (std::int64_t seqlen_q : seqlens) {
    for (std::int64_t seqlen_k : seqlens) {
      const std::int64_t lengths[][2] = {{seqlen_q, seqlen_k},     {seqlen_q / 3, seqlen_k - 1},
                                         {seqlen_q - 1, seqlen_k / 2}, {0, seqlen_k},
                                         {seqlen_q, 0}};
      for (const MaskSpec& mask : masks) {
        for (const auto& length : lengths) shapes.push_back({mask, seqlen_q, seqlen_k, length[0], length[1]});
      }
    }
  }
  return shapes;
}

TEST(FlashSimpleGeometry, TheGridCoversEveryQueryRowExactlyOnce) {
  for (std::int64_t seqlen_q = 1; seqlen_q <= 3 * kBlockRows + 1; ++seqlen_q) {
    const GridShape grid = grid_shape(3, 5, seqlen_q);
    EXPECT_EQ(grid.heads, 5);
    EXPECT_EQ(grid.batch, 3);
    std::vector<int> covered(static_cast<std::size_t>(grid.query_blocks * kBlockRows), 0);
    for (std::int64_t block = 0; block < grid.query_blocks; ++block) {
      for (int warp = 0; warp < kWarps; ++warp) {
        for (int r = 0; r < kRowsPerWarp; ++r) {
          const std::int64_t row = query_row(block, warp, r);
          ASSERT_GE(row, 0);
          ASSERT_LT(row, grid.query_blocks * kBlockRows);
          ASSERT_GE(block_row(warp, r), 0);
          ASSERT_LT(block_row(warp, r), kBlockRows);
          ++covered[static_cast<std::size_t>(row)];
          if (row >= seqlen_q) {
            EXPECT_EQ(block, grid.query_blocks - 1) << "rows past Nq only in the last block";
          }
        }
      }
    }
    for (std::int64_t row = 0; row < seqlen_q; ++row) {
      EXPECT_EQ(covered[static_cast<std::size_t>(row)], 1) << "row " << row << " of Nq=" << seqlen_q;
    }
  }
}

// Every key any row of a CTA sees lies in a visited tile; no skipped tile holds a
// visible (i, j); a CTA whose rows see nothing visits nothing; the visited range
// stays inside the padded key grid and its first and last tiles hold a visible key.
TEST(FlashSimpleGeometry, VisitedKeyTilesHoldEveryVisibleKeyAndSkippedOnesNone) {
  for (const MaskedShape& s : masked_shapes()) {
    const GridShape grid = grid_shape(1, 1, s.seqlen_q);
    const std::int64_t key_tile_count = (s.seqlen_k + kBlockKeys - 1) / kBlockKeys;
    for (std::int64_t block = 0; block < grid.query_blocks; ++block) {
      const TileRange tiles = key_tiles(s.mask, block, s.len_q, s.len_k);
      std::vector<bool> tile_has_visible(static_cast<std::size_t>(key_tile_count), false);
      for (int warp = 0; warp < kWarps; ++warp) {
        for (int r = 0; r < kRowsPerWarp; ++r) {
          const std::int64_t i = query_row(block, warp, r);
          for (std::int64_t j = 0; j < s.seqlen_k; ++j) {
            if (is_visible(s.mask, i, j, s.len_q, s.len_k)) {
              tile_has_visible[static_cast<std::size_t>(j / kBlockKeys)] = true;
            }
          }
        }
      }
      bool any_visible = false;
      for (std::int64_t tile = 0; tile < key_tile_count; ++tile) {
        const bool visited = tile >= tiles.begin && tile < tiles.end;
        if (tile_has_visible[static_cast<std::size_t>(tile)]) {
          any_visible = true;
          EXPECT_TRUE(visited) << s.describe() << " block " << block << ": tile " << tile << " holds a visible key";
        }
      }
      if (!any_visible) {
        EXPECT_GE(tiles.begin, tiles.end) << s.describe() << " block " << block << " sees nothing";
        continue;
      }
      ASSERT_GE(tiles.begin, 0) << s.describe();
      ASSERT_LE(tiles.end, key_tile_count) << s.describe() << ": past the padded key grid";
      EXPECT_TRUE(tile_has_visible[static_cast<std::size_t>(tiles.begin)]) << s.describe() << " block " << block;
      EXPECT_TRUE(tile_has_visible[static_cast<std::size_t>(tiles.end - 1)]) << s.describe() << " block " << block;
    }
  }
}

// Every mask and length edge at every position of the kernel's tiling (its
// Traits), exhaustively: each CTA visits exactly the key tiles from the first to
// the last that hold a key one of its rows sees, by is_visible() over every
// element, one CTA and one key tile past the valid lengths included.
TEST(FlashSimpleGeometry, EveryCtaVisitsExactlyTheKeyTilesWithVisibleKeysAtEveryEdgePosition) {
  const test::Tiling tiling = test::tiling_of<Traits>();
  test::FailureLog log;
  test::for_every_edge_position(tiling, [&](const test::MaskedLengths& c, const test::VisibilityGrid& grid,
                                            int query_blocks, int key_tile_count) {
    for (std::int64_t block = 0; block < query_blocks; ++block) {
      const TileRange range = key_tiles(c.mask, block, c.len_q, c.len_k);
      const std::int64_t first_row = first_row_of_block(block);
      const test::TileHull expected = test::tiles_with_visible_elements(key_tile_count, [&](int tile) {
        return grid.any(first_row, first_row + tiling.block_m, key_of(tile, 0), key_of(tile + 1, 0));
      });
      if (!expected.is(static_cast<int>(range.begin), static_cast<int>(range.end)) && log.add()) {
        ADD_FAILURE() << "block " << block << " of " << c.describe() << ": visits key tiles [" << range.begin << ", "
                      << range.end << "), the tiles with a visible key are [" << expected.first << ", "
                      << expected.end << ")";
      }
    }
  });
  EXPECT_EQ(log.failures(), 0);
}

TEST(FlashSimpleGeometry, LanesScoreEveryKeyOfATileOnce) {
  for (std::int64_t tile : {0, 1, 7}) {
    std::vector<int> covered(kBlockKeys, 0);
    for (int lane = 0; lane < kWarpSize; ++lane) {
      const std::int64_t key = key_of(tile, lane) - tile * kBlockKeys;
      ASSERT_GE(key, 0);
      ASSERT_LT(key, kBlockKeys);
      ++covered[static_cast<std::size_t>(key)];
    }
    for (int count : covered) EXPECT_EQ(count, 1);
  }
}

TEST(FlashSimpleGeometry, SupportedHeadDimsAreMultiplesOf8UpTo256) {
  for (std::int64_t head_dim = 0; head_dim <= 300; ++head_dim) {
    EXPECT_EQ(head_dim_supported(head_dim), head_dim >= 8 && head_dim <= 256 && head_dim % 8 == 0) << head_dim;
  }
}

// Lane l holds dims dim_of(l, pass) and dim_of(l, pass) + 1: every dim of the row
// exactly once, with the pair wholly inside or wholly outside [0, d).
TEST(FlashSimpleGeometry, LanesCoverEveryDimOfARowOnce) {
  for (std::int64_t head_dim = 8; head_dim <= kLargestHeadDim; head_dim += 8) {
    const int compiled = compiled_head_dim(head_dim);
    ASSERT_GE(compiled, head_dim);
    ASSERT_EQ(compiled % kDimsPerPass, 0);
    std::vector<int> covered(static_cast<std::size_t>(compiled), 0);
    for (int lane = 0; lane < kWarpSize; ++lane) {
      for (int pass = 0; pass < dim_passes(compiled); ++pass) {
        const int dim = dim_of(lane, pass);
        ASSERT_LT(dim + 1, compiled);
        EXPECT_EQ(dim < head_dim, dim + 1 < head_dim) << "a pair straddles d = " << head_dim;
        ++covered[static_cast<std::size_t>(dim)];
        ++covered[static_cast<std::size_t>(dim + 1)];
      }
    }
    for (int count : covered) EXPECT_EQ(count, 1) << "d = " << head_dim;
  }
}

TEST(FlashSimpleGeometry, StagingChunksCoverATileOnceWithinTheSharedLimit) {
  for (std::int64_t head_dim = 8; head_dim <= kLargestHeadDim; head_dim += 8) {
    const int d = static_cast<int>(head_dim);
    for (int rows : {kBlockRows, kBlockKeys}) {
      std::vector<int> covered(static_cast<std::size_t>(rows * d), 0);
      for (int chunk = 0; chunk < tile_chunks(rows, d); ++chunk) {
        const TileChunk at = tile_chunk(chunk, d);
        ASSERT_GE(at.row, 0);
        ASSERT_LT(at.row, rows);
        ASSERT_EQ(at.column % kChunkElements, 0) << "16-byte aligned";
        ASSERT_LE(at.column + kChunkElements, d);
        for (int e = 0; e < kChunkElements; ++e) ++covered[static_cast<std::size_t>(at.row * d + at.column + e)];
      }
      for (int count : covered) EXPECT_EQ(count, 1) << "d = " << d << ", " << rows << " rows";
    }
  }
  for (int compiled : {64, 128, 256}) {
    EXPECT_LE(shared_bytes(compiled, 2), kStaticSharedLimit) << compiled;
    EXPECT_EQ(key_row_stride(compiled) * 2 % 16, 0) << "K rows stay 16-byte aligned";
  }
}

// A 16-byte shared-memory access of a warp is served 8 lanes at a time; lanes
// reading the same column of 8 consecutive keys of the K tile hit 8 different
// groups of 4 banks, so the score loop has no bank conflicts.
TEST(FlashSimpleGeometry, KeyTileRowsOfEightLanesFallInDistinctBanks) {
  for (int compiled : {64, 128, 256}) {
    const int row_words = key_row_stride(compiled) * 2 / 4;
    for (int first_lane = 0; first_lane < kWarpSize; first_lane += 8) {
      std::vector<int> bank_groups;
      for (int lane = first_lane; lane < first_lane + 8; ++lane) bank_groups.push_back(lane * row_words % 32 / 4);
      std::sort(bank_groups.begin(), bank_groups.end());
      EXPECT_EQ(std::unique(bank_groups.begin(), bank_groups.end()), bank_groups.end()) << compiled;
    }
  }
}

}  // namespace
}  // namespace attnbench
