// The differential check's instruction probes (tests/cuda/differential_probes.cu,
// docs/cudasim.md "The differential check"): one small kernel per form of the
// wrappers the CUDA kernels issue, compiled for the GPU by nvcc and for the
// simulator, each reading its inputs from one array of 32-bit words and writing
// its outputs to another. tests/test_differential.cpp makes the inputs, runs a
// form on both builds and compares the outputs.
//
// This header is shared by both builds and by the host test (C++17, nvcc's
// dialect): the forms, the sizes of their inputs and outputs, the placement of
// the wgmma operands in shared memory and the TMA tensors' geometry, so that
// the host computes references from the same numbers the kernels use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_build.hpp"

namespace attnbench::differential {

enum class Probe {
  mma,             // mma.sync m16n8k16 (bf16 or fp16), one warp
  ldmatrix,        // ldmatrix .x4 (plain or .trans; `transposed`)
  shared_vectors,  // st.shared.u32, ld.shared.v4.u32, ld.shared.v2.f32
  cp_async,        // cp.async.cg 16 bytes, inside and zero-filled
  shuffle,         // shfl.sync.bfly (__shfl_xor_sync) on b32 and f32
  ex2,             // ex2.approx.ftz.f32 (FastExp2)
  to_half,         // from_float<__half>, pack_pair<__half>
  to_bfloat16,     // from_float<__nv_bfloat16>, pack_pair<__nv_bfloat16>
  from_half,       // to_float(__half)
  from_bfloat16,   // to_float(__nv_bfloat16)
  red_add_pair,    // red.global.add.v2.f32 (add_pair_to_global)
  red_add_vector,  // red.global.add.v4.f32 and red.global.add.f32 (red_add_global_v4, red_add_global)
  bulk_reduce,     // cp.reduce.async.bulk .add.f32, twice onto the same destination (bulk_reduce_add_global)
  elect,           // elect.sync (elect_one_sync)
  stmatrix,        // stmatrix .x4 (plain or .trans)
  wgmma,           // wgmma.mma_async m64nNk16, SS or RS
  tma_load,        // cp.async.bulk.tensor 2d load, box partly out of bounds
  tma_store,       // cp.async.bulk.tensor 2d store, box partly out of bounds
  mbarrier_tx,     // expect_tx / arrive.expect_tx completed by TMA, parity and state waits
  base_offset,     // wgmma with a 128-byte-swizzled B starting on line `line` of its pattern
};

struct ProbeForm {
  std::string name;  // the first field of the form's line
  Probe probe = Probe::mma;
  bool bf16 = false;        // mma, wgmma: the input type
  bool transposed = false;  // ldmatrix, stmatrix
  int n = 0;                // wgmma: N
  bool a_in_registers = false, a_mn_major = false, b_mn_major = false;  // wgmma
  int swizzle = 0;  // wgmma, TMA: 0 (none), 32, 64 or 128 bytes
  int line = 0;     // base_offset: the line of its 1024-byte pattern that B starts on
};

// ---- sizes ----------------------------------------------------------------------------

inline constexpr int kEx2Count = 2048;
inline constexpr int kConversionCount = 2048;  // fp32 values narrowed
inline constexpr int kWidenCount = 65536;      // every 16-bit pattern widened
inline constexpr int kRedThreads = 256, kRedPairs = 8;
inline constexpr int kRedQuads = 8;          // red_add_vector: 8 quads by .v4, then 8 words by the scalar form
inline constexpr int kBulkReduceWords = 64;  // bulk_reduce: 256 bytes

// TMA: a 2-d fp16 tensor of 24 rows of 72 elements (144-byte rows) and a box
// of 16 rows of swizzle / 2 elements (64 without swizzle). Loads start 4 rows
// above the tensor and 40 elements before its right edge; stores 8 rows above
// its bottom edge and 16 elements before its right edge.
inline constexpr int kTensorRows = 24, kTensorColumns = 72, kBoxRows = 16;
inline int tma_box_columns(int swizzle) { return swizzle == 0 ? 64 : swizzle / 2; }
inline int tma_box_words(int swizzle) { return kBoxRows * tma_box_columns(swizzle) / 2; }
inline constexpr int kTensorWords = kTensorRows * kTensorColumns / 2;
inline constexpr int kLoadX = kTensorColumns - 40, kLoadY = -4;
inline constexpr int kStoreX = kTensorColumns - 16, kStoreY = kTensorRows - 8;
// mbarrier_tx: three 128-byte-swizzled boxes, at (kLoadX, kLoadY), (0, 0) and (8, 8).
inline constexpr int kTxFlags = 3;

// ---- wgmma operands -------------------------------------------------------------------

// A K- or MN-major operand of 16-bit elements in shared memory (PTX ISA
// 9.7.15.5.1.2.1.3 "Canonical Layouts"), at `offset` from the 1024-byte aligned
// image, with its leading and stride byte offsets.
struct OperandLayout {
  std::uint32_t offset = 0, lbo = 0, sbo = 0;
  int swizzle = 0;
  bool mn_major = false;
};

// The densest canonical placement of `rows` rows (64 for A, N for B) of 16 k.
inline OperandLayout dense_operand(bool mn_major, int swizzle, std::uint32_t offset, int rows) {
  const auto width = static_cast<std::uint32_t>(swizzle);
  const auto count = static_cast<std::uint32_t>(rows);
  if (!mn_major) {
    // K-major: 8-row groups; unswizzled, the second 8 k lie LBO further.
    return swizzle == 0 ? OperandLayout{offset, 128, 256, 0, false} : OperandLayout{offset, 16, 8 * width, swizzle, false};
  }
  if (swizzle == 0) return OperandLayout{offset, count / 8 * 128, 128, 0, true};
  // MN-major, swizzled: spans of width / 2 mn per line, 8 k lines each; spans LBO apart, 8-k groups SBO apart.
  const std::uint32_t spans = (count + width / 2 - 1) / (width / 2);
  return OperandLayout{offset, 8 * width, spans * 8 * width, swizzle, true};
}

// The unswizzled byte offset, from the operand's start, of element (mn, k).
inline std::uint32_t operand_offset(const OperandLayout& o, int mn, int k) {
  const auto m = static_cast<std::uint32_t>(mn), kk = static_cast<std::uint32_t>(k);
  const auto width = static_cast<std::uint32_t>(o.swizzle);
  if (!o.mn_major) {
    if (o.swizzle == 0) return m % 8 * 16 + m / 8 * o.sbo + kk % 8 * 2 + kk / 8 * o.lbo;
    return m % 8 * width + m / 8 * o.sbo + 2 * kk;
  }
  if (o.swizzle == 0) return m % 8 * 2 + m / 8 * o.sbo + kk % 8 * 16 + kk / 8 * o.lbo;
  return m % (width / 2) * 2 + m / (width / 2) * o.lbo + kk % 8 * width + kk / 8 * o.sbo;
}

// Bytes from the operand's start to the end of its last element.
inline std::uint32_t operand_extent(const OperandLayout& o, int rows) {
  std::uint32_t end = 0;
  for (int mn = 0; mn < rows; ++mn) {
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t last = operand_offset(o, mn, k) + 2;
      end = last > end ? last : end;
    }
  }
  return end;
}

