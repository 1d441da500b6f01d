// The index arithmetic of cuda.flash (kernels/cuda/flash_forward.cu), pure C++
// so tests/test_flash_geometry.cpp checks all of it on the CPU: the tile shape
// per head dim, the launch grid, which key tiles a block of query rows visits
// for a mask, the shared-memory swizzle, the tensor-core fragment layouts and
// the lane addresses that load them with ldmatrix, and which Philox words each
// lane draws for dropout.
//
// Fragment layouts of mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), for lane l with g = l / 4 and t = l % 4:
//   A (16x16): element e (0..7) sits at row g + 8·((e / 2) % 2), column 2t + e % 2 + 8·(e / 4);
//   B (16x8, k x n): element e (0..3) at k = 2t + e % 2 + 8·(e / 2), n = g;
//   C (16x8 fp32): element e (0..3) at row g + 8·(e / 2), column 2t + e % 2.
// Register r of a fragment holds elements 2r and 2r + 1. The C fragments of two
// adjacent 8-column tiles are, element for element, the A fragment of their 16
// columns, so P = exp2(S - m) feeds the P·V product straight from registers.
#pragma once

#include <cstdint>

#include "kernels/common/dropout.hpp"
#include "kernels/common/host_device.hpp"
#include "kernels/common/mask.hpp"

