// The index logic of cuda.flash.simple (kernels/cuda/flash_simple.cu): the CTA
// shape, the grid, which query rows a warp owns, which key tiles a CTA visits,
// which key a lane scores, which dims a lane accumulates, and which 16-byte
// chunk of a staged tile a thread copies. Pure C++ (no CUDA headers), so
// tests/test_flash_simple_geometry.cpp checks it on the CPU against the mask
// definition (is_visible).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/host_device.hpp"
#include "kernels/common/mask.hpp"

namespace attnbench::flash_simple {

inline constexpr int kWarpSize = 32;
inline constexpr int kWarps = 4;  // per CTA
inline constexpr int kThreads = kWarps * kWarpSize;
inline constexpr int kRowsPerWarp = 4;                    // query rows each warp owns
inline constexpr int kBlockRows = kWarps * kRowsPerWarp;  // query rows per CTA
inline constexpr int kBlockKeys = kWarpSize;              // keys per K/V tile: one per lane
inline constexpr int kChunkElements = 8;                  // 16-bit elements per 16-byte copy
inline constexpr int kDimsPerPass = 2 * kWarpSize;        // each lane accumulates a pair of dims per pass
inline constexpr int kLargestHeadDim = 256;
inline constexpr std::size_t kStaticSharedLimit = 48 * 1024;

// The tiling the kernel's masks are cut by, in the vocabulary of the fused
// kernels' traits (kernels/cuda/flash_geometry.hpp's FlashTraits): a CTA's rows
// and key tile, and the rows and keys of one warp.
struct Traits {
  static constexpr int kBlockM = kBlockRows;
  static constexpr int kBlockN = kBlockKeys;
  static constexpr int kWarpRows = kRowsPerWarp;
  static constexpr int kWarpKeys = kBlockKeys;  // lane l scores key l of every tile
};

// Head dims the kernel handles: multiples of 8 from 8 to 256.
ATTNBENCH_HD constexpr bool head_dim_supported(std::int64_t head_dim) {
  return head_dim >= kChunkElements && head_dim <= kLargestHeadDim && head_dim % kChunkElements == 0;
}

// The head dim of the compiled kernel instance that serves `head_dim`: 64, 128 or 256.
ATTNBENCH_HD constexpr int compiled_head_dim(std::int64_t head_dim) {
  return head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : kLargestHeadDim;
}

// Passes of a warp over the dims of a row: lane l holds dims dim_of(l, pass) and
// dim_of(l, pass) + 1.
ATTNBENCH_HD constexpr int dim_passes(int compiled_dim) { return compiled_dim / kDimsPerPass; }
ATTNBENCH_HD constexpr int dim_of(int lane, int pass) { return pass * kDimsPerPass + 2 * lane; }

// Elements per row of the staged K tile: padded by 16 bytes, so the 16-byte reads
// of 32 lanes from 32 different keys spread over every shared-memory bank.
ATTNBENCH_HD constexpr int key_row_stride(int compiled_dim) { return compiled_dim + kChunkElements; }

// Bytes of the staged Q rows, K tile and V tile of one CTA, and of the fp32
// probabilities of the current tile (one per row and key) its warps share.
ATTNBENCH_HD constexpr std::size_t shared_bytes(int compiled_dim, std::size_t element_bytes) {
  const int elements = kBlockRows * compiled_dim                     // Q rows
                       + kBlockKeys * key_row_stride(compiled_dim)  // K tile
                       + kBlockKeys * compiled_dim;                 // V tile
  return element_bytes * static_cast<std::size_t>(elements) + sizeof(float) * kBlockRows * kBlockKeys;
}

// Grid (x, y, z) = (query blocks, heads, batch).
struct GridShape {
  std::int64_t query_blocks = 0;
  std::int64_t heads = 0;
  std::int64_t batch = 0;
};
ATTNBENCH_HD GridShape grid_shape(std::int64_t batch, std::int64_t heads, std::int64_t seqlen_q) {
  return GridShape{(seqlen_q + kBlockRows - 1) / kBlockRows, heads, batch};
}

// Row r of warp `warp` within its CTA's block of query rows, and in the padded
// query grid (rows at or past seqlen_q exist only in the last block and are not written).
ATTNBENCH_HD constexpr int block_row(int warp, int r) { return warp * kRowsPerWarp + r; }
ATTNBENCH_HD std::int64_t first_row_of_block(std::int64_t block) { return block * kBlockRows; }
ATTNBENCH_HD std::int64_t query_row(std::int64_t block, int warp, int r) {
  return first_row_of_block(block) + block_row(warp, r);
}

// Half-open range of key tiles [begin, end).
struct TileRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

// The key tiles a CTA visits: those overlapping visible_key_bound of its rows.
// Every other tile holds no key that any of its rows sees; empty when none of its
// rows sees a key.
ATTNBENCH_HD TileRange key_tiles(const MaskSpec& mask, std::int64_t block, std::int64_t len_q, std::int64_t len_k) {
  const std::int64_t row_begin = first_row_of_block(block);
  const KeyRange bound = visible_key_bound(mask, row_begin, row_begin + kBlockRows, len_q, len_k);
  if (bound.empty()) return TileRange{0, 0};
  return TileRange{bound.begin / kBlockKeys, (bound.end + kBlockKeys - 1) / kBlockKeys};
}

// The key that lane `lane` scores in tile `tile`.
ATTNBENCH_HD std::int64_t key_of(std::int64_t tile, int lane) { return tile * kBlockKeys + lane; }

// A staged tile of `rows` rows of `head_dim` elements is copied in 16-byte chunks,
// chunk c by thread c mod kThreads: row-major, so consecutive threads read
// consecutive 16 bytes of a row.
struct TileChunk {
  int row = 0;
  int column = 0;  // first element of the chunk
};
ATTNBENCH_HD constexpr int tile_chunks(int rows, int head_dim) { return rows * (head_dim / kChunkElements); }
ATTNBENCH_HD constexpr TileChunk tile_chunk(int chunk, int head_dim) {
  return TileChunk{chunk / (head_dim / kChunkElements), chunk % (head_dim / kChunkElements) * kChunkElements};
}

}  // namespace attnbench::flash_simple
