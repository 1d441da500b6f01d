// The tiling of cuda.flash.sm90's forward (kernels/cuda/flash_sm90_forward.cu),
// pure C++: its budgets are checked at compile time below, its mask arithmetic
// on the CPU by tests/test_flash_geometry.cpp, and the generated shapes of the
// correctness matrix (tests/generated_shapes.hpp) put every mask edge at every
// position of it. The key tiles a CTA visits are flash_key_tiles() of its kBlockM rows
// (kernels/cuda/flash_geometry.hpp), shared with cuda.flash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/cuda/hopper_shared_storage.hpp"

namespace attnbench {

// The head dims the kernel is instantiated for, listed once: the launch's
// dispatch, flash_sm90_shape() and the implementation's supports() read it.
template <int... kHeadDims>
struct HeadDimList {
  static constexpr bool contains(std::int64_t head_dim) { return ((head_dim == kHeadDims) || ...); }
  // Calls visit(std::integral_constant<int, d>{}) for the listed d equal to
  // head_dim; false when none is.
  template <typename Visit>
  static bool dispatch(std::int64_t head_dim, Visit&& visit) {
    return ((head_dim == kHeadDims ? (visit(std::integral_constant<int, kHeadDims>{}), true) : false) || ...);
  }
  // "64, 128 and 256", for messages.
  static std::string names() {
    const int dims[] = {kHeadDims...};
    std::string text;
    for (std::size_t i = 0; i < sizeof...(kHeadDims); ++i) {
      if (i > 0) text += i + 1 == sizeof...(kHeadDims) ? " and " : ", ";
      text += std::to_string(dims[i]);
    }
    return text;
  }
};
using Sm90HeadDims = HeadDimList<64, 128, 256>;

// Tile shape and budgets per head dim (64, 128 or 256), 16-bit elements.
//   Registers per consumer thread, the accumulators: S is 64 × block_n fp32
//   over 128 threads = block_n / 2, P as packed pairs block_n / 4, O 64 ×
//   head_dim fp32 = head_dim / 2. At d128 with 128-key tiles 64 + 32 + 64 =
//   160, at d256 a 128-key tile would make 64 + 32 + 128 = 224, more than the
//   about 216 of 240 FA3 budgets for them, so d256 takes 80-key tiles (FA3's
//   choice): 40 + 20 + 128 = 188. The rest of the 240 setmaxnreg gives is for
//   addresses, row state and dropout's Philox rounds. 24 (producer) × 128 +
//   240 × 256 = 64512 of the SM's 65536 registers.
//   The softmax/P·V overlap holds S(j + 1), P(j) and O as wgmma operands at
//   once, all of them; without it, at most S and O. ptxas fits the first at
//   d128 (160) and spills at d256 (188, also with 64-key tiles' 176), so at
//   d256 the consumers run each tile's S, softmax and P·V in order whatever
//   the run-time flag says (kSoftmaxOverlapFits).
//   FA3's 192 x 128 at d64 would take three consumers, which leaves each at
//   most 160 registers (128 × (24 + 3 × 160) = 64512): ptxas (CUDA 13.0)
//   spills there, 112 to 348 bytes with
//   the overlap and 4 bytes with dropout even without it, so d64 keeps two
//   consumers and 128 rows.
//   Shared memory (Shared below): Q (128 rows) + 2 stages × (K + V) of
//   block_n rows, then 7 mbarriers: at d128 32 + 2 × (32 + 32) = 160 KiB of
//   the 227 KiB a CTA may have, d64 half of it; at d256 64 + 2 × (40 + 40) =
//   224 KiB (a third stage would not fit), plus 1 KiB to align the base.
// The masks are cut by the CTA's kBlockM rows (its key-tile range), by each
// consumer's kConsumerRows (whether a tile needs the per-element predicates)
// and by each warp's kWarpRows rows of the accumulator fragment (the visible
// keys of its rows); every warp scores the whole key tile (kWarpKeys).
template <int kHeadDim>
struct Sm90Traits {
  static constexpr int kBlockM = 128, kBlockN = kHeadDim == 256 ? 80 : 128;
  static constexpr int kConsumerRows = 64;  // the M of wgmma: one consumer warpgroup's query rows
  static constexpr int kConsumers = kBlockM / kConsumerRows;
  static constexpr int kWarpRows = 16;  // a warp's rows of the m64 accumulator
  static constexpr int kWarpKeys = kBlockN;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStages = 2;
  static constexpr int kPanels = kHeadDim / 64;  // 64-column panels of 128-byte rows
  static constexpr int kRowBytes = 128;
  static constexpr int kQPanelBytes = kBlockM * kRowBytes;
  static constexpr int kKeyPanelBytes = kBlockN * kRowBytes;
  static constexpr int kQBytes = kPanels * kQPanelBytes;
  static constexpr int kKeyTileBytes = kPanels * kKeyPanelBytes;  // one K or V tile
  // The CTA's shared memory (hopper_shared_storage.hpp); the kv ring's full
  // barriers are K's (part kKeys) and V's (kValues) of each stage.
  static constexpr int kKeys = 0, kValues = 1;
  struct Shared {
    std::uint8_t q[kQBytes];
    std::uint8_t k[kStages][kKeyTileBytes];
    std::uint8_t v[kStages][kKeyTileBytes];
    std::uint64_t q_full;
    PipelineBarriers<kStages, 2> kv;
  };
  static constexpr int kSharedBytes = shared_bytes_of<Shared>();
  static constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;
  static_assert(Sm90HeadDims::contains(kHeadDim), "an instance for each listed head dim");
  static constexpr int kAccumulatorRegisters = kBlockN / 2 + kBlockN / 4 + kHeadDim / 2;  // S, P, O
  static_assert(kAccumulatorRegisters <= 216, "the accumulators leave room for the rest of the consumer's 240");
  static constexpr bool kSoftmaxOverlapFits = kAccumulatorRegisters <= 160;
  static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "P·V takes keys in k16 steps; wgmma's N is at most 256");
  static_assert(kSharedBytes <= kMaxSharedBytesSm90, "a CTA has at most 227 KiB of shared memory");
  static_assert(kQPanelBytes % kSwizzleAlignment == 0 && kKeyPanelBytes % kSwizzleAlignment == 0 &&
                    swizzle_aligned(offsetof(Shared, k)) && swizzle_aligned(offsetof(Shared, v)),
                "tiles and panels keep the 1024-byte swizzle alignment");
  static_assert(128 * (kProducerRegisters + kConsumers * kConsumerRegisters) <= 65536,
                "the roles' registers fit the SM's 64K");
  static_assert(kConsumerRows == 4 * kWarpRows, "a warpgroup's four warps hold 16 accumulator rows each");
};

}  // namespace attnbench
