#include "harness/common/mask_sums.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace attnbench {
namespace {

__extension__ using Wide = unsigned __int128;  // intermediate products of floor_sum

// The first index in [low, high) at which `holds` is true, or `high`; `holds`
// is false up to some index and true from there on.
template <typename Predicate>
std::int64_t first_true(std::int64_t low, std::int64_t high, Predicate holds) {
  while (low < high) {
    const std::int64_t middle = low + (high - low) / 2;
    if (holds(middle)) {
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return low;
}

// [low, high) cut into runs on which none of these changes: the start is past
// 0, the start has reached len_k, the end has reached len_k, the end is past
// 0, the end is past `end_mark`. `range_of(i)` is an interval whose ends never
// decrease with i, so each of these turns true at most once. Returns the run
// boundaries, low and high included, in order.
template <typename RangeOf>
std::vector<std::int64_t> run_boundaries(std::int64_t low, std::int64_t high, std::int64_t len_k,
                                         std::int64_t end_mark, RangeOf range_of) {
  std::vector<std::int64_t> boundaries{low, high};
  if (low >= high) return boundaries;
  const auto cut = [&](auto holds) { boundaries.push_back(first_true(low, high, holds)); };
  cut([&](std::int64_t i) { return range_of(i).begin > 0; });
  cut([&](std::int64_t i) { return range_of(i).begin >= len_k; });
  cut([&](std::int64_t i) { return range_of(i).end >= len_k; });
  cut([&](std::int64_t i) { return range_of(i).end > 0; });
  cut([&](std::int64_t i) { return range_of(i).end > end_mark; });
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
  return boundaries;
}

struct KeyTiles {
  std::int64_t tiles = 0;  // key tiles met
  std::int64_t rows = 0;   // their rows (the grid's last tile may be short)
};

// The key tiles of width block_n that `bound` meets on a grid of seqlen_k keys.
KeyTiles key_tiles(const KeyRange& bound, std::int64_t block_n, std::int64_t seqlen_k) {
  if (bound.empty()) return {};
  const std::int64_t first = bound.begin / block_n;
  const std::int64_t end = (bound.end + block_n - 1) / block_n;
  return {end - first, std::min(end * block_n, seqlen_k) - first * block_n};
}

void add_query_tile(TileVisits& visits, std::int64_t rows, const KeyTiles& keys) {
  if (keys.tiles == 0) return;
  visits.query_rows += rows;
  visits.key_rows += keys.rows;
  visits.pair_rows += rows * keys.tiles;
}

// Slope of a quantity that is linear on a run of n values, from its ends.
std::int64_t slope(std::int64_t first, std::int64_t last, std::int64_t n) { return n > 1 ? (last - first) / (n - 1) : 0; }

}  // namespace

std::uint64_t floor_sum(std::uint64_t n, std::uint64_t m, std::uint64_t a, std::uint64_t b) {
  Wide total = 0, count = n, divisor = m, step = a, offset = b;
  while (count > 0) {
    if (step >= divisor) {
      total += (step / divisor) * (count * (count - 1) / 2);
      step %= divisor;
    }
    if (offset >= divisor) {
      total += (offset / divisor) * count;
      offset %= divisor;
    }
    const Wide last = step * count + offset;
    if (last < divisor) break;
    // With step, offset < divisor, the sum counts the lattice points under the
    // line; counted along the other axis it is the same kind of sum with the
    // roles of step and divisor swapped.
    count = last / divisor;
    offset = last % divisor;
    std::swap(step, divisor);
  }
  return static_cast<std::uint64_t>(total);
}

std::int64_t visible_pair_count(const MaskSpec& mask, std::int64_t len_q, std::int64_t len_k) {
  if (len_q <= 0 || len_k <= 0) return 0;
  const auto keys_of = [&](std::int64_t i) { return visible_keys(mask, i, len_q, len_k); };
  const std::vector<std::int64_t> boundaries = run_boundaries(0, len_q, len_k, len_k, keys_of);
  std::int64_t pairs = 0;
  for (std::size_t r = 0; r + 1 < boundaries.size(); ++r) {
    const std::int64_t first = boundaries[r], n = boundaries[r + 1] - first;
    // The count is linear on the run: an arithmetic series.
    pairs += n * (keys_of(first).size() + keys_of(first + n - 1).size()) / 2;
  }
  return pairs;
}

TileVisits tile_visits(const MaskSpec& mask, std::int64_t seqlen_q, std::int64_t seqlen_k, std::int64_t len_q,
                       std::int64_t len_k, std::int64_t block_m, std::int64_t block_n) {
  TileVisits visits;
  if (len_q <= 0 || len_k <= 0 || block_m <= 0 || block_n <= 0) return visits;
  const auto bound_of = [&](std::int64_t tile) {
    const std::int64_t row = tile * block_m;
    return visible_key_bound(mask, row, std::min(row + block_m, seqlen_q), len_q, len_k);
  };
  // Query tiles before `regular` are whole and hold valid rows only; the one
  // after them (if it holds a valid row) is counted on its own, later ones see nothing.
  const std::int64_t query_tiles = (seqlen_q + block_m - 1) / block_m;
  const std::int64_t regular = std::min(query_tiles - 1, len_q / block_m);
  // A bound ending past this reaches the grid's last key tile, which may be short.
  const std::int64_t last_tile_start = (seqlen_k + block_n - 1) / block_n * block_n - block_n;
  const std::vector<std::int64_t> boundaries = run_boundaries(0, regular, len_k, last_tile_start, bound_of);
  for (std::size_t r = 0; r + 1 < boundaries.size(); ++r) {
    const std::int64_t first = boundaries[r], n = boundaries[r + 1] - first;
    const KeyRange head = bound_of(first), tail = bound_of(first + n - 1);
    if (head.empty()) continue;  // so is the whole run
    // On the run both ends of the bound are linear in the tile index.
    const auto begins = static_cast<std::int64_t>(
        floor_sum(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(block_n),
                  static_cast<std::uint64_t>(slope(head.begin, tail.begin, n)), static_cast<std::uint64_t>(head.begin)));
    const auto ends = static_cast<std::int64_t>(
        floor_sum(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(block_n),
                  static_cast<std::uint64_t>(slope(head.end, tail.end, n)),
                  static_cast<std::uint64_t>(head.end + block_n - 1)));
    const std::int64_t key_rows = (head.end > last_tile_start ? n * seqlen_k : ends * block_n) - begins * block_n;
    visits.query_rows += n * block_m;
    visits.key_rows += key_rows;
    visits.pair_rows += block_m * (ends - begins);
  }
  if (regular < query_tiles && regular * block_m < len_q) {
    const std::int64_t rows = std::min(block_m, seqlen_q - regular * block_m);
    add_query_tile(visits, rows, key_tiles(bound_of(regular), block_n, seqlen_k));
  }
  visits.head_key_rows = key_tiles(visible_key_bound(mask, 0, seqlen_q, len_q, len_k), block_n, seqlen_k).rows;
  return visits;
}

}  // namespace attnbench
