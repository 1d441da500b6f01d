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
using Sm90BackwardHeadDims = HeadDimList<64, 128, 256>;

// Tile shape and budgets per head dim, 16-bit elements. One CTA per (key tile
// of kBlockN keys, kv head, batch), two MMA warpgroups (consumers) beside the
// producer; the query tiles have kBlockM rows. The key-major products Sᵀ,
// dPᵀ, dV and dK have wgmma's M = 64 keys (kConsumerKeys) per consumer. Two
// ways to share the work between the consumers:
// - d64 and d128 (kSplitKeys): 128-key tiles, consumer c owns keys 64c ..
//   64c + 63 for every product but dQ, and the whole head dim of its dK and
//   dV; its Sᵀ and dPᵀ span the query tile in slices of 64 queries, and its
//   Pᵀ stays in registers as dV's A operand (FA3's backward tiles: 128 × 128
//   at d64, 64 × 128 at d128).
// - d256: dK and dV of 64 keys × 256 dims would take 256 registers per
//   thread, so the tile has 64 keys, which both consumers share: consumer c
//   computes Sᵀ and dPᵀ over queries 32c .. 32c + 31 of a 64-row tile (N =
//   32) and dK, dV over dims 128c .. 128c + 127 (N = 128). dV then needs the
//   whole Pᵀ, so Pᵀ goes to shared memory beside dSᵀ (FA3's 64 × 64 tiles
//   at d256 share the work the same way).
//   Registers per MMA thread (fp32 accumulators over 128 threads): dV and dK
//   (64 keys × kConsumerDims) kConsumerDims / 2 each for the whole loop; per
//   query tile Sᵀ and dPᵀ (64 keys × kSliceQueries) kSliceQueries / 2 each,
//   turned in place into Pᵀ and dSᵀ, then packed (kBlockM / 4 registers of Pᵀ
//   A fragments with kSplitKeys, the fp32 tiles dead by then); then the
//   consumer's dQ part (64 rows × kDqColumns) kDqColumns / 2 beside the
//   packed fragments its products still read. Peak: dV + dK + max(Sᵀ + dPᵀ,
//   packed Pᵀ + dQ) = 128 + max(64, 64) at d128, 64 + max(128, 96) at d64
//   and 128 + max(32, 64) at d256: at most 192 of the 240 setmaxnreg gives (24 for the producer: 128 × (24 + 2 × 240) = 64512
//   of the SM's 65536).
//   dQ += dS·K: consumer c computes the 64 × kDqColumns part c of the query
//   tile's kBlockM × d dQ over all the tile's keys: at d64 its 64 rows (every
//   dim), at d128 its 64 dims, at d256 its 128 dims (every row); B is one or
//   two 128-byte-swizzle panels of K, A one panel of the dSᵀ tile.
//   Shared memory (Shared below): K and V (resident), 2 stages × (Q + dO) of
//   kBlockM rows, 2 dSᵀ buffers (kBlockN keys × kBlockM queries, so that one
//   consumer may write the next tile's while the other still reads this
//   one's), the exchange (with kSplitKeys each consumer's fp32 dQ part, 16
//   KiB, the source of its bulk reduce-add; at d256 two Pᵀ buffers), LSE·
//   log2(e) and D per stage, then the mbarriers: at d128 64 + 2 × 32 + 2 × 16
//   + 32 = 192 KiB, at d64 32 + 2 × 32 + 2 × 32 + 32 = 192 KiB, at d256
//   64 + 2 × 64 + 2 × 8 + 2 × 8 = 224 KiB, plus up to 2 KiB of row vectors and
//   1 KiB to align the base, of 227 KiB. At d256 a dQ staging of 64 KiB does
//   not fit beside two stages, so the consumers add their dQ parts from
//   registers (red.global.add.v2.f32), with the same bytes of reduce traffic.
template <int kHeadDim>
struct Sm90BackwardTraits {
  static constexpr bool kSplitKeys = kHeadDim <= 128;
  static constexpr int kBlockN = kSplitKeys ? 128 : 64, kBlockM = kHeadDim == 64 ? 128 : 64;
  static constexpr int kConsumers = 2;
  static constexpr int kConsumerKeys = kSplitKeys ? kBlockN / kConsumers : kBlockN;  // wgmma's M, key-major
  static constexpr int kConsumerDims = kSplitKeys ? kHeadDim : kHeadDim / kConsumers;  // N of its dK and dV
  static constexpr int kSliceQueries = kSplitKeys ? 64 : kBlockM / kConsumers;  // N of its Sᵀ and dPᵀ
  static constexpr int kSlices = kSplitKeys ? kBlockM / 64 : 1;                 // per query tile
  static constexpr int kWarpKeys = 16;                                          // a warp's rows of the m64 accumulator
  static constexpr int kWarpRows = kBlockM;  // a warp spans the whole query tile of the key-major products
  // Consumer c's part: its first row of the K, V, dSᵀ and Pᵀ tiles, its first
  // query of a tile's Sᵀ and dPᵀ, its first dim of dK and dV.
  ATTNBENCH_HD static constexpr int key_row(int c) { return kSplitKeys ? kConsumerKeys * c : 0; }
  ATTNBENCH_HD static constexpr int first_query(int c) { return kSplitKeys ? 0 : kSliceQueries * c; }
  ATTNBENCH_HD static constexpr int first_dim(int c) { return kSplitKeys ? 0 : kConsumerDims * c; }
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStages = 2;
  static constexpr int kPanels = kHeadDim / 64;  // 64-column panels of 128-byte rows
  static constexpr int kRowBytes = 128;
  static constexpr int kKeyPanelBytes = kBlockN * kRowBytes;
  static constexpr int kKeyTileBytes = kPanels * kKeyPanelBytes;  // K or V
  static constexpr int kQueryPanelBytes = kBlockM * kRowBytes;
  static constexpr int kQueryTileBytes = kPanels * kQueryPanelBytes;  // Q or dO of one stage
  static constexpr int kRowVectorBytes = kBlockM * 4;                 // LSE·log2(e) or D of one stage
  // The dSᵀ tile (and at d256 the Pᵀ tile): kBlockN key rows × kBlockM queries, panels of 64 queries.
  static constexpr int kDsPanelBytes = kBlockN * kRowBytes;
  static constexpr int kDsTileBytes = (kBlockM / 64) * kDsPanelBytes;
  // dQ's parts: consumer c computes rows kDqRowParts·… (sm90_dq_part), 64 × kDqColumns.
  static constexpr int kDqRowParts = kBlockM / 64;
  static constexpr int kDqColumns = kHeadDim * kDqRowParts / kConsumers;
  static constexpr int kDqPartBytes = 4 * 64 * kDqColumns;
  // Whether the dQ parts are staged in shared memory and added by one bulk reduce-add each.
  static constexpr bool kStagedDq = kSplitKeys;
  static constexpr int kExchangeBytes = kStagedDq ? kConsumers * kDqPartBytes : 2 * kDsTileBytes;
  // The two full barriers of a query stage: Q with LSE (for Sᵀ and Pᵀ), dO with D (for dPᵀ and dV).
  static constexpr int kQueries = 0, kGradients = 1;
  struct Shared {
    std::uint8_t k[kKeyTileBytes];
    std::uint8_t v[kKeyTileBytes];
    std::uint8_t q[kStages][kQueryTileBytes];
    std::uint8_t d_out[kStages][kQueryTileBytes];
    std::uint8_t ds[2][kDsTileBytes];
    std::uint8_t exchange[kExchangeBytes];  // each consumer's dQ part (kStagedDq), else two Pᵀ tiles
    float lse_log2[kStages][kBlockM];
    float delta[kStages][kBlockM];
    std::uint64_t kv_full;
    PipelineBarriers<kStages, 2> query;
  };
  static constexpr int kSharedBytes = shared_bytes_of<Shared>();
  static constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;
  static_assert(Sm90BackwardHeadDims::contains(kHeadDim), "an instance for each listed head dim");
  static constexpr int kPackedRegisters = kSplitKeys ? kBlockM / 4 : 0;  // Pᵀ as dV's A fragments
  static constexpr int kPeakAccumulatorRegisters =
      kConsumerDims + (kSliceQueries > kPackedRegisters + kDqColumns / 2 ? kSliceQueries
                                                                          : kPackedRegisters + kDqColumns / 2);
  static_assert(kPeakAccumulatorRegisters <= 192, "the accumulators leave room for the rest of the 240");
  static_assert(kDqColumns % 64 == 0 && kConsumerDims % 64 == 0, "dQ, dK and dV parts of whole 64-column panels");
  static_assert(kBlockM % 64 == 0 && kBlockM <= 256, "dSᵀ panels of 64 queries");
  static_assert(kSliceQueries % 16 == 0 && kSlices * kSliceQueries * (kSplitKeys ? 1 : kConsumers) == kBlockM,
                "the slices of the consumers cover the query tile");
  static_assert(kSharedBytes <= kMaxSharedBytesSm90, "a CTA has at most 227 KiB of shared memory");
  static_assert(swizzle_aligned(offsetof(Shared, v)) && swizzle_aligned(offsetof(Shared, q)) &&
                    swizzle_aligned(offsetof(Shared, d_out)) && swizzle_aligned(offsetof(Shared, ds)) &&
                    swizzle_aligned(offsetof(Shared, exchange)) && kQueryTileBytes % kSwizzleAlignment == 0 &&
                    kDsTileBytes % kSwizzleAlignment == 0,
                "tiles and panels keep the 1024-byte swizzle alignment");
  static_assert(offsetof(Shared, lse_log2) % 128 == 0 && kRowVectorBytes % 128 == 0 && kDqPartBytes % 128 == 0,
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
//   dq_accumulator  [batch·heads, query tile, part, 64 rows, columns]   Σ dS·K (τ applied when converting)
// then int32 semaphores [batch·heads, query tile], zeroed with the accumulator.
// The accumulator is tiled so that each consumer's part of a query tile is
// one contiguous block of 64 rows × its columns (Sm90BackwardTraits::
// kDqColumns: 64, or 128 at d256): the unit of its reduction.
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
// holding (row % block_m, dim) (sm90_dq_part), then row-major 64 × columns.
ATTNBENCH_HD constexpr std::int64_t sm90_dq_offset(std::int64_t row, int dim, int block_m, int head_dim) {
  const int row_parts = block_m / 64;
  const int columns = head_dim * row_parts / 2;
  const auto in_tile = static_cast<int>(row % block_m);
  const int part = in_tile / 64 + row_parts * (dim / columns);
  return row / block_m * block_m * head_dim + part * 64 * columns + (in_tile % 64) * columns + dim % columns;
}

}  // namespace attnbench