// Where a wgmma form's operands lie in its shared-memory image: A at 0 (unused
// in the register form), B at the next 1024-byte boundary, plus 128·line for
// the base-offset probe; the image ends on a 1024-byte boundary.
struct WgmmaPlacement {
  OperandLayout a, b;
  std::uint32_t image_bytes = 0;
};
inline WgmmaPlacement wgmma_placement(const ProbeForm& form) {
  const auto round_up = [](std::uint32_t bytes) { return (bytes + 1023) / 1024 * 1024; };
  WgmmaPlacement p;
  p.a = dense_operand(form.a_mn_major, form.swizzle, 0, 64);
  const std::uint32_t b_start = round_up(operand_extent(p.a, 64)) + 128 * static_cast<std::uint32_t>(form.line);
  p.b = dense_operand(form.b_mn_major, form.swizzle, b_start, form.n);
  p.image_bytes = round_up(b_start + operand_extent(p.b, form.n));
  return p;
}

// The input of a wgmma form: the image, then each thread's four A-fragment
// registers (the register form), then each thread's N/2 accumulators.
inline std::size_t wgmma_fragment_word(const ProbeForm& form) { return wgmma_placement(form).image_bytes / 4; }
inline std::size_t wgmma_accumulator_word(const ProbeForm& form) { return wgmma_fragment_word(form) + 128 * 4; }

