// The tiling of cuda.flash.sm90's backward (kernels/cuda/flash_sm90_backward.cu),
// pure C++: its budgets are checked at compile time below, its index
// arithmetic on the CPU by tests/test_flash_sm90_backward_geometry.cpp. The
// query tiles a CTA visits are flash_backward_query_tiles() of its block_n keys
// (kernels/cuda/flash_backward_geometry.hpp), shared with cuda.flash.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/host_device.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"
#include "kernels/cuda/hopper_shared_storage.hpp"

namespace attnbench {

// The head dims the backward has an instance for.
using Sm90BackwardHeadDims = HeadDimList<64, 128>;

// Tile shape and budgets per head dim, 16-bit elements. One CTA per (key tile
// of kBlockN = 128 keys, kv head, batch); two MMA warpgroups own 64 keys each
// (kConsumerKeys, wgmma's M of the key-major products Sᵀ, dPᵀ, dV, dK); the
// query tiles have kBlockM rows (FA3's backward tiles: 128 × 128 at d64,
// 64 × 128 at d128).
//   Registers per MMA thread (fp32 accumulators over 128 threads): dV and dK
//   (64 keys × d) d / 2 each for the whole loop; per query tile Sᵀ and dPᵀ
//   (64 keys × kBlockM queries) kBlockM / 2 each, turned in place into Pᵀ and
//   dSᵀ, then packed as A fragments (kBlockM / 4 each), the fp32 tiles dead
//   by then; then the consumer's dQ part (64 rows × kDqColumns) kDqColumns / 2
//   beside the packed fragments its products still read. Peak: dV + dK +
//   max(Sᵀ + dPᵀ, packed Pᵀ + dSᵀ + dQ) = 128 + max(64, 64) at d128 and
//   64 + max(128, 96) at d64, 192 of the 240 setmaxnreg gives (24 for the
//   producer: 128 × (24 + 2 × 240) = 64512 of the SM's 65536).
//   dQ += dS·K: consumer c computes the 64 × kDqColumns part c of the query
//   tile's kBlockM × d dQ over all 128 keys: at d64 its 64 rows (every dim),
//   at d128 its 64 dims (every row); either way one 128-byte-swizzle panel
//   of K as wgmma's B and one panel of the dSᵀ tile as its A.
//   Shared memory (Shared below): K and V (128 keys, resident), 2 stages ×
//   (Q + dO) of kBlockM rows, 2 dSᵀ buffers (128 keys × kBlockM queries,
//   so that one consumer may write the next tile's while the other still
//   reads this one's), LSE·log2(e) and D per stage, each consumer's fp32 dQ
//   part (16 KiB, the source of its bulk reduce-add), then the mbarriers: at
//   d128 64 + 2 × 32 + 2 × 16 + 32 = 192 KiB, at d64 32 + 2 × 32 + 2 × 32 + 32
//   = 192 KiB, plus up to 2 KiB of row vectors and 1 KiB to align the base, of 227 KiB.
template <int kHeadDim>
struct Sm90BackwardTraits {
  static constexpr int kBlockN = 128, kBlockM = kHeadDim == 64 ? 128 : 64;
  static constexpr int kConsumers = 2;
  static constexpr int kConsumerKeys = kBlockN / kConsumers;  // wgmma's M of the key-major products
  static constexpr int kWarpKeys = 16;                        // a warp's rows of the m64 accumulator
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStages = 2;
  static constexpr int kPanels = kHeadDim / 64;  // 64-column panels of 128-byte rows
  static constexpr int kRowBytes = 128;
  static constexpr int kKeyPanelBytes = kBlockN * kRowBytes;
  static constexpr int kKeyTileBytes = kPanels * kKeyPanelBytes;  // K or V
  static constexpr int kQueryPanelBytes = kBlockM * kRowBytes;
  static constexpr int kQueryTileBytes = kPanels * kQueryPanelBytes;  // Q or dO of one stage
  static constexpr int kRowVectorBytes = kBlockM * 4;                 // LSE·log2(e) or D of one stage
  // The dSᵀ tile: 128 key rows × kBlockM queries, panels of 64 queries.
  static constexpr int kDsPanelBytes = kBlockN * kRowBytes;
  static constexpr int kDsTileBytes = (kBlockM / 64) * kDsPanelBytes;
  // dQ's parts: consumer c computes rows kDqRowParts·… (below), 64 × kDqColumns.
  static constexpr int kDqRowParts = kBlockM / 64;
  static constexpr int kDqColumns = kHeadDim * kDqRowParts / kConsumers;
  // The two full barriers of a query stage: Q with LSE (for Sᵀ and Pᵀ), dO with D (for dPᵀ and dV).
  static constexpr int kQueries = 0, kGradients = 1;
  struct Shared {
    std::uint8_t k[kKeyTileBytes];
    std::uint8_t v[kKeyTileBytes];
    std::uint8_t q[kStages][kQueryTileBytes];
    std::uint8_t d_out[kStages][kQueryTileBytes];
    std::uint8_t ds[2][kDsTileBytes];
    float lse_log2[kStages][kBlockM];
    float delta[kStages][kBlockM];
    float dq[kConsumers][64 * kDqColumns];  // each consumer's dQ part, staged for its reduction
    std::uint64_t kv_full;
    PipelineBarriers<kStages, 2> query;
  };
  static constexpr int kSharedBytes = shared_bytes_of<Shared>();
  static constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;
  static_assert(Sm90BackwardHeadDims::contains(kHeadDim), "an instance for each listed head dim");
  static constexpr int kPeakAccumulatorRegisters =
      kHeadDim + (kBlockM > kBlockM / 2 + kDqColumns / 2 ? kBlockM : kBlockM / 2 + kDqColumns / 2);
  static_assert(kPeakAccumulatorRegisters <= 192, "the accumulators leave room for the rest of the 240");
  static_assert(kDqColumns == 64, "a consumer's dQ part is one 64-column panel of K");
  static_assert(kBlockM % 64 == 0 && kBlockM <= 256, "Sᵀ's N is the query tile; dSᵀ panels of 64 queries");
  static_assert(kSharedBytes <= kMaxSharedBytesSm90, "a CTA has at most 227 KiB of shared memory");
  static_assert(swizzle_aligned(offsetof(Shared, v)) && swizzle_aligned(offsetof(Shared, q)) &&
                    swizzle_aligned(offsetof(Shared, d_out)) && swizzle_aligned(offsetof(Shared, ds)) &&
                    kQueryTileBytes % kSwizzleAlignment == 0 && kDsTileBytes % kSwizzleAlignment == 0,
                "tiles and panels keep the 1024-byte swizzle alignment");
  static_assert(offsetof(Shared, lse_log2) % 128 == 0 && kRowVectorBytes % 128 == 0 && offsetof(Shared, dq) % 128 == 0,
                "TMA and bulk copies' shared addresses 128-byte aligned");
  static_assert(128 * (kProducerRegisters + kConsumers * kConsumerRegisters) <= 65536,
                "the roles' registers fit the SM's 64K");
};

// The rows and dims of consumer c's part of the dQ tile.
struct Sm90DqPart {
  int first_row;
  int first_dim;
};
ATTNBENCH_HD constexpr Sm90DqPart sm90_dq_part(int consumer, int block_m, int head_dim) {
  const int row_parts = block_m / 64;
  const int columns = head_dim * row_parts / 2;
  return Sm90DqPart{64 * (consumer % row_parts), columns * (consumer / row_parts)};
}

// ---- The workspace ---------------------------------------------------------------
// Rows per (b, h): seqlen_q rounded up to block_m, so every query tile is
// whole there (rows past seqlen_q hold zeros). Three fp32 arrays, each at a
// multiple of 256 bytes:
//   lse_log2        [batch·heads, padded_rows]   LSE·log2(e), 0 for a row without keys and past seqlen_q
//   delta           [batch·heads, padded_rows]   D = rowsum(dO ∘ O), 0 past seqlen_q
//   dq_accumulator  [batch·heads, query tile, part, 64 rows, 64 dims]   Σ dS·K (τ applied when converting)
// then int32 semaphores [batch·heads, query tile], zeroed with the accumulator.
// The accumulator is tiled so that each consumer's part of a query tile is
// one contiguous 16 KiB block: the unit of its reduction.
ATTNBENCH_HD constexpr std::int64_t sm90_backward_padded_rows(std::int64_t seqlen_q, int block_m) {
  return (seqlen_q + block_m - 1) / block_m * block_m;
}

struct Sm90BackwardWorkspace {
  std::size_t lse_log2;
  std::size_t delta;
  std::size_t dq_accumulator;
  std::size_t semaphores;  // int32 [batch·heads, query tiles]: the deterministic mode's turns
  std::size_t total;
};
ATTNBENCH_HD constexpr Sm90BackwardWorkspace sm90_backward_workspace(std::int64_t batch, std::int64_t heads,
                                                                    std::int64_t seqlen_q, int block_m,
                                                                    int head_dim) {
  const auto rows = static_cast<std::size_t>(batch * heads * sm90_backward_padded_rows(seqlen_q, block_m));
  const std::size_t vector_bytes = round_up_256(rows * sizeof(float));
  Sm90BackwardWorkspace layout{};
  layout.lse_log2 = 0;
  layout.delta = vector_bytes;
  layout.dq_accumulator = 2 * vector_bytes;
  layout.semaphores = 2 * vector_bytes + round_up_256(rows * static_cast<std::size_t>(head_dim) * sizeof(float));
  layout.total = layout.semaphores + round_up_256(rows / static_cast<std::size_t>(block_m) * sizeof(std::int32_t));
  return layout;
}

// The deterministic mode: the key tiles that see query tile `query_tile`
// add their dQ parts in the order of their index, the first of them
// (flash_key_tiles of the tile's rows, kernels/cuda/flash_geometry.hpp) first.
// A key tile's turn counts from 0 at that first tile; the CTAs that visit the
// query tile (flash_backward_query_tiles of their keys) are exactly those
// tiles (tests/test_flash_sm90_backward_geometry.cpp).
ATTNBENCH_HD int sm90_dq_turn(const MaskSpec& mask, int key_tile, int query_tile, int block_m, int block_n,
                              std::int64_t len_q, std::int64_t len_k) {
  const std::int64_t first_row = static_cast<std::int64_t>(query_tile) * block_m;
  return key_tile - flash_key_tiles(mask, first_row, first_row + block_m, len_q, len_k, block_n).first;
}

// Where dQ's element (row, dim) of one (b, h) lies in its accumulator block
// (padded_rows · head_dim floats): query tile row / block_m, then the part
// holding (row % block_m, dim) (sm90_dq_part), then row-major 64 × 64.
ATTNBENCH_HD constexpr std::int64_t sm90_dq_offset(std::int64_t row, int dim, int block_m, int head_dim) {
  const int row_parts = block_m / 64;
  const int columns = head_dim * row_parts / 2;
  const auto in_tile = static_cast<int>(row % block_m);
  const int part = in_tile / 64 + row_parts * (dim / columns);
  return row / block_m * block_m * head_dim + part * 64 * columns + (in_tile % 64) * columns + dim % columns;
}

}  // namespace attnbench
