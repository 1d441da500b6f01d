// The per-fragment steps of the online softmax and of dropout that the fused
// forwards share (kernels/cuda/flash_forward.cu on mma.sync,
// kernels/cuda/flash_sm90_forward.cu on wgmma): both hold scores in the
// mma.m16n8 C layout, where a row lives in the four lanes of a quad (lanes
// with the same lane / 4), each lane holding keys 2·(lane % 4) and + 1 of
// every 8-key group for rows g and g + 8 (kernels/cuda/flash_geometry.hpp).
// A warp's part of wgmma's m64nNk16 accumulator is that layout repeated N / 8
// times, so the same steps apply to it group by group. The backwards
// (kernels/cuda/flash_backward.cu, flash_sm90_backward.cu) hold the transposed
// tile Sᵀ, keys as rows, and regenerate the forwards' dropout mask on it with
// transposed_dropout_keep_bits.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/common/dropout.hpp"
#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_geometry.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

inline constexpr unsigned kQuadFullWarp = 0xffffffffu;

// The visible keys [begin[h], end[h]) of a C fragment's two rows, row0 and
// row0 + 8 (h = 0, 1), as int: sequence lengths are below 2^24.
__device__ __forceinline__ void fragment_visible_keys(const MaskSpec& mask, int row0, int len_q, int len_k,
                                                      int (&begin)[2], int (&end)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const KeyRange keys = visible_keys(mask, row0 + 8 * half, len_q, len_k);
    begin[half] = static_cast<int>(keys.begin);
    end[half] = static_cast<int>(keys.end);
  }
}

// The transposed form for the backwards' Sᵀ fragments: the queries [begin[h],
// end[h]) that see key0 and key0 + 8 (h = 0, 1), as int.
__device__ __forceinline__ void fragment_visible_queries(const MaskSpec& mask, int key0, int len_q, int len_k,
                                                         int (&begin)[2], int (&end)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const KeyRange queries = visible_queries(mask, key0 + 8 * half, len_q, len_k);
    begin[half] = static_cast<int>(queries.begin);
    end[half] = static_cast<int>(queries.end);
  }
}

// Scales a tile's scores into base-2 units (τ·log2(e)) and, unless the tile is
// `whole` (every key visible to every row the caller holds), sets the scores of
// invisible keys to -inf. The tile is kGroups 8-key C fragments starting at
// first_key; score(n, e) is element e of fragment n (key first_key +
// lane_column + 8n + e % 2, row half e / 2), and [visible_begin[h],
// visible_end[h]) the visible keys of row half h. The interval is moved into
// the fragment's units once per tile and row.
template <int kGroups, typename Score>
__device__ __forceinline__ void scale_and_mask_scores(Score&& score, bool whole, const int (&visible_begin)[2],
                                                      const int (&visible_end)[2], int first_key, int lane_column,
                                                      float scale_log2) {
  if (whole) {
#pragma unroll
    for (int n = 0; n < kGroups; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) score(n, e) *= scale_log2;
    }
    return;
  }
  int tile_begin[2], tile_end[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    tile_begin[half] = visible_begin[half] - first_key - lane_column;
    tile_end[half] = visible_end[half] - first_key - lane_column;
  }
#pragma unroll
  for (int n = 0; n < kGroups; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = 8 * n + e % 2;
      const bool visible = tile_begin[e / 2] <= key && key < tile_end[e / 2];
      score(n, e) = visible ? score(n, e) * scale_log2 : -std::numeric_limits<float>::infinity();
    }
  }
}

// The maximum and the sum of a value over the lanes of the quad.
__device__ __forceinline__ float quad_max(float value) {
  value = fmaxf(value, __shfl_xor_sync(kQuadFullWarp, value, 1));
  return fmaxf(value, __shfl_xor_sync(kQuadFullWarp, value, 2));
}
__device__ __forceinline__ float quad_sum(float value) {
  value += __shfl_xor_sync(kQuadFullWarp, value, 1);
  return value + __shfl_xor_sync(kQuadFullWarp, value, 2);
}

// Which elements of one 8-key C fragment dropout keeps (elements 0, 1: row
// row0, keys first_key + 2t, + 1; elements 2, 3: row row0 + 8, the same keys),
// per the contract: bit e set keeps element e; see dropout_word_source(). Every
// lane of the warp calls it.
__device__ __forceinline__ unsigned dropout_keep_bits(const DropoutRng& rng, std::uint32_t batch, std::uint32_t head,
                                                      int row0, int first_key, int lane) {
  const int own_half = dropout_draw_row_half(lane);
  const auto group = static_cast<std::uint32_t>(first_key / 4 + (lane % 4) / 2);
  const PhiloxBlock draw = dropout_words(rng, batch, head, static_cast<std::uint32_t>(row0 + 8 * own_half), group);
  const int sent = dropout_sent_word(lane);
  const std::uint32_t received0 = __shfl_xor_sync(kQuadFullWarp, philox_word(draw, sent), 1);
  const std::uint32_t received1 = __shfl_xor_sync(kQuadFullWarp, philox_word(draw, sent + 1), 1);
  unsigned keep = 0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const DropoutWordSource source = dropout_word_source(lane, half);
    const std::uint32_t first = source.own ? philox_word(draw, source.word) : received0;
    const std::uint32_t second = source.own ? philox_word(draw, source.word + 1) : received1;
    keep |= (dropout_word_keeps(rng, first) ? 1u : 0u) << (2 * half);
    keep |= (dropout_word_keeps(rng, second) ? 1u : 0u) << (2 * half + 1);
  }
  return keep;
}

// Zeroes the elements of the fragment p (the layout above) that dropout drops.
__device__ __forceinline__ void apply_dropout(float (&p)[4], const DropoutRng& rng, std::uint32_t batch,
                                              std::uint32_t head, int row0, int first_key, int lane) {
  const unsigned keep = dropout_keep_bits(rng, batch, head, row0, first_key, lane);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    if (!((keep >> e) & 1u)) p[e] = 0.0f;
  }
}

// The same for a key-major (transposed) tile, the backwards' Sᵀ: 16 keys of a
// warp from warp_key as rows, kQueryFragments 8-query fragments from
// first_row as columns; bit 4n + e is set when C element e of fragment n
// survives. One Philox call per lane and fragment; the four lanes sharing t
// and g / 4 trade words (backward_dropout_call,
// kernels/cuda/flash_backward_geometry.hpp).
template <int kQueryFragments>
__device__ __forceinline__ std::uint32_t transposed_dropout_keep_bits(const DropoutRng& rng, std::uint32_t batch,
                                                           std::uint32_t head, int first_row, int warp_key, int lane) {
  const DropoutCall call = backward_dropout_call(lane);
  const auto key_group = static_cast<std::uint32_t>((warp_key + call.key) / 4);
  std::uint32_t bits = 0;
#pragma unroll
  for (int n = 0; n < kQueryFragments; ++n) {
    const PhiloxBlock draw =
        dropout_words(rng, batch, head, static_cast<std::uint32_t>(first_row + 8 * n + call.query), key_group);
#pragma unroll
    for (int round = 0; round < 4; ++round) {
      const std::uint32_t sent = philox_word(draw, backward_dropout_sent_word(lane, round));
      const std::uint32_t word = round == 0 ? sent : __shfl_xor_sync(kQuadFullWarp, sent, 4 * round);
      bits |= static_cast<std::uint32_t>(dropout_word_keeps(rng, word))
              << (4 * n + backward_dropout_element(lane, round));
    }
  }
  return bits;
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