// How many 32-bit words a form reads and writes.
inline std::size_t input_words(const ProbeForm& form) {
  switch (form.probe) {
    case Probe::mma:
      return 32 * 10;  // per lane: A (4), B (2), C (4)
    case Probe::ldmatrix:
    case Probe::shared_vectors:
      return 4 * 8 * 4;  // four 8x8 matrices of 16-bit elements
    case Probe::cp_async:
      return 32 * 4;  // a 16-byte chunk per lane
    case Probe::shuffle:
      return 32 * 2;
    case Probe::ex2:
      return kEx2Count;
    case Probe::to_half:
    case Probe::to_bfloat16:
      return kConversionCount;
    case Probe::from_half:
    case Probe::from_bfloat16:
      return kWidenCount / 2;  // two 16-bit values per word
    case Probe::red_add_pair:
      return 2 * kRedThreads;
    case Probe::red_add_vector:
      return 4 * kRedThreads;
    case Probe::bulk_reduce:
      return kBulkReduceWords;
    case Probe::elect:
      return 1;
    case Probe::stmatrix:
      return 32 * 4;
    case Probe::wgmma:
    case Probe::base_offset:
      return wgmma_accumulator_word(form) + 128 * static_cast<std::size_t>(form.n / 2);
    case Probe::tma_load:
    case Probe::mbarrier_tx:
      return kTensorWords;
    case Probe::tma_store:
      return static_cast<std::size_t>(tma_box_words(form.swizzle));
  }
  return 0;
}
inline std::size_t output_words(const ProbeForm& form) {
  switch (form.probe) {
    case Probe::mma:
      return 32 * 4;
    case Probe::ldmatrix:
    case Probe::stmatrix:
      return 32 * 4;
    case Probe::shared_vectors:
      return 32 * 6;  // per lane: one v4 and one v2 load
    case Probe::cp_async:
      return 32 * 8;  // per lane: the copied chunk and the zero-filled one
    case Probe::shuffle:
      return 32 * 10;  // per lane: xor 1, 2, 4, 8, 16 on b32, then on f32
    case Probe::ex2:
      return kEx2Count;
    case Probe::to_half:
    case Probe::to_bfloat16:
      return kConversionCount / 2 + kConversionCount / 2;  // from_float, two per word; pack_pair of each pair
    case Probe::from_half:
    case Probe::from_bfloat16:
      return kWidenCount;
    case Probe::red_add_pair:
      return 2 * kRedPairs;
    case Probe::red_add_vector:
      return 4 * kRedQuads + kRedQuads;
    case Probe::bulk_reduce:
      return kBulkReduceWords;
    case Probe::elect:
      return 32;
    case Probe::wgmma:
    case Probe::base_offset:
      return 128 * static_cast<std::size_t>(form.n / 2);
    case Probe::tma_load:
      return static_cast<std::size_t>(tma_box_words(form.swizzle));
    case Probe::tma_store:
      return kTensorWords;
    case Probe::mbarrier_tx:
      return kTxFlags + 3 * static_cast<std::size_t>(tma_box_words(128));
  }
  return 0;
}

}  // namespace attnbench::differential

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Whether this build's device runs the probes (the GPU: compute capability 9.0,
// sm_90a code); `why` says why not.
bool differential_probes_run_here(std::string& why);

// Runs `form` on this build's device: `input` (input_words) and `output`
// (output_words, holding the output's initial contents) are device memory.
// Returns when the kernel is done; throws DeviceError on a device error (the
// simulator: on a sanitizer finding).
void run_differential_probe(const differential::ProbeForm& form, const std::uint32_t* input, std::uint32_t* output);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench

#if !defined(ATTNBENCH_CUDASIM)
// The simulator's build of the same two functions, for host code that runs
// both builds: its namespace (kernels/cuda/cuda_build.hpp) is attnbench::simulated.
namespace attnbench::simulated {
bool differential_probes_run_here(std::string& why);
void run_differential_probe(const differential::ProbeForm& form, const std::uint32_t* input, std::uint32_t* output);
}  // namespace attnbench::simulated
#endif
