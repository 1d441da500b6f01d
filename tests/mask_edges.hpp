// Mask and length edges at every position relative to a kernel's tiling, and the
// brute-force visibility the kernels' tile bounds are checked against. Used by
// the geometry tests (every edge position, exhaustively, on the host) and by the
// generated shapes of the correctness matrix (tests/generated_shapes.hpp).
//
// A kernel's tiling comes from its own traits struct (FlashTraits,
// BackwardTraits, flash_simple::Traits, SoftmaxRowTraits): kBlockM query rows
// and kBlockN keys per CTA tile, kWarpRows rows and kWarpKeys keys per warp.
// The position of an edge is its offset modulo the tiling's period (the least
// common multiple of the four): two edges at the same position meet every
// warp slice and every tile of the kernel alike.
#pragma once

#include <cstdint>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/mask.hpp"

namespace attnbench::test {

struct Tiling {
  int block_m;    // query rows per CTA (or per query tile)
  int block_n;    // keys per key tile
  int warp_rows;  // the query rows one warp bounds its key tiles by
  int warp_keys;  // the keys one warp bounds its query tiles by

  friend bool operator==(const Tiling& a, const Tiling& b) {
    return a.block_m == b.block_m && a.block_n == b.block_n && a.warp_rows == b.warp_rows &&
           a.warp_keys == b.warp_keys;
  }
  friend bool operator!=(const Tiling& a, const Tiling& b) { return !(a == b); }
};

template <typename Traits>
constexpr Tiling tiling_of() {
  return Tiling{Traits::kBlockM, Traits::kBlockN, Traits::kWarpRows, Traits::kWarpKeys};
}

inline std::int64_t tiling_period(const Tiling& t) {
  return std::lcm(std::lcm(t.block_m, t.block_n), std::lcm(t.warp_rows, t.warp_keys));
}

inline std::int64_t positive_modulo(std::int64_t value, std::int64_t period) {
  return ((value % period) + period) % period;
}

// The valid lengths of one batch element under one mask.
struct MaskedLengths {
  MaskSpec mask;
  std::int64_t len_q;
  std::int64_t len_k;

  std::string describe() const {
    std::ostringstream out;
    out << "Lq=" << len_q << " Lk=" << len_k << " causal=" << mask.causal
        << (mask.bottom_right ? " bottom_right" : " top_left") << " window=(" << mask.window_left << ","
        << mask.window_right << ")";
    return out.str();
  }
};

// Lengths at the edges of a side's tiles: 0, 1, and one either side of a warp
// slice and of a tile.
inline std::vector<std::int64_t> edge_lengths(int slice, int tile) {
  std::set<std::int64_t> lengths{0, 1};
  for (const int unit : {slice, tile}) {
    for (const int offset : {-1, 0, 1}) lengths.insert(unit + offset);
  }
  return {lengths.begin(), lengths.end()};
}

// Every mask edge at every position of the tiling, each with lengths at and
// beside the tile edges (P is the period):
// - no mask, causal top-left and causal bottom-right: every shift Lk - Lq in
//   [-P - 1, P + 1] with each query-side edge length as Lq, and with each
//   key-side edge length as Lk;
// - windows, both alignments, on one pair of lengths (in bottom-right alignment
//   the fixed shift then meets every bound): every left bound in [-1, P] with a
//   right bound of -1, 0, 1 or P / 2 + 3, every right bound in [-1, P] with
//   those left bounds, and causal with every left bound.
inline std::vector<MaskedLengths> every_edge_position(const Tiling& t) {
  const std::int64_t period = tiling_period(t);
  std::vector<MaskedLengths> cases;
  const MaskSpec shifted_masks[] = {MaskSpec{}, MaskSpec{true, false, -1, -1}, MaskSpec{true, true, -1, -1}};
  for (const MaskSpec& mask : shifted_masks) {
    for (std::int64_t shift = -period - 1; shift <= period + 1; ++shift) {
      for (const std::int64_t len_q : edge_lengths(t.warp_rows, t.block_m)) {
        if (len_q + shift >= 0) cases.push_back({mask, len_q, len_q + shift});
      }
      for (const std::int64_t len_k : edge_lengths(t.warp_keys, t.block_n)) {
        if (len_k - shift >= 0) cases.push_back({mask, len_k - shift, len_k});
      }
    }
  }
  const std::int64_t len_q = 2 * t.block_m + 3;
  const std::int64_t len_k = 2 * t.block_n + 21;
  const std::int64_t partners[] = {-1, 0, 1, period / 2 + 3};
  for (const bool bottom_right : {false, true}) {
    for (std::int64_t bound = -1; bound <= period; ++bound) {
      for (const std::int64_t partner : partners) {
        if (bound >= 0 || partner >= 0) {
          cases.push_back({MaskSpec{false, bottom_right, bound, partner}, len_q, len_k});
          cases.push_back({MaskSpec{false, bottom_right, partner, bound}, len_q, len_k});
        }
      }
      cases.push_back({MaskSpec{true, bottom_right, bound, -1}, len_q, len_k});
    }
  }
  return cases;
}

// is_visible() (the definition) for every (row, key) of [0, rows) x [0, keys),
// with the count of visible elements of any rectangle in O(1).
class VisibilityGrid {
 public:
  VisibilityGrid(const MaskSpec& mask, std::int64_t len_q, std::int64_t len_k, std::int64_t rows, std::int64_t keys)
      : rows_(rows), keys_(keys), prefix_(static_cast<std::size_t>((rows + 1) * (keys + 1)), 0) {
    for (std::int64_t i = 0; i < rows; ++i) {
      std::int64_t row_count = 0;
      for (std::int64_t j = 0; j < keys; ++j) {
        row_count += is_visible(mask, i, j, len_q, len_k) ? 1 : 0;
        at(i + 1, j + 1) = at(i, j + 1) + row_count;
      }
    }
  }

