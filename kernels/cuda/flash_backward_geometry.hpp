// The index arithmetic of the cuda.flash backward (kernels/cuda/flash_backward.cu),
// pure C++ so tests/test_flash_backward_geometry.cpp checks all of it on the CPU:
// the tile shape, the shared-memory and workspace layouts, the query tiles a key
// tile visits for a mask, the lane addresses that load every operand with
// ldmatrix, where a lane's dS values go in shared memory, and which Philox words
// each lane draws for dropout.
//
// The products and their operands (fragment layouts: kernels/cuda/flash_geometry.hpp).
// Warp w owns keys 16w .. 16w + 15 of the CTA's key tile; per query tile:
//   Sᵀ  = K_w · Qᵀ      A: K rows, plain ldmatrix      B: Q (k = dim, n = query), plain
//   dPᵀ = V_w · dOᵀ     A: V rows, plain ldmatrix      B: dO, plain
//   dV += P̃ᵀ · dO       A: P̃ᵀ from registers           B: dO (k = query, n = dim), transposed
//   dK += dSᵀ · Q       A: dSᵀ from registers          B: Q, transposed
//   dQ  = dS · K        A: dS from the shared dSᵀ tile, transposed ldmatrix
//                       B: K (k = key, n = dim), transposed
// The C fragments of Sᵀ and dPᵀ hold keys along rows (g, g + 8) and queries along
// columns (2t, 2t + 1); two adjacent 8-query fragments are the A fragment of 16
// queries, exactly as P feeds P·V in the forward.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/dropout.hpp"
#include "kernels/common/host_device.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/flash_geometry.hpp"