namespace attnbench {

// One CTA: `warps` warps, each owning 16 whole query rows (row statistics never
// leave a warp's quads), over key tiles of `block_n` keys double-buffered in
// shared memory beside the CTA's Q tile.
struct FlashTileShape {
  int block_m;  // query rows per CTA = 16 · warps
  int block_n;  // keys per K/V tile
  int warps;
};

// d 64 and 128 use one shape: at 64 x 64 both fit in registers without spills
// (checked with -Xptxas -v), dropout's Philox words included.
ATTNBENCH_HD constexpr FlashTileShape flash_tile_shape(int /*head_dim*/) { return FlashTileShape{64, 64, 4}; }

inline constexpr int kFlashStages = 2;  // K/V tiles in flight: the one in use and the next

// Dynamic shared memory of a CTA: its Q tile, then kFlashStages K tiles, then as many V tiles.
ATTNBENCH_HD constexpr int flash_shared_bytes(int head_dim, int element_bytes) {
  return (flash_tile_shape(head_dim).block_m + 2 * kFlashStages * flash_tile_shape(head_dim).block_n) * head_dim *
         element_bytes;
}

// The forward kernel's compile-time shape for one head dim. kBlockM, kBlockN,
// kWarpRows and kWarpKeys are the tiling every mask is cut by (the CTA's query
// rows and key tile, and the rows and keys one warp bounds its tiles by); the
// tests that place mask edges at every position read them from here.
template <int kHeadDim>
struct FlashTraits {
  static constexpr FlashTileShape kShape = flash_tile_shape(kHeadDim);
  static constexpr int kBlockM = kShape.block_m;
  static constexpr int kBlockN = kShape.block_n;
  static constexpr int kWarpRows = 16;       // a warp's query rows: the mma's M
  static constexpr int kWarpKeys = kBlockN;  // every warp scores the whole key tile
  static constexpr int kThreads = 32 * kShape.warps;
  static constexpr int kDimSteps = kHeadDim / 16;  // k steps of Q·Kᵀ, and 16-dim column pairs of O
  static constexpr int kKeySteps = kBlockN / 16;   // k steps of P·V
  static constexpr int kScoreTiles = kBlockN / 8;  // 8-key C fragments of S per warp
  static constexpr int kOutputTiles = kHeadDim / 8;
  static_assert(kShape.block_m == kWarpRows * kShape.warps, "each warp owns 16 rows");
  static_assert(kHeadDim % 64 == 0, "the swizzle permutes 8 chunks of 16 bytes within a row");
};

// Grid: x over query tiles (the heaviest causal tile first), y over heads, z over batch.
ATTNBENCH_HD constexpr std::int64_t flash_query_tiles(std::int64_t seqlen_q, const FlashTileShape& shape) {
  return (seqlen_q + shape.block_m - 1) / shape.block_m;
}
// The query tile CTA x works on: x = 0 takes the last tile, which under a
// causal mask sees the most keys, so the longest CTAs start first.
ATTNBENCH_HD constexpr int flash_query_tile_of_block(int block_x, int query_tiles) {
  return query_tiles - 1 - block_x;
}
// The hardware's limits on grid y and z.
inline constexpr std::int64_t kMaxGridHeads = 65535;
inline constexpr std::int64_t kMaxGridBatch = 65535;

// Key tiles [first, end) that query rows [row_begin, row_end) visit: every tile
// meeting visible_key_bound of those rows. Tiles outside hold no visible key for
// any of the rows and are skipped; the range is empty when no row sees a key.
struct KeyTileRange {
  int first = 0;
  int end = 0;
  ATTNBENCH_HD bool empty() const { return end <= first; }
};
ATTNBENCH_HD KeyTileRange flash_key_tiles(const MaskSpec& mask, std::int64_t row_begin, std::int64_t row_end,
                                          std::int64_t len_q, std::int64_t len_k, int block_n) {
  const KeyRange bound = visible_key_bound(mask, row_begin, row_end, len_q, len_k);
  if (bound.empty()) return KeyTileRange{0, 0};
  return KeyTileRange{static_cast<int>(bound.begin / block_n), static_cast<int>((bound.end + block_n - 1) / block_n)};
}

// Element offset of (row, column) in a shared-memory tile of `row_elements`
// 16-bit elements per row (a multiple of 64). The row's 16-byte chunks are
// permuted by chunk ^ (row % 8): the eight rows an ldmatrix reads, and the eight
// chunks a warp's cp.async writes, then fall on eight different bank groups.
ATTNBENCH_HD constexpr int swizzled_offset(int row, int column, int row_elements) {
  return row * row_elements + (((column / 8) ^ (row % 8)) * 8) + column % 8;
}

// swizzled_offset in bytes (16-bit elements, rows of `row_bytes`, a multiple of
// 128), split for the kernel's inner loops: the lane's own position (row, chunk
// 0 or 1) once, then each step's move by an even number of chunks and a multiple
// of 8 rows as a XOR and an add of constants. With the tile's base address a
// multiple of 128, the kernel applies the step to base + lane offset directly,
// so no per-step address lives in a register.
ATTNBENCH_HD constexpr int swizzled_lane_bytes(int row, int chunk, int row_bytes) {
  return row * row_bytes + (chunk ^ (row % 8)) * 16;
}
ATTNBENCH_HD constexpr std::uint32_t swizzled_step(std::uint32_t lane_address, int chunk_step, int row_step,
                                                   int row_bytes) {
  return (lane_address ^ static_cast<std::uint32_t>((chunk_step % 8) * 16)) +
         static_cast<std::uint32_t>((chunk_step / 8) * 128 + row_step * row_bytes);
}

// A position in a 16x16 (or 16x8) fragment.
struct FragmentPosition {
  int row;
  int column;
};

ATTNBENCH_HD constexpr FragmentPosition mma_a_position(int lane, int element) {
  return FragmentPosition{lane / 4 + 8 * ((element / 2) % 2), 2 * (lane % 4) + element % 2 + 8 * (element / 4)};
}
// row = k, column = n
ATTNBENCH_HD constexpr FragmentPosition mma_b_position(int lane, int element) {
  return FragmentPosition{2 * (lane % 4) + element % 2 + 8 * (element / 2), lane / 4};
}
ATTNBENCH_HD constexpr FragmentPosition mma_c_position(int lane, int element) {
  return FragmentPosition{lane / 4 + 8 * (element / 2), 2 * (lane % 4) + element % 2};
}

// The row of a 16x16 block whose address lane l hands to ldmatrix.x4 (l % 8 is
// the row within matrix l / 8), for the three operands of the kernel:
//   Q as A: matrices (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15)
//           give A registers 0..3.
//   V as B of P·V (key rows, dim columns), loaded transposed: the same matrix
//           order; registers 0, 1 are the B fragment of dims 0-7, 2, 3 of dims 8-15.
//   K as B of Q·Kᵀ (key rows, dim columns), plain: matrices (keys 0-7, dims 0-7),
//           (0-7, 8-15), (8-15, 0-7), (8-15, 8-15); registers 0, 1 are the B
//           fragment of keys 0-7, registers 2, 3 of keys 8-15.
ATTNBENCH_HD constexpr FragmentPosition ldmatrix_row_for_a(int lane) {
  return FragmentPosition{lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16)};
}
ATTNBENCH_HD constexpr FragmentPosition ldmatrix_row_for_transposed_b(int lane) { return ldmatrix_row_for_a(lane); }
ATTNBENCH_HD constexpr FragmentPosition ldmatrix_row_for_b(int lane) {
  return FragmentPosition{lane % 8 + 8 * (lane / 16), 8 * ((lane / 8) % 2)};
}

// Dropout in the C layout. Lane t of a quad holds keys 2t, 2t + 1 of an 8-key
// tile for rows g and g + 8; one Philox call (4 keys) serves lanes t and t ^ 1.
// So each lane draws one call per 8-key tile, for the key group 2·(tile) + t / 2,
// on row g (t even) or g + 8 (t odd), and the pair swaps the two words the other
// lane needs with one shuffle each.
ATTNBENCH_HD constexpr int dropout_draw_row_half(int lane) { return lane % 2; }  // 0: row g, 1: row g + 8
// The first of the two words a lane sends to its partner (lane ^ 1).
ATTNBENCH_HD constexpr int dropout_sent_word(int lane) { return lane % 2 == 0 ? 2 : 0; }
// Where the words for (row half, element pair) come from: the lane's own draw or
// its partner's, and the first word's index within that draw's 4 words.
struct DropoutWordSource {
  bool own;
  int word;
};
ATTNBENCH_HD constexpr DropoutWordSource dropout_word_source(int lane, int row_half) {
  return row_half == dropout_draw_row_half(lane) ? DropoutWordSource{true, 2 * ((lane % 4) % 2)}
                                                 : DropoutWordSource{false, dropout_sent_word(lane ^ 1)};
}

}  // namespace attnbench
