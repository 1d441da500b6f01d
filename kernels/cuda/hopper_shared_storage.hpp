// The shared memory of a Hopper kernel as a struct, pure C++ so that host code
// (the traits' budgets, the configuration record, tests) reads its size with
// sizeof: a kernel's storage struct lists its tiles first, each a byte array
// whose size is a multiple of 1024, then its mbarriers (PipelineBarriers and
// single ones). The kernel places the struct at the first 1024-byte boundary
// of its dynamic shared memory (shared_storage_base(), hopper_pipeline.hpp),
// so every tile starts 1024-byte aligned, as the 128-byte swizzle of TMA and
// of wgmma's descriptors requires; the launch asks for shared_bytes_of<S>()
// bytes, the struct and the room to align it. The struct itself carries no
// alignas(1024), which would round its size up past the barriers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attnbench {

// The alignment the 128-byte swizzle needs (8 rows of 128 bytes), and the most
// dynamic shared memory a CTA may have on sm_90.
constexpr int kSwizzleAlignment = 1024;
constexpr int kMaxSharedBytesSm90 = 227 * 1024;

// The mbarriers of a full/empty ring (hopper_pipeline.hpp says who arrives
// where): kFull "full" barriers per stage, one per separately awaited part
// of a stage's data, then one "empty" barrier per stage.
template <int kStages, int kFull = 1>
struct PipelineBarriers {
  std::uint64_t full[kFull][kStages];
  std::uint64_t empty[kStages];
};

// The dynamic shared memory a launch asks for to hold `Storage` at a
// 1024-byte boundary.
template <typename Storage>
constexpr int shared_bytes_of() {
  return static_cast<int>(sizeof(Storage)) + kSwizzleAlignment;
}

// Whether a tile at this offset in its storage struct (offsetof) keeps the swizzle's alignment.
constexpr bool swizzle_aligned(std::size_t offset) { return offset % kSwizzleAlignment == 0; }

}  // namespace attnbench