namespace attnbench {

// One CTA: `warps` warps over a key tile of block_n = 16 · warps keys (dK and dV
// stay in registers, 16 keys per warp), stepping over query tiles of block_m
// rows; a warp takes a tile's queries slice_m at a time (its Sᵀ and dPᵀ fragments).
struct FlashBackwardShape {
  int block_m;  // query rows per step
  int block_n;  // keys per CTA = 16 · warps
  int warps;
  int slice_m;  // queries of Sᵀ and dPᵀ a warp holds at once; divides block_m
};

// 8 warps and 128 keys as FlashAttention-2 on sm_80. block_m = 64 makes the dSᵀ
// tile's rows 128 bytes, as the swizzle needs. At d 128 the 128 registers of dK
// and dV leave room for Sᵀ and dPᵀ of 32 queries only (no spills with -Xptxas -v).
ATTNBENCH_HD constexpr FlashBackwardShape flash_backward_shape(int head_dim) {
  return FlashBackwardShape{64, 128, 8, head_dim > 64 ? 32 : 64};
}

inline constexpr int kFlashBackwardStages = 2;  // query tiles in flight: the one in use and the next

// Dynamic shared memory of a CTA, byte offsets (each a multiple of 128, as
// swizzled_step() needs): the K and V tiles (loaded once), kFlashBackwardStages
// stages of Q, dO, LSE·log2(e) and D, and the dSᵀ tile [block_n keys][block_m queries].
struct FlashBackwardSharedLayout {
  int k_tile;
  int v_tile;
  int q_tiles;      // stage s at q_tiles + s · query_tile_bytes
  int d_out_tiles;  // likewise
  int lse_rows;     // stage s at lse_rows + s · row_vector_bytes
  int delta_rows;   // likewise
  int ds_tile;
  int query_tile_bytes;
  int row_vector_bytes;
  int total;
};
ATTNBENCH_HD constexpr FlashBackwardSharedLayout flash_backward_shared_layout(int head_dim, int element_bytes) {
  const FlashBackwardShape shape = flash_backward_shape(head_dim);
  const int key_tile_bytes = shape.block_n * head_dim * element_bytes;
  const int query_tile_bytes = shape.block_m * head_dim * element_bytes;
  const int row_vector_bytes = shape.block_m * 4;
  FlashBackwardSharedLayout layout{};
  layout.k_tile = 0;
  layout.v_tile = key_tile_bytes;
  layout.q_tiles = 2 * key_tile_bytes;
  layout.d_out_tiles = layout.q_tiles + kFlashBackwardStages * query_tile_bytes;
  layout.lse_rows = layout.d_out_tiles + kFlashBackwardStages * query_tile_bytes;
  layout.delta_rows = layout.lse_rows + kFlashBackwardStages * row_vector_bytes;
  layout.ds_tile = layout.delta_rows + kFlashBackwardStages * row_vector_bytes;
  layout.query_tile_bytes = query_tile_bytes;
  layout.row_vector_bytes = row_vector_bytes;
  layout.total = layout.ds_tile + shape.block_n * shape.block_m * element_bytes;
  return layout;
}

// ---- The workspace: what the backward keeps beyond the forward's --------------

// Query rows per (b, h) in the workspace arrays: seqlen_q rounded up to block_m,
// so a query tile's rows are always there (the rows past seqlen_q hold zeros).
ATTNBENCH_HD constexpr std::int64_t flash_backward_padded_rows(std::int64_t seqlen_q, int head_dim) {
  const std::int64_t block_m = flash_backward_shape(head_dim).block_m;
  return (seqlen_q + block_m - 1) / block_m * block_m;
}

// Three fp32 arrays, each starting at a multiple of 256 bytes; row (b, h, i) is
// element (b·heads + h)·padded_rows + i of the first two and that times head_dim
// of the third:
//   lse_log2        [batch, heads, padded_rows]     LSE·log2(e), 0 for rows without keys (LSE = -inf) and past seqlen_q
//   delta           [batch, heads, padded_rows]     D = rowsum(dO ∘ O), 0 past seqlen_q
//   dq_accumulator  [batch, heads, padded_rows, d]  Σ dS·K (τ is applied when converting into dQ)
struct FlashBackwardWorkspaceLayout {
  std::size_t lse_log2;
  std::size_t delta;
  std::size_t dq_accumulator;
  std::size_t total;
};
ATTNBENCH_HD constexpr FlashBackwardWorkspaceLayout flash_backward_workspace_layout(std::int64_t batch,
                                                                                    std::int64_t heads,
                                                                                    std::int64_t seqlen_q,
                                                                                    int head_dim) {
  const auto rows = static_cast<std::size_t>(batch * heads * flash_backward_padded_rows(seqlen_q, head_dim));
  const std::size_t vector_bytes = round_up_256(rows * sizeof(float));
  FlashBackwardWorkspaceLayout layout{};
  layout.lse_log2 = 0;
  layout.delta = vector_bytes;
  layout.dq_accumulator = 2 * vector_bytes;
  layout.total = 2 * vector_bytes + round_up_256(rows * static_cast<std::size_t>(head_dim) * sizeof(float));
  return layout;
}

// ---- The per-row kernels (prepare and convert) -------------------------------------
// A CTA of 128 threads takes 16 query rows, 8 lanes per row; lane `part` of a row
// handles the 8-element chunks at columns row_chunk_column(pass, part) for pass
// 0 .. d / 64 - 1. padded_rows is a multiple of 16, so the prepare kernel's
// grid covers it exactly.
inline constexpr int kFlashBackwardRowThreads = 128;
inline constexpr int kFlashBackwardRowLanes = 8;
inline constexpr int kFlashBackwardRowsPerBlock = kFlashBackwardRowThreads / kFlashBackwardRowLanes;
ATTNBENCH_HD constexpr int row_chunk_column(int pass, int part) { return 8 * (pass * kFlashBackwardRowLanes + part); }

// ---- Which query rows see a key (the transpose of mask.hpp's interval forms) ----

// The query rows that see key j, clamped to [0, len_q); empty for keys outside
// [0, len_k). From the predicates of mask.hpp with shift s:
//   causal       j <= i + s          <=>  i >= j - s
//   window right j <= i + s + right  <=>  i >= j - s - right
//   window left  j >= i + s - left   <=>  i <= j - s + left
// Both ends grow with j, so the rows of a block of keys are bounded by the first
// key's start and the last key's end (visible_query_bound).
ATTNBENCH_HD KeyRange visible_queries(const MaskSpec& mask, std::int64_t j, std::int64_t len_q, std::int64_t len_k) {
  if (j < 0 || j >= len_k) return KeyRange{0, 0};
  const std::int64_t shift = mask_shift(mask, len_q, len_k);
  std::int64_t begin = 0;
  std::int64_t end = len_q;
  if (mask.causal && j - shift > begin) begin = j - shift;
  if (mask.window_right >= 0 && j - shift - mask.window_right > begin) begin = j - shift - mask.window_right;
  if (mask.window_left >= 0 && j - shift + mask.window_left + 1 < end) end = j - shift + mask.window_left + 1;
  if (end < begin) end = begin;
  return KeyRange{begin, end};
}

// Bounding interval of the query rows that see some key of [key_begin, key_end);
// empty iff no row sees any of those keys. (A KeyRange, here of query rows.)
ATTNBENCH_HD KeyRange visible_query_bound(const MaskSpec& mask, std::int64_t key_begin, std::int64_t key_end,
                                          std::int64_t len_q, std::int64_t len_k) {
  if (key_end > len_k) key_end = len_k;
  if (key_begin < 0) key_begin = 0;
  if (key_end <= key_begin) return KeyRange{0, 0};
  const KeyRange first = visible_queries(mask, key_begin, len_q, len_k);
  const KeyRange last = visible_queries(mask, key_end - 1, len_q, len_k);
  KeyRange bound{first.begin < len_q ? first.begin : len_q, last.end < len_q ? last.end : len_q};
  if (bound.end < bound.begin) bound.end = bound.begin;
  return bound;
}

// The query rows to which every key of [key_begin, key_end) is visible (an
// interval, as both ends of visible_queries grow with the key): the rows from the
// last key's start to the first key's end; empty when a key lies outside [0, len_k).
// A tile of rows inside it needs no per-element predicates.
ATTNBENCH_HD KeyRange fully_visible_queries(const MaskSpec& mask, std::int64_t key_begin, std::int64_t key_end,
                                            std::int64_t len_q, std::int64_t len_k) {
  if (key_begin < 0 || key_end > len_k || key_end <= key_begin) return KeyRange{0, 0};
  const KeyRange first = visible_queries(mask, key_begin, len_q, len_k);
  const KeyRange last = visible_queries(mask, key_end - 1, len_q, len_k);
  return KeyRange{last.begin, first.end > last.begin ? first.end : last.begin};
}

// Query tiles [first, end) of block_m rows that keys [key_begin, key_end) are
// visited with: every tile meeting visible_query_bound.
struct QueryTileRange {
  int first = 0;
  int end = 0;
  ATTNBENCH_HD bool empty() const { return end <= first; }
  ATTNBENCH_HD int count() const { return end > first ? end - first : 0; }
  ATTNBENCH_HD bool contains(int tile) const { return first <= tile && tile < end; }
};
ATTNBENCH_HD QueryTileRange flash_backward_query_tiles(const MaskSpec& mask, std::int64_t key_begin,
                                                       std::int64_t key_end, std::int64_t len_q, std::int64_t len_k,
                                                       int block_m) {
  const KeyRange bound = visible_query_bound(mask, key_begin, key_end, len_q, len_k);
  if (bound.empty()) return QueryTileRange{0, 0};
  return QueryTileRange{static_cast<int>(bound.begin / block_m), static_cast<int>((bound.end + block_m - 1) / block_m)};
}

// ---- ldmatrix lane addresses, in bytes from a tile's base ---------------------
// Tiles are swizzled as in the forward (swizzled_offset: rows of row_bytes, a
// multiple of 128; tile bases multiples of 128). A lane's address is computed
// once; the kernel moves it by swizzled_step(address, 2·dim_step, 16·row_step, …),
// which stays exact because every lane address below sits at chunk 0 or 1 plus
// an even chunk offset that never carries past a group of 8 chunks.

// Sᵀ and dPᵀ, A operand: warp w's 16 rows of the K (V) tile, 16 dims per step.
ATTNBENCH_HD constexpr std::uint32_t key_rows_a_lane_bytes(int lane, int warp, int row_bytes) {
  return static_cast<std::uint32_t>(
      swizzled_lane_bytes(16 * warp + ldmatrix_row_for_a(lane).row, ldmatrix_row_for_a(lane).column / 8, row_bytes));
}
// Sᵀ and dPᵀ, B operand (plain): Q (dO) rows, 16 dims × 16 queries per load; the
// registers 0, 1 are queries 0-7, 2, 3 queries 8-15.
ATTNBENCH_HD constexpr std::uint32_t query_rows_b_lane_bytes(int lane, int row_bytes) {
  return static_cast<std::uint32_t>(
      swizzled_lane_bytes(ldmatrix_row_for_b(lane).row, ldmatrix_row_for_b(lane).column / 8, row_bytes));
}
// dV and dK, B operand (transposed): dO (Q) rows as k, 16 queries × 16 dims per
// load; the registers 0, 1 are dims 0-7, 2, 3 dims 8-15. The same lane address
// serves K in dQ = dS·K (keys as k).
ATTNBENCH_HD constexpr std::uint32_t rows_as_k_b_lane_bytes(int lane, int row_bytes) {
  return static_cast<std::uint32_t>(swizzled_lane_bytes(ldmatrix_row_for_transposed_b(lane).row,
                                                        ldmatrix_row_for_transposed_b(lane).column / 8, row_bytes));
}

// dQ = dS·K: warp w computes rows 16·(w % row_blocks) .. + 15 of the query tile
// and dims (w / row_blocks)·dq_dims .. + dq_dims - 1, row_blocks = block_m / 16.
struct DqWarpTile {
  int first_row;
  int first_dim;
  int dims;
};
ATTNBENCH_HD constexpr DqWarpTile dq_warp_tile(int warp, int head_dim) {
  const FlashBackwardShape shape = flash_backward_shape(head_dim);
  const int row_blocks = shape.block_m / 16;
  const int dims = head_dim / (shape.warps / row_blocks);
  return DqWarpTile{16 * (warp % row_blocks), dims * (warp / row_blocks), dims};
}

// dS as A from the dSᵀ tile [key][query] (rows of block_m queries): the matrix
// stored transposed, so ldmatrix.trans with matrices (keys 0-7, queries 0-7),
// (0-7, 8-15), (8-15, 0-7), (8-15, 8-15) gives A registers 0..3 (queries as rows,
// keys as k). Lane l addresses key l % 8 + 8·(l / 16), query 8·((l / 8) % 2):
// the same rows as ldmatrix_row_for_b.
ATTNBENCH_HD constexpr FragmentPosition ldmatrix_row_for_transposed_a(int lane) { return ldmatrix_row_for_b(lane); }
// The lane's address for the warp's dQ rows at key step 0; key step s adds 16·s rows.
ATTNBENCH_HD constexpr std::uint32_t ds_a_lane_bytes(int lane, int warp, int head_dim, int ds_row_bytes) {
  return swizzled_step(
      static_cast<std::uint32_t>(swizzled_lane_bytes(ldmatrix_row_for_transposed_a(lane).row,
                                                     ldmatrix_row_for_transposed_a(lane).column / 8, ds_row_bytes)),
      dq_warp_tile(warp, head_dim).first_row / 8, 0, ds_row_bytes);
}
// K as B of dQ = dS·K for the warp's dims: rows_as_k_b_lane_bytes moved to first_dim.
ATTNBENCH_HD constexpr std::uint32_t dq_key_b_lane_bytes(int lane, int warp, int head_dim, int row_bytes) {
  return swizzled_step(rows_as_k_b_lane_bytes(lane, row_bytes), dq_warp_tile(warp, head_dim).first_dim / 8, 0,
                       row_bytes);
}

// The backward kernel's compile-time shape for one head dim; kBlockM, kBlockN,
// kWarpRows and kWarpKeys are the tiling its masks are cut by, as in FlashTraits.
template <int kHeadDim>
struct BackwardTraits {
  static constexpr FlashBackwardShape kShape = flash_backward_shape(kHeadDim);
  static constexpr int kBlockM = kShape.block_m;
  static constexpr int kBlockN = kShape.block_n;
  static constexpr int kWarpRows = kBlockM;  // every warp takes the whole query tile (slice_m at a time)
  static constexpr int kWarpKeys = 16;       // a warp's keys: the mma's M of Sᵀ
  static constexpr int kThreads = 32 * kShape.warps;
  static constexpr int kDimSteps = kHeadDim / 16;  // k steps of Sᵀ and dPᵀ; 16-dim pairs of dK, dV
  static constexpr int kSliceM = kShape.slice_m;
  static constexpr int kQueryFragments = kBlockM / 8;  // 8-query fragments of a tile
  static constexpr int kSliceFragments = kSliceM / 8;  // 8-query C fragments of Sᵀ and dPᵀ per warp
  static constexpr int kGradientFragments = kHeadDim / 8;
  static constexpr int kKeySteps = kBlockN / 16;  // k steps of dQ
  static constexpr int kDqDims = dq_warp_tile(0, kHeadDim).dims;
  static constexpr int kDqFragments = kDqDims / 8;
  static_assert(kBlockN == kWarpKeys * kShape.warps, "each warp owns 16 keys");
  static_assert(kBlockM == 64, "the dSᵀ tile's rows must be 128 bytes for the swizzle");
  static_assert(kBlockM % kSliceM == 0 && kSliceM % 16 == 0, "whole slices of 16-query k steps");
  static_assert(4 * kSliceFragments <= 32, "one dropout bit per element of a slice of Sᵀ in a 32-bit word");
  static_assert(kHeadDim % 64 == 0 && kDqDims % 16 == 0, "whole 16-dim pairs");
  static_assert(kBlockN <= kFlashBackwardStages * kBlockM, "the dK and dV tiles fit where the Q and dO stages were");
};

// Where lane l stores its pair of C fragment 0 (row first_row + g, columns 2t,
// 2t + 1) in a swizzled tile of row_bytes rows: the dSᵀ tile (first_row = 16w) and
// the epilogue's dK and dV tiles. Fragment n (columns 8n ..) and the row half h
// (rows + 8) are swizzled_step(address, n, 8·h, row_bytes): the lane's chunk is 0,
// so every n is exact.
ATTNBENCH_HD constexpr std::uint32_t c_fragment_store_lane_bytes(int lane, int first_row, int row_bytes) {
  return static_cast<std::uint32_t>(swizzled_lane_bytes(first_row + lane / 4, 0, row_bytes) + 4 * (lane % 4));
}

// ---- Dropout in the key-major C layout ------------------------------------------
// Lane (g, t) holds, per 8-query fragment, keys g and g + 8 of its warp's 16 for
// queries 2t and 2t + 1: C element e is (key g + 8·(e / 2), query 2t + e % 2).
// A Philox call serves 4 consecutive keys of one query, so the four calls
// (query 2t + c % 2, keys 4·(g / 4) + 8·(c / 2) ..+3), c = 0..3, give the four
// lanes g' = 4·(g / 4) .. + 3 (same t) one word each: lane g' needs word g' % 4 of
// every call, call c's word landing in element c. So the lane with a = g % 4
// draws call c = a and, in round r = 0..3, sends word a ^ r to lane ^ 4r and
// receives word a of that lane's call (call a ^ r) into element a ^ r.
struct DropoutCall {
  int query;  // within the 8-query fragment
  int key;    // the first of the call's 4 keys, within the warp's 16
};
ATTNBENCH_HD constexpr int dropout_call_index(int lane) { return (lane / 4) % 4; }
ATTNBENCH_HD constexpr DropoutCall backward_dropout_call(int lane) {
  return DropoutCall{2 * (lane % 4) + dropout_call_index(lane) % 2,
                     4 * ((lane / 4) / 4) + 8 * (dropout_call_index(lane) / 2)};
}
// In round r: the word the lane sends, the lane it exchanges with, and the C
// element the received word belongs to.
ATTNBENCH_HD constexpr int backward_dropout_sent_word(int lane, int round) { return dropout_call_index(lane) ^ round; }
ATTNBENCH_HD constexpr int backward_dropout_partner(int lane, int round) { return lane ^ (4 * round); }
ATTNBENCH_HD constexpr int backward_dropout_element(int lane, int round) { return dropout_call_index(lane) ^ round; }

}  // namespace attnbench
