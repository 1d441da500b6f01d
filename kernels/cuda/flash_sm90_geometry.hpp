// The tiling of cuda.flash.sm90's forward (kernels/cuda/flash_sm90_forward.cu),
// pure C++: its budgets are checked at compile time below, its mask arithmetic
// on the CPU by tests/test_flash_geometry.cpp, and the generated shapes of the
// correctness matrix (tests/generated_shapes.hpp) put every mask edge at every
// position of it. The key tiles a CTA visits are flash_key_tiles() of its kBlockM rows
// (kernels/cuda/flash_geometry.hpp), shared with cuda.flash.
#pragma once

namespace attnbench {

// Tile shape and budgets per head dim (64 or 128), 16-bit elements.
//   Registers per consumer thread: S is 64 × 128 fp32 over 128 threads = 64,
//   P as packed pairs 32, O 64 × head_dim fp32 = head_dim / 2 (64 at d128):
//   160 at d128 under the 240 setmaxnreg gives, the rest for addresses,
//   row state and dropout (with 232, the d128 dropout instance spills once
//   both loop forms share the function). 24 (producer) × 128 + 240 × 256 =
//   64512 of the SM's 65536 registers.
//   Shared memory at d128: Q 32 KiB + 2 stages × (K 32 KiB + V 32 KiB) =
//   160 KiB of the 227 KiB a CTA may have; d64 half of it.
// The masks are cut by the CTA's kBlockM rows (its key-tile range), by each
// consumer's kConsumerRows (whether a tile needs the per-element predicates)
// and by each warp's kWarpRows rows of the accumulator fragment (the visible
// keys of its rows); every warp scores the whole key tile (kWarpKeys).
template <int kHeadDim>
struct Sm90Traits {
  static constexpr int kBlockM = 128, kBlockN = 128;
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
  static constexpr int kKOffset = kQBytes;
  static constexpr int kVOffset = kKOffset + kStages * kKeyTileBytes;
  static constexpr int kBarrierOffset = kVOffset + kStages * kKeyTileBytes;
  static constexpr int kBarriers = 1 + 3 * kStages;
  static constexpr int kSharedBytes = kBarrierOffset + 8 * kBarriers + 1024 /* alignment of the base */;
  static constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;
  static_assert(kHeadDim == 64 || kHeadDim == 128, "head dims 64 and 128");
  static_assert(kSharedBytes <= 227 * 1024, "a CTA has at most 227 KiB of shared memory");
  static_assert(kQPanelBytes % 1024 == 0 && kKeyPanelBytes % 1024 == 0, "panels keep the 1024-byte swizzle alignment");
  static_assert(128 * (kProducerRegisters + kConsumers * kConsumerRegisters) <= 65536,
                "the roles' registers fit the SM's 64K");
  static_assert(kConsumerRows == 4 * kWarpRows, "a warpgroup's four warps hold 16 accumulator rows each");
};

}  // namespace attnbench
