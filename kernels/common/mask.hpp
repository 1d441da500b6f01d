// Attention mask predicates of docs/design.md §2.1, shared by every implementation.
//
// For batch element b with valid lengths Lq = len_q and Lk = len_k:
//   padding:       key j is invisible when j >= Lk; query rows i >= Lq see nothing.
//   causal:        j <= i + shift
//   window (l, r): i + shift - l <= j <= i + shift + r   (a negative bound is unbounded)
// where shift = Lk - Lq for bottom-right alignment (flash-attn >= 2.1) and 0 for
// top-left. Causal and window constraints combine (their intersection).
//
// Every constraint is an interval in j whose ends never decrease with i, so the
// visible keys of a row are one interval and the keys any row of a block of rows
// can see are bounded by the first row's start and the last row's end. Kernels
// use that to skip wholly masked tiles; the predicates below are the definition
// the interval forms are tested against.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace attnbench {

struct MaskSpec {
  bool causal = false;
  bool bottom_right = false;         // alignment of the causal and window constraints
  std::int64_t window_left = -1;     // < 0: unbounded
  std::int64_t window_right = -1;    // < 0: unbounded
};

// Half-open key interval [begin, end); empty when end <= begin.
struct KeyRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  ATTNBENCH_HD bool empty() const { return end <= begin; }
  ATTNBENCH_HD std::int64_t size() const { return end > begin ? end - begin : 0; }
};

ATTNBENCH_HD std::int64_t mask_shift(const MaskSpec& mask, std::int64_t len_q, std::int64_t len_k) {
  return mask.bottom_right ? len_k - len_q : 0;
}

// The definition: is key j visible to query row i?
ATTNBENCH_HD bool is_visible(const MaskSpec& mask, std::int64_t i, std::int64_t j,
                             std::int64_t len_q, std::int64_t len_k) {
  if (i < 0 || j < 0 || i >= len_q || j >= len_k) return false;
  const std::int64_t shift = mask_shift(mask, len_q, len_k);
  if (mask.causal && j > i + shift) return false;
  if (mask.window_left >= 0 && j < i + shift - mask.window_left) return false;
  if (mask.window_right >= 0 && j > i + shift + mask.window_right) return false;
  return true;
}

// The keys visible to row i, clamped to [0, len_k); empty for rows i >= len_q.
ATTNBENCH_HD KeyRange visible_keys(const MaskSpec& mask, std::int64_t i, std::int64_t len_q,
                                   std::int64_t len_k) {
  if (i < 0 || i >= len_q) return KeyRange{0, 0};
  const std::int64_t shift = mask_shift(mask, len_q, len_k);
  std::int64_t begin = 0;
  std::int64_t end = len_k;
  if (mask.window_left >= 0 && i + shift - mask.window_left > begin) {
    begin = i + shift - mask.window_left;
  }
  if (mask.causal && i + shift + 1 < end) end = i + shift + 1;
  if (mask.window_right >= 0 && i + shift + mask.window_right + 1 < end) {
    end = i + shift + mask.window_right + 1;
  }
  if (end < begin) end = begin;
  return KeyRange{begin, end};
}

// Bounding interval of the keys that rows [row_begin, row_end) can see; empty iff
// no row of the block sees any key. A key tile outside it is wholly masked.
ATTNBENCH_HD KeyRange visible_key_bound(const MaskSpec& mask, std::int64_t row_begin,
                                        std::int64_t row_end, std::int64_t len_q,
                                        std::int64_t len_k) {
  if (row_end > len_q) row_end = len_q;
  if (row_begin < 0) row_begin = 0;
  if (row_end <= row_begin) return KeyRange{0, 0};
  const KeyRange first = visible_keys(mask, row_begin, len_q, len_k);
  const KeyRange last = visible_keys(mask, row_end - 1, len_q, len_k);
  // Rows are empty only through clamping at 0 (a prefix of rows) or at len_k (a
  // suffix); the first row's start and the last row's end therefore bound the block.
  KeyRange bound{first.begin < len_k ? first.begin : len_k, last.end < len_k ? last.end : len_k};
  if (bound.end < bound.begin) bound.end = bound.begin;
  return bound;
}

// True when every (i, j) of the tile [row_begin, row_end) x [key_begin, key_end) is
// visible, so a kernel may skip per-element predicates on it.
ATTNBENCH_HD bool tile_fully_visible(const MaskSpec& mask, std::int64_t row_begin,
                                     std::int64_t row_end, std::int64_t key_begin,
                                     std::int64_t key_end, std::int64_t len_q,
                                     std::int64_t len_k) {
  if (row_begin < 0 || key_begin < 0 || row_end <= row_begin || key_end <= key_begin ||
      row_end > len_q || key_end > len_k) {
    return false;
  }
  // The latest start is the last row's, the earliest end the first row's.
  const KeyRange first = visible_keys(mask, row_begin, len_q, len_k);
  const KeyRange last = visible_keys(mask, row_end - 1, len_q, len_k);
  return !first.empty() && !last.empty() && last.begin <= key_begin && first.end >= key_end;
}

}  // namespace attnbench