  // Visible elements of [row_begin, row_end) x [key_begin, key_end), clipped to the grid.
  std::int64_t count(std::int64_t row_begin, std::int64_t row_end, std::int64_t key_begin,
                     std::int64_t key_end) const {
    row_begin = clip(row_begin, rows_);
    row_end = clip(row_end, rows_);
    key_begin = clip(key_begin, keys_);
    key_end = clip(key_end, keys_);
    if (row_end <= row_begin || key_end <= key_begin) return 0;
    return at(row_end, key_end) - at(row_begin, key_end) - at(row_end, key_begin) + at(row_begin, key_begin);
  }
  bool any(std::int64_t row_begin, std::int64_t row_end, std::int64_t key_begin, std::int64_t key_end) const {
    return count(row_begin, row_end, key_begin, key_end) > 0;
  }
  // Every element of the rectangle is inside the grid and visible.
  bool all(std::int64_t row_begin, std::int64_t row_end, std::int64_t key_begin, std::int64_t key_end) const {
    if (row_begin < 0 || key_begin < 0 || row_end > rows_ || key_end > keys_) return false;
    return row_end > row_begin && key_end > key_begin &&
           count(row_begin, row_end, key_begin, key_end) == (row_end - row_begin) * (key_end - key_begin);
  }

 private:
  static std::int64_t clip(std::int64_t value, std::int64_t limit) {
    return value < 0 ? 0 : value > limit ? limit : value;
  }
  std::int64_t& at(std::int64_t i, std::int64_t j) { return prefix_[static_cast<std::size_t>(i * (keys_ + 1) + j)]; }
  std::int64_t at(std::int64_t i, std::int64_t j) const {
    return prefix_[static_cast<std::size_t>(i * (keys_ + 1) + j)];
  }

  std::int64_t rows_;
  std::int64_t keys_;
  std::vector<std::int64_t> prefix_;
};

// Calls check(c, grid, query_tiles, key_tiles) for every edge position `c` of
// the tiling, with the grid of is_visible() over the valid lengths and one query
// tile and one key tile past them (a padded grid, where nothing is visible).
template <typename Check>
void for_every_edge_position(const Tiling& t, Check check) {
  for (const MaskedLengths& c : every_edge_position(t)) {
    const auto query_tiles = static_cast<int>(c.len_q / t.block_m + 1);
    const auto key_tiles = static_cast<int>(c.len_k / t.block_n + 1);
    const VisibilityGrid grid(c.mask, c.len_q, c.len_k, std::int64_t{query_tiles} * t.block_m,
                              std::int64_t{key_tiles} * t.block_n);
    check(c, grid, query_tiles, key_tiles);
  }
}

// Counts a test's failures and reports the first few, so that one wrong bound
// does not print a failure for every edge position.
class FailureLog {
 public:
  // True when the failure should be reported.
  bool add() { return ++failures_ <= 5; }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

// The tiles [first, end) of `tiles` that hold a visible element, as the smallest
// range containing all of them; {0, 0} when none does. `visible(tile)` says
// whether tile `tile` holds one.
struct TileHull {
  int first = 0;
  int end = 0;

  // Whether a kernel's range [first, end) is exactly this hull (empty for none).
  bool is(int range_first, int range_end) const {
    return end == 0 ? range_end <= range_first : range_first == first && range_end == end;
  }
};
template <typename Visible>
TileHull tiles_with_visible_elements(int tiles, Visible visible) {
  TileHull hull;
  for (int tile = 0; tile < tiles; ++tile) {
    if (!visible(tile)) continue;
    if (hull.end == 0) hull.first = tile;
    hull.end = tile + 1;
  }
  return hull;
}

}  // namespace attnbench::test
