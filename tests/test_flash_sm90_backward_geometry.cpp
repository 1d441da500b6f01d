// The index arithmetic of cuda.flash.sm90's backward
// (kernels/cuda/flash_sm90_backward_geometry.hpp) on the CPU: the query tiles
// each CTA visits and the tiles each MMA warpgroup takes without per-element
// predicates, against the mask predicate at every edge position of its
// tiling; the deterministic mode's turns (every key tile that visits a query
// tile has one, from 0 without gaps, so the order is total and ends); the
// tiled dQ accumulator (each consumer's part one contiguous block, the whole
// a bijection); the workspace's regions.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/common/mask.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_sm90_backward_geometry.hpp"
#include "tests/mask_edges.hpp"

namespace attnbench {
namespace {

// The kernel's tiling as the mask-edge positions see it: CTAs of kBlockN keys,
// query tiles of kBlockM rows taken whole, predicates decided per MMA
// warpgroup's kConsumerKeys keys.
template <int kHeadDim>
test::Tiling backward_tiling() {
  using T = Sm90BackwardTraits<kHeadDim>;
  return test::Tiling{T::kBlockM, T::kBlockN, T::kBlockM, T::kConsumerKeys};
}

// Every mask and length edge at every position of the tiling, exhaustively:
// each CTA visits exactly the query tiles from the first to the last that hold
// a row seeing one of its keys (is_visible over every element); each MMA
// warpgroup skips the predicates on a tile exactly when every element of it
// and its keys is visible; and the CTAs visiting a query tile are exactly the
// key tiles of flash_key_tiles over its rows, whose turns (sm90_dq_turn) are
// 0, 1, ... in key order.
template <int kHeadDim>
void expect_tiles_and_turns_at_every_edge_position() {
  using T = Sm90BackwardTraits<kHeadDim>;
  const test::Tiling tiling = backward_tiling<kHeadDim>();
  test::FailureLog log;
  test::for_every_edge_position(tiling, [&](const test::MaskedLengths& c, const test::VisibilityGrid& grid,
                                            int query_tiles, int key_tiles) {
    std::vector<std::vector<int>> visitors(static_cast<std::size_t>(query_tiles));
    for (int cta = 0; cta < key_tiles; ++cta) {
      const std::int64_t cta_key = std::int64_t{cta} * T::kBlockN;
      const QueryTileRange range =
          flash_backward_query_tiles(c.mask, cta_key, cta_key + T::kBlockN, c.len_q, c.len_k, T::kBlockM);
      const test::TileHull expected = test::tiles_with_visible_elements(query_tiles, [&](int tile) {
        return grid.any(std::int64_t{tile} * T::kBlockM, std::int64_t{tile + 1} * T::kBlockM, cta_key,
                        cta_key + T::kBlockN);
      });
      if (!expected.is(range.first, range.end) && log.add()) {
        ADD_FAILURE() << "CTA keys from " << cta_key << " of " << c.describe() << ": visits query tiles ["
                      << range.first << ", " << range.end << "), those with a visible element are ["
                      << expected.first << ", " << expected.end << ")";
      }
      for (int tile = range.first; tile < range.end; ++tile) {
        if (tile < query_tiles) visitors[static_cast<std::size_t>(tile)].push_back(cta);
      }
      for (int consumer = 0; consumer < T::kConsumers; ++consumer) {
        const std::int64_t key = cta_key + T::key_row(consumer);
        const KeyRange full = fully_visible_queries(c.mask, key, key + T::kConsumerKeys, c.len_q, c.len_k);
        for (int tile = 0; tile < query_tiles; ++tile) {
          const std::int64_t first_row = std::int64_t{tile} * T::kBlockM;
          const bool whole = full.begin <= first_row && first_row + T::kBlockM <= full.end;
          if (whole != grid.all(first_row, first_row + T::kBlockM, key, key + T::kConsumerKeys) && log.add()) {
            ADD_FAILURE() << "warpgroup keys from " << key << ", query tile " << tile << " of " << c.describe()
                          << ": taken as wholly visible " << whole;
          }
        }
      }
    }
    for (int tile = 0; tile < query_tiles; ++tile) {
      const std::vector<int>& ctas = visitors[static_cast<std::size_t>(tile)];
      const std::int64_t first_row = std::int64_t{tile} * T::kBlockM;
      const KeyTileRange keys = flash_key_tiles(c.mask, first_row, first_row + T::kBlockM, c.len_q, c.len_k, T::kBlockN);
      const int expected_count = keys.empty() ? 0 : keys.end - keys.first;
      bool in_order = static_cast<int>(ctas.size()) == expected_count;
      for (std::size_t n = 0; in_order && n < ctas.size(); ++n) {
        in_order = sm90_dq_turn(c.mask, ctas[n], tile, T::kBlockM, T::kBlockN, c.len_q, c.len_k) == static_cast<int>(n);
      }
      if (!in_order && log.add()) {
        ADD_FAILURE() << "query tile " << tile << " of " << c.describe() << ": " << ctas.size()
                      << " key tiles visit it, flash_key_tiles gives [" << keys.first << ", " << keys.end
                      << "), and their turns are not 0, 1, ...";
      }
    }
  });
  EXPECT_EQ(log.failures(), 0);
}

TEST(FlashSm90BackwardGeometry, EveryCtaVisitsExactlyItsQueryTilesAndTheirTurnsCountFromZeroAtEveryEdgePosition) {
  expect_tiles_and_turns_at_every_edge_position<64>();
  expect_tiles_and_turns_at_every_edge_position<128>();
  expect_tiles_and_turns_at_every_edge_position<256>();
}

// Consumer c's part of a query tile is the 64 × kDqColumns block at
// c · 64 · kDqColumns floats of the tile, row-major, which its bulk reduction
// adds as one; over the parts and the tiles every element has one place.
template <int kHeadDim>
void expect_dq_parts_tile_the_accumulator() {
  using T = Sm90BackwardTraits<kHeadDim>;
  const std::int64_t padded_rows = sm90_backward_padded_rows(3 * T::kBlockM - 5, T::kBlockM);
  ASSERT_EQ(padded_rows, 3 * T::kBlockM);
  std::vector<int> hits(static_cast<std::size_t>(padded_rows * kHeadDim), 0);
  for (std::int64_t row = 0; row < padded_rows; ++row) {
    for (int dim = 0; dim < kHeadDim; ++dim) {
      const std::int64_t offset = sm90_dq_offset(row, dim, T::kBlockM, kHeadDim);
      ASSERT_GE(offset, 0);
      ASSERT_LT(offset, padded_rows * kHeadDim);
      ++hits[static_cast<std::size_t>(offset)];
    }
  }
  for (int count : hits) ASSERT_EQ(count, 1);
  for (int consumer = 0; consumer < T::kConsumers; ++consumer) {
    const Sm90DqPart part = sm90_dq_part(consumer, T::kBlockM, kHeadDim);
    for (int row = 0; row < 64; ++row) {
      for (int dim = 0; dim < T::kDqColumns; ++dim) {
        EXPECT_EQ(sm90_dq_offset(T::kBlockM + part.first_row + row, part.first_dim + dim, T::kBlockM, kHeadDim),
                  T::kBlockM * kHeadDim + consumer * 64 * T::kDqColumns + row * T::kDqColumns + dim)
            << "d" << kHeadDim << " consumer " << consumer << " row " << row << " dim " << dim;
      }
    }
  }
}

TEST(FlashSm90BackwardGeometry, EachConsumersDqPartIsOneContiguousBlockOfTheAccumulator) {
  expect_dq_parts_tile_the_accumulator<64>();
  expect_dq_parts_tile_the_accumulator<128>();
  expect_dq_parts_tile_the_accumulator<256>();
  // The two consumers' parts cover the query tile: at d64 its two row halves,
  // at d128 and d256 its two dim halves.
  EXPECT_EQ(sm90_dq_part(1, 128, 64).first_row, 64);
  EXPECT_EQ(sm90_dq_part(1, 128, 64).first_dim, 0);
  EXPECT_EQ(sm90_dq_part(1, 64, 128).first_row, 0);
  EXPECT_EQ(sm90_dq_part(1, 64, 128).first_dim, 64);
  EXPECT_EQ(sm90_dq_part(1, 64, 256).first_row, 0);
  EXPECT_EQ(sm90_dq_part(1, 64, 256).first_dim, 128);
}

// How the consumers share a CTA's work: at d64 and d128 each owns half the
// keys over every query and dim; at d256 both take every key, consumer c the
// queries 32c.. of Sᵀ and the dims 128c.. of dK and dV. Either way the two
// parts cover the tile's (key, query) products and its (key, dim) gradients
// once.
template <int kHeadDim>
void expect_consumer_parts_cover_the_tile_once() {
  using T = Sm90BackwardTraits<kHeadDim>;
  std::vector<int> scores(static_cast<std::size_t>(T::kBlockN * T::kBlockM), 0);
  std::vector<int> gradients(static_cast<std::size_t>(T::kBlockN * kHeadDim), 0);
  for (int consumer = 0; consumer < T::kConsumers; ++consumer) {
    for (int key = T::key_row(consumer); key < T::key_row(consumer) + T::kConsumerKeys; ++key) {
      for (int slice = 0; slice < T::kSlices; ++slice) {
        for (int n = 0; n < T::kSliceQueries; ++n) {
          ++scores.at(static_cast<std::size_t>(key * T::kBlockM + T::first_query(consumer) + T::kSliceQueries * slice + n));
        }
      }
      for (int dim = T::first_dim(consumer); dim < T::first_dim(consumer) + T::kConsumerDims; ++dim) {
        ++gradients.at(static_cast<std::size_t>(key * kHeadDim + dim));
      }
    }
  }
  for (int count : scores) ASSERT_EQ(count, 1) << "d" << kHeadDim;
  for (int count : gradients) ASSERT_EQ(count, 1) << "d" << kHeadDim;
}

TEST(FlashSm90BackwardGeometry, TheConsumersPartsCoverTheTilesProductsOnce) {
  expect_consumer_parts_cover_the_tile_once<64>();
  expect_consumer_parts_cover_the_tile_once<128>();
  expect_consumer_parts_cover_the_tile_once<256>();
  EXPECT_EQ(Sm90BackwardTraits<256>::first_query(1), 32);
  EXPECT_EQ(Sm90BackwardTraits<256>::first_dim(1), 128);
  EXPECT_EQ(Sm90BackwardTraits<128>::key_row(1), 64);
}

TEST(FlashSm90BackwardGeometry, WorkspaceRegionsAreAlignedAndDisjoint) {
  for (const int block_m : {64, 128}) {
    const Sm90BackwardWorkspace layout = sm90_backward_workspace(3, 5, 1000, block_m, 128);
    const std::size_t rows = 3 * 5 * static_cast<std::size_t>(sm90_backward_padded_rows(1000, block_m));
    EXPECT_EQ(layout.lse_log2, 0u);
    EXPECT_GE(layout.delta, rows * 4);
    EXPECT_GE(layout.dq_accumulator, layout.delta + rows * 4);
    EXPECT_GE(layout.semaphores, layout.dq_accumulator + rows * 128 * 4);
    EXPECT_GE(layout.total, layout.semaphores + rows / static_cast<std::size_t>(block_m) * 4);
    for (std::size_t offset : {layout.delta, layout.dq_accumulator, layout.semaphores, layout.total}) {
      EXPECT_EQ(offset % 256, 0u);
    }
  }
}

}  // namespace
}  // namespace attnbench
