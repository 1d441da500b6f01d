// Closed-form sums over the rows and tiles of one masked batch element, so that
// counting visible pairs (FLOPs) and visited tiles (the fused traffic model)
// costs O(log N) per distinct pair of valid lengths instead of a loop over every
// row or tile.
//
// Both rest on kernels/common/mask.hpp: a row's visible keys are one interval
// whose ends never decrease with the row, so the rows (or query tiles) split
// into a few runs on which each end is either clamped (constant) or follows the
// row (linear). The runs are found by binary search on the predicates "the
// start is past 0", "the start has reached Lk", "the end has reached Lk", "the
// end is past 0" (monotone in the row), each run is then summed exactly:
// arithmetic series for pairs, floor sums for tile indices. Tests compare both
// with the row-by-row definition.
#pragma once

#include <cstdint>

#include "kernels/common/mask.hpp"

namespace attnbench {

// Σ_{i=0}^{n-1} floor((a·i + b) / m), for m >= 1, exact while the sum fits 64 bits.
std::uint64_t floor_sum(std::uint64_t n, std::uint64_t m, std::uint64_t a, std::uint64_t b);

// Σ over rows i < len_q of visible_keys(mask, i, len_q, len_k).size().
std::int64_t visible_pair_count(const MaskSpec& mask, std::int64_t len_q, std::int64_t len_k);

// The tiles a fused kernel visits on one batch element with valid lengths
// (len_q, len_k) of a seqlen_q × seqlen_k grid cut into block_m × block_n tiles:
// query tile t holds rows [t·block_m, min((t+1)·block_m, seqlen_q)) and visits
// the key tiles meeting visible_key_bound of its rows (the rule kernels skip
// tiles by). Sums over the query tiles that visit any key tile.
struct TileVisits {
  std::int64_t query_rows = 0;     // rows of the query tiles that visit a key tile
  std::int64_t key_rows = 0;       // Σ over those query tiles of the key rows of the key tiles they visit
  std::int64_t pair_rows = 0;      // Σ over visited (query tile, key tile) pairs of the query tile's rows
  std::int64_t head_key_rows = 0;  // rows of the key tiles that any row of the element visits
};
TileVisits tile_visits(const MaskSpec& mask, std::int64_t seqlen_q, std::int64_t seqlen_k, std::int64_t len_q,
                       std::int64_t len_k, std::int64_t block_m, std::int64_t block_n);

}  // namespace attnbench
