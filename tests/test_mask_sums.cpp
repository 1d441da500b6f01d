// The closed-form mask sums (harness/common/mask_sums.hpp) against their row-by-row
// and tile-by-tile definitions, over every mask kind, alignment, padding and
// tile shape of a grid of small sizes, and on sizes no loop could walk.
#include "harness/common/mask_sums.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace attnbench {
namespace {

std::int64_t pairs_by_rows(const MaskSpec& mask, std::int64_t len_q, std::int64_t len_k) {
  std::int64_t pairs = 0;
  for (std::int64_t i = 0; i < len_q; ++i) pairs += visible_keys(mask, i, len_q, len_k).size();
  return pairs;
}

// The definition in harness/common/mask_sums.hpp, one query tile at a time.
TileVisits visits_by_tiles(const MaskSpec& mask, std::int64_t seqlen_q, std::int64_t seqlen_k, std::int64_t len_q,
                           std::int64_t len_k, std::int64_t block_m, std::int64_t block_n) {
  const auto key_rows = [&](const KeyRange& bound, std::int64_t& tiles) {
    tiles = 0;
    if (bound.empty()) return std::int64_t{0};
    const std::int64_t first = bound.begin / block_n, end = (bound.end + block_n - 1) / block_n;
    tiles = end - first;
    return std::min(end * block_n, seqlen_k) - first * block_n;
  };
  TileVisits visits;
  for (std::int64_t row = 0; row < seqlen_q; row += block_m) {
    const std::int64_t rows = std::min(block_m, seqlen_q - row);
    std::int64_t tiles = 0;
    const std::int64_t keys = key_rows(visible_key_bound(mask, row, row + rows, len_q, len_k), tiles);
    if (tiles == 0) continue;
    visits.query_rows += rows;
    visits.key_rows += keys;
    visits.pair_rows += rows * tiles;
  }
  std::int64_t tiles = 0;
  visits.head_key_rows = key_rows(visible_key_bound(mask, 0, seqlen_q, len_q, len_k), tiles);
  return visits;
}

std::vector<MaskSpec> every_mask_kind() {
  std::vector<MaskSpec> masks;
  for (const bool bottom_right : {false, true}) {
    for (const bool causal : {false, true}) {
      for (const auto& [left, right] : std::vector<std::pair<std::int64_t, std::int64_t>>{
               {-1, -1}, {0, 0}, {3, -1}, {-1, 2}, {5, 1}, {0, 7}, {20, 20}}) {
        masks.push_back(MaskSpec{causal, bottom_right, left, right});
      }
    }
  }
  return masks;
}

TEST(FloorSum, MatchesTheSumItDefines) {
  for (std::uint64_t n : {0u, 1u, 2u, 7u, 50u}) {
    for (std::uint64_t m : {1u, 2u, 3u, 7u, 64u}) {
      for (std::uint64_t a : {0u, 1u, 5u, 64u, 100u}) {
        for (std::uint64_t b : {0u, 1u, 6u, 63u, 200u}) {
          std::uint64_t expected = 0;
          for (std::uint64_t i = 0; i < n; ++i) expected += (a * i + b) / m;
          EXPECT_EQ(floor_sum(n, m, a, b), expected) << n << " " << m << " " << a << " " << b;
        }
      }
    }
  }
  EXPECT_EQ(floor_sum(1u << 24, 1, 1u << 16, 1u << 24), (std::uint64_t{1} << 16) * ((std::uint64_t{1} << 24) *
                                                                                       ((std::uint64_t{1} << 24) - 1) / 2) +
                                                             (std::uint64_t{1} << 48));
}

TEST(VisiblePairCount, MatchesTheRowByRowCount) {
  for (const MaskSpec& mask : every_mask_kind()) {
    for (std::int64_t len_q = 0; len_q <= 23; len_q += 1) {
      for (std::int64_t len_k : {0, 1, 2, 5, 9, 16, 23, 31}) {
        EXPECT_EQ(visible_pair_count(mask, len_q, len_k), pairs_by_rows(mask, len_q, len_k))
            << "causal " << mask.causal << " br " << mask.bottom_right << " window " << mask.window_left << ","
            << mask.window_right << " Lq " << len_q << " Lk " << len_k;
      }
    }
  }
}

TEST(TileVisits, MatchTheTileByTileCount) {
  for (const MaskSpec& mask : every_mask_kind()) {
    for (const auto& [seqlen_q, seqlen_k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {1, 1}, {7, 7}, {16, 16}, {33, 20}, {20, 33}, {64, 40}}) {
      for (const std::int64_t len_q : {std::int64_t{0}, std::int64_t{1}, seqlen_q / 2, seqlen_q - 1, seqlen_q}) {
        for (const std::int64_t len_k : {std::int64_t{0}, seqlen_k / 3, seqlen_k}) {
          for (const auto& [block_m, block_n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
                   {1, 1}, {2, 3}, {4, 4}, {8, 5}, {16, 16}, {64, 64}}) {
            const TileVisits expected = visits_by_tiles(mask, seqlen_q, seqlen_k, len_q, len_k, block_m, block_n);
            const TileVisits got = tile_visits(mask, seqlen_q, seqlen_k, len_q, len_k, block_m, block_n);
            SCOPED_TRACE(::testing::Message() << "causal " << mask.causal << " br " << mask.bottom_right << " window "
                                              << mask.window_left << "," << mask.window_right << " N " << seqlen_q
                                              << "x" << seqlen_k << " L " << len_q << "x" << len_k << " tile "
                                              << block_m << "x" << block_n);
            EXPECT_EQ(got.query_rows, expected.query_rows);
            EXPECT_EQ(got.key_rows, expected.key_rows);
            EXPECT_EQ(got.pair_rows, expected.pair_rows);
            EXPECT_EQ(got.head_key_rows, expected.head_key_rows);
          }
        }
      }
    }
  }
}

TEST(TileVisits, LargestGridsNeedNoLoop) {
  // 2^24 rows in tiles of one row: 2^24 query tiles, summed in closed form.
  const std::int64_t n = std::int64_t{1} << 24;
  const TileVisits causal = tile_visits(MaskSpec{true, false, -1, -1}, n, n, n, n, 1, 1);
  EXPECT_EQ(causal.query_rows, n);
  EXPECT_EQ(causal.key_rows, n * (n + 1) / 2);
  EXPECT_EQ(causal.pair_rows, n * (n + 1) / 2);
  EXPECT_EQ(causal.head_key_rows, n);
  EXPECT_EQ(visible_pair_count(MaskSpec{true, false, -1, -1}, n, n), n * (n + 1) / 2);
}

}  // namespace
}  // namespace attnbench
