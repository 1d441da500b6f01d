// The backward pass of cuda.flash in the FlashAttention-2 structure: dQ, dK and
// dV of O = dropout(softmax(τ·Q·Kᵀ + mask))·V, recomputing P from Q, K and the
// forward's LSE and regenerating the dropout mask, with nothing N×N in memory.
//
// Three kernels on the call's stream (index maps and layouts:
// kernels/cuda/flash_backward_geometry.hpp):
// 1. prepare: per query row, D = rowsum(dO ∘ O) in fp32 and LSE·log2(e) (0 for
//    a row without keys, whose LSE is -inf) into the workspace, and zeros into the
//    row's fp32 dQ accumulator. Rows are padded to whole query tiles there.
// 2. the main kernel: one CTA per (key tile of block_n = 128 keys, kv head,
//    batch); 8 warps, warp w owning keys 16w .. 16w + 15. The K and V tiles are
//    copied to shared memory once. The CTA walks the query heads of its kv head's
//    group (GQA: dK and dV sum over them) and, for each, the query tiles of
//    block_m = 64 rows that can see its keys; Q, dO, LSE·log2(e) and D of the next
//    tile come in by cp.async while the warps compute on the current one. Per
//    tile, with mma.sync m16n8k16 (fp16 or bf16 in, fp32 accumulate) for every
//    product, each warp computes its keys' rows of the transposed products, on
//    slices of the tile's queries (all 64 at d 64; 32 at a time at d 128, where
//    dK and dV take 128 registers):
//      Sᵀ = K_w·Qᵀ, Pᵀ = exp2(Sᵀ·τ·log2(e) - LSE·log2(e)), 0 where masked;
//      dV_w += (Pᵀ ∘ Zᵀ)·dO    Pᵀ straight from registers as the A operand;
//      dPᵀ = V_w·dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ ∘ Zᵀ/(1-p) - D), as in kernels/cpu_flash.cpp;
//      dK_w += dSᵀ·Q           dSᵀ from registers, and into shared memory.
//    After a barrier the CTA computes dS·K for the tile's 64 rows (each warp 16
//    rows and half the dims, dS loaded back with ldmatrix.trans) and adds it to
//    the fp32 dQ accumulator with atomics (pairs with red.global.add.v2.f32 on
//    sm_90). dQ by atomics, not by a second kernel parallel over query tiles,
//    because that kernel would recompute S, P and dP once more (two more of the
//    five products); the price is block_m·d fp32 atomic adds per tile pair, and a
//    summation order that varies from run to run. At the end dK = τ·acc and
//    dV = acc/(1-p) go out in the input dtype, through shared memory so that
//    the stores are 16-byte chunks.
// 3. convert: dQ = τ·accumulator in the input dtype.
//
// Masks: a CTA visits only the query tiles that meet visible_query_bound of its
// keys; a warp skips the tiles its 16 keys are invisible to (its dSᵀ is then
// zero); tiles fully visible to the warp skip the per-element predicates, the
// rest compare each query with the visible interval of the lane's two keys.
// Padded query rows (i >= Lq) and keys (j >= Lk) are masked everywhere, so their
// P and dS are 0 and their gradients zeros; rows and keys past the tensors are
// zero-filled on load and never stored. Dropout follows the contract (DESIGN §2):
// element (b, h, i, j) uses the same Philox word as in the forward; in the
// key-major fragment one call per 4 keys is shared by four lanes
// (backward_dropout_call).
//
// Assumes: head_dim 64 or 128; tensors 16-byte aligned with row strides that are
// multiples of 8 elements (the harness allocates them so); the forward's O and
// LSE in place.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/backward_rows.hpp"
#include "kernels/cuda/element_conversion.hpp"
#include "kernels/cuda/flash_backward.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/fragment_softmax.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/tile_copy.hpp"
#include "kernels/cuda/warp_primitives.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

constexpr float kLog2e = 1.4426950408889634f;

// The inverse of copy_tile_async: rows [first_row, first_row + kRows) of the
// swizzled shared tile at `tile_address` into the tensor slice, rows at or past
// `rows` skipped; thread x stores the chunks copy_tile_async would have loaded.
template <int kRows, int kHeadDim, int kThreads, typename Element>
__device__ __forceinline__ void store_tile(std::uint32_t tile_address, Element* slice, std::int64_t row_stride,
                                           int first_row, int rows) {
  constexpr int kChunksPerRow = kHeadDim / 8;
  constexpr int kRowsPerRound = kThreads / kChunksPerRow;
  constexpr int kRounds = kRows / kRowsPerRound;
  static_assert(kRowsPerRound % 8 == 0 && kRounds * kRowsPerRound == kRows, "whole rounds of 8-row groups");
  const int row = static_cast<int>(threadIdx.x) / kChunksPerRow;
  const int column = static_cast<int>(threadIdx.x) % kChunksPerRow * 8;
  const std::uint32_t source = tile_address + 2 * swizzled_offset(row, column, kHeadDim);
#pragma unroll
  for (int round = 0; round < kRounds; ++round) {
    if (first_row + row + round * kRowsPerRound < rows) {
      const uint4 chunk = load_shared_16(source + round * kRowsPerRound * kHeadDim * 2);
      *reinterpret_cast<uint4*>(slice + (first_row + row + round * kRowsPerRound) * row_stride + column) = chunk;
    }
  }
}

// The warp's 16 rows of a key-major product over the head dim: result = A·Bᵀ
// with A the warp's 16 rows of a key tile (K or V; lane address `a_lane`) and B
// kSliceM rows of a query tile (Q or dO; lane address `b_lane`), both swizzled
// [row][dim] tiles. Gives Sᵀ = K_w·Qᵀ and dPᵀ = V_w·dOᵀ as C fragments, one per 8 queries.
template <typename Element, int kHeadDim, int kSliceM>
__device__ __forceinline__ void key_major_product(float (&result)[kSliceM / 8][4], std::uint32_t a_lane,
                                                  std::uint32_t b_lane) {
  constexpr int kRowBytes = kHeadDim * static_cast<int>(sizeof(Element));
#pragma unroll
  for (int n = 0; n < kSliceM / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) result[n][e] = 0.0f;
  }
#pragma unroll
  for (int dim_step = 0; dim_step < kHeadDim / 16; ++dim_step) {
    std::uint32_t a_fragment[4];
    load_matrix_x4(a_fragment, swizzled_step(a_lane, 2 * dim_step, 0, kRowBytes));
#pragma unroll
    for (int pair = 0; pair < kSliceM / 16; ++pair) {
      std::uint32_t b_fragments[4];
      load_matrix_x4(b_fragments, swizzled_step(b_lane, 2 * dim_step, 16 * pair, kRowBytes));
      mma_16x8x16<Element>(result[2 * pair], a_fragment, b_fragments[0], b_fragments[1]);
      mma_16x8x16<Element>(result[2 * pair + 1], a_fragment, b_fragments[2], b_fragments[3]);
    }
  }
}

// ---- 1. prepare ----------------------------------------------------------------

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kFlashBackwardRowThreads)
    flash_backward_prepare_kernel(AttentionParams params, const Element* __restrict__ out,
                                  const Element* __restrict__ d_out, const float* __restrict__ lse,
                                  float* __restrict__ lse_log2, float* __restrict__ delta,
                                  float* __restrict__ dq_accumulator, int padded_rows) {
  const BackwardRowLane lane = backward_row_lane();
  const auto [row, part, head, batch] = lane;
  const std::int64_t index = (static_cast<std::int64_t>(batch) * params.heads + head) * padded_rows + row;
  const bool inside = row < params.seqlen_q;
  const float sum = output_gradient_dot<Element, kHeadDim>(params, out, d_out, lane);
  if (part == 0) {
    delta[index] = sum;
    const float row_lse =
        inside ? lse[(static_cast<std::int64_t>(batch) * params.heads + head) * params.seqlen_q + row] : 0.0f;
    lse_log2[index] = exp_reference(row_lse) * kLog2e;
  }
  float4* const accumulator_row = reinterpret_cast<float4*>(dq_accumulator + index * kHeadDim);
#pragma unroll
  for (int pass = 0; pass < kHeadDim / (4 * kFlashBackwardRowLanes); ++pass) {
    accumulator_row[pass * kFlashBackwardRowLanes + part] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

// ---- 2. the main kernel ------------------------------------------------------------

template <typename Element, int kHeadDim, bool kDropout>
__global__ void __launch_bounds__(BackwardTraits<kHeadDim>::kThreads, 1)
    flash_backward_kernel(AttentionParams params, const Element* __restrict__ q, const Element* __restrict__ k,
                          const Element* __restrict__ v, const Element* __restrict__ d_out, Element* __restrict__ d_k,
                          Element* __restrict__ d_v, const float* __restrict__ lse_log2,
                          const float* __restrict__ delta, float* __restrict__ dq_accumulator, int padded_rows,
                          float scale_log2) {
  using Traits = BackwardTraits<kHeadDim>;
  constexpr int kBlockM = Traits::kBlockM;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kThreads = Traits::kThreads;
  constexpr int kSliceM = Traits::kSliceM;
  constexpr int kRowBytes = kHeadDim * static_cast<int>(sizeof(Element));
  constexpr int kDsRowBytes = kBlockM * static_cast<int>(sizeof(Element));
  constexpr FlashBackwardSharedLayout kLayout = flash_backward_shared_layout(kHeadDim, sizeof(Element));
  const std::uint32_t shared_base = shared_address(dynamic_shared_memory());
  const std::uint32_t k_tile = shared_base + kLayout.k_tile;
  const std::uint32_t v_tile = shared_base + kLayout.v_tile;
  const std::uint32_t ds_tile = shared_base + kLayout.ds_tile;

  const auto key_tile = static_cast<int>(blockIdx.x);
  const auto kv_head = static_cast<int>(blockIdx.y);
  const auto batch = static_cast<int>(blockIdx.z);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const auto seqlen_q = static_cast<int>(params.seqlen_q);
  const auto seqlen_k = static_cast<int>(params.seqlen_k);
  const auto len_q = static_cast<int>(params.length_q(batch));
  const auto len_k = static_cast<int>(params.length_k(batch));

  const int cta_key = key_tile * kBlockN;
  const int warp_key = cta_key + Traits::kWarpKeys * warp;
  const int key0 = warp_key + lane / 4;  // this lane's keys: key0 and key0 + 8
  const QueryTileRange cta_tiles =
      flash_backward_query_tiles(params.mask, cta_key, cta_key + kBlockN, len_q, len_k, kBlockM);
  const QueryTileRange warp_tiles =
      flash_backward_query_tiles(params.mask, warp_key, warp_key + Traits::kWarpKeys, len_q, len_k, kBlockM);
  // The rows that see all of the warp's keys, and the visible queries of the
  // lane's two keys, as int (sequence lengths are below 2^24).
  const KeyRange full_rows = fully_visible_queries(params.mask, warp_key, warp_key + Traits::kWarpKeys, len_q, len_k);
  const auto full_begin = static_cast<int>(full_rows.begin);
  const auto full_end = static_cast<int>(full_rows.end);
  int visible_begin[2], visible_end[2];
  fragment_visible_queries(params.mask, key0, len_q, len_k, visible_begin, visible_end);
  const int lane_column = mma_c_position(lane, 0).column;  // the lane's first query in an 8-query fragment

  const int group = static_cast<int>(params.heads) / static_cast<int>(params.kv_heads);
  const int first_head = kv_head * group;
  const int tiles_per_head = cta_tiles.count();
  const int steps = group * tiles_per_head;  // (head, query tile) pairs, head-major
  const std::int64_t q_row_stride = params.q_strides.seq;
  const std::int64_t kv_row_stride = params.kv_strides.seq;
  const Element* const k_slice = k + params.kv_offset(batch, 0, kv_head);
  const Element* const v_slice = v + params.kv_offset(batch, 0, kv_head);

  // Q, dO, LSE·log2(e) and D of step `step` into stage `stage`.
  const auto load_step = [&](int step, int stage) {
    const int head = first_head + step / tiles_per_head;
    const int first_row = (cta_tiles.first + step % tiles_per_head) * kBlockM;
    const std::int64_t q_head_offset = params.q_offset(batch, 0, head);
    copy_tile_async<kBlockM, kHeadDim, kThreads>(shared_base + kLayout.q_tiles + stage * kLayout.query_tile_bytes,
                                                 q + q_head_offset, q_row_stride, first_row, seqlen_q);
    copy_tile_async<kBlockM, kHeadDim, kThreads>(shared_base + kLayout.d_out_tiles + stage * kLayout.query_tile_bytes,
                                                 d_out + q_head_offset, q_row_stride, first_row, seqlen_q);
    constexpr int kChunksPerVector = kBlockM / 4;
    if (static_cast<int>(threadIdx.x) < 2 * kChunksPerVector) {
      const bool is_delta = static_cast<int>(threadIdx.x) >= kChunksPerVector;
      const int chunk = static_cast<int>(threadIdx.x) % kChunksPerVector;
      const std::int64_t row = (static_cast<std::int64_t>(batch) * params.heads + head) * padded_rows + first_row;
      copy_async_16(shared_base + (is_delta ? kLayout.delta_rows : kLayout.lse_rows) +
                        stage * kLayout.row_vector_bytes + 16 * chunk,
                    (is_delta ? delta : lse_log2) + row + 4 * chunk, true);
    }
  };

  float dk_accumulator[Traits::kGradientFragments][4];
  float dv_accumulator[Traits::kGradientFragments][4];
#pragma unroll
  for (int n = 0; n < Traits::kGradientFragments; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      dk_accumulator[n][e] = 0.0f;
      dv_accumulator[n][e] = 0.0f;
    }
  }

  if (steps > 0) {
    copy_tile_async<kBlockN, kHeadDim, kThreads>(k_tile, k_slice, kv_row_stride, cta_key, seqlen_k);
    copy_tile_async<kBlockN, kHeadDim, kThreads>(v_tile, v_slice, kv_row_stride, cta_key, seqlen_k);
    load_step(0, 0);
  }
  copy_async_commit();

  const std::uint32_t key_a_lane = key_rows_a_lane_bytes(lane, warp, kRowBytes);
  const std::uint32_t query_b_lane = query_rows_b_lane_bytes(lane, kRowBytes);
  const std::uint32_t query_k_lane = rows_as_k_b_lane_bytes(lane, kRowBytes);
  const std::uint32_t ds_store_lane = ds_tile + c_fragment_store_lane_bytes(lane, Traits::kWarpKeys * warp, kDsRowBytes);
  const std::uint32_t ds_a_lane = ds_tile + ds_a_lane_bytes(lane, warp, kHeadDim, kDsRowBytes);
  const std::uint32_t dq_key_lane = k_tile + dq_key_b_lane_bytes(lane, warp, kHeadDim, kRowBytes);
  const DqWarpTile dq_tile = dq_warp_tile(warp, kHeadDim);

  for (int step = 0; step < steps; ++step) {
    const int stage = step % kFlashBackwardStages;
    if (step + 1 < steps) load_step(step + 1, (stage + 1) % kFlashBackwardStages);
    copy_async_commit();
    copy_async_wait<1>();  // everything but the step just requested has landed
    __syncthreads();

    const int head = first_head + step / tiles_per_head;
    const int query_tile = cta_tiles.first + step % tiles_per_head;
    const int first_row = query_tile * kBlockM;
    const std::uint32_t q_stage = shared_base + kLayout.q_tiles + stage * kLayout.query_tile_bytes;
    const std::uint32_t d_out_stage = shared_base + kLayout.d_out_tiles + stage * kLayout.query_tile_bytes;
    const std::uint32_t lse_stage = shared_base + kLayout.lse_rows + stage * kLayout.row_vector_bytes;
    const std::uint32_t delta_stage = shared_base + kLayout.delta_rows + stage * kLayout.row_vector_bytes;

    if (warp_tiles.contains(query_tile)) {
      const bool fully_visible = full_begin <= first_row && first_row + kBlockM <= full_end;
      // The tile's queries in slices of kSliceM, which bounds the registers of Sᵀ and dPᵀ.
#pragma unroll 1
      for (int slice_row = 0; slice_row < kBlockM; slice_row += kSliceM) {
        const std::uint32_t q_rows = q_stage + slice_row * kRowBytes;
        const std::uint32_t d_out_rows = d_out_stage + slice_row * kRowBytes;
        const std::uint32_t lse_rows = lse_stage + 4 * (slice_row + lane_column);
        const std::uint32_t delta_rows = delta_stage + 4 * (slice_row + lane_column);

        // Sᵀ = K_w·Qᵀ: the warp's 16 keys by the slice's queries.
        float scores[Traits::kSliceFragments][4];
        key_major_product<Element, kHeadDim, kSliceM>(scores, k_tile + key_a_lane, q_rows + query_b_lane);

        // Pᵀ = exp2(Sᵀ·τ·log2(e) - LSE·log2(e)); element (n, e) is key key0 + 8·(e / 2)
        // and query first_row + slice_row + lane_column + 8n + e % 2.
        if (fully_visible) {
#pragma unroll
          for (int n = 0; n < Traits::kSliceFragments; ++n) {
            const float2 row_lse = load_shared_float2(lse_rows + 32 * n);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              scores[n][e] = FastExp2::exp(scores[n][e] * scale_log2 - (e % 2 == 0 ? row_lse.x : row_lse.y));
            }
          }
        } else {
          int slice_begin[2], slice_end[2];
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            slice_begin[half] = visible_begin[half] - first_row - slice_row - lane_column;
            slice_end[half] = visible_end[half] - first_row - slice_row - lane_column;
          }
#pragma unroll
          for (int n = 0; n < Traits::kSliceFragments; ++n) {
            const float2 row_lse = load_shared_float2(lse_rows + 32 * n);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int query = 8 * n + e % 2;
              const bool visible = slice_begin[e / 2] <= query && query < slice_end[e / 2];
              const float p = FastExp2::exp(scores[n][e] * scale_log2 - (e % 2 == 0 ? row_lse.x : row_lse.y));
              scores[n][e] = visible ? p : 0.0f;
            }
          }
        }

        std::uint32_t keep_bits = 0xffffffffu;
        if constexpr (kDropout) {
          keep_bits = transposed_dropout_keep_bits<Traits::kSliceFragments>(params.dropout, static_cast<std::uint32_t>(batch),
                                                                 static_cast<std::uint32_t>(head),
                                                                 first_row + slice_row, warp_key, lane);
        }
        const auto kept = [&](int n, int e) { return (keep_bits >> (4 * n + e)) & 1u ? scores[n][e] : 0.0f; };

        // dV_w += (Pᵀ ∘ Zᵀ)·dO, Pᵀ from registers (two C fragments make one A fragment).
#pragma unroll
        for (int query_step = 0; query_step < kSliceM / 16; ++query_step) {
          const int n = 2 * query_step;
          const std::uint32_t p_fragment[4] = {
              pack_pair<Element>(kept(n, 0), kept(n, 1)), pack_pair<Element>(kept(n, 2), kept(n, 3)),
              pack_pair<Element>(kept(n + 1, 0), kept(n + 1, 1)), pack_pair<Element>(kept(n + 1, 2), kept(n + 1, 3))};
#pragma unroll
          for (int pair = 0; pair < Traits::kDimSteps; ++pair) {
            std::uint32_t d_out_fragments[4];
            load_matrix_x4_transposed(d_out_fragments,
                                      swizzled_step(d_out_rows + query_k_lane, 2 * pair, 16 * query_step, kRowBytes));
            mma_16x8x16<Element>(dv_accumulator[2 * pair], p_fragment, d_out_fragments[0], d_out_fragments[1]);
            mma_16x8x16<Element>(dv_accumulator[2 * pair + 1], p_fragment, d_out_fragments[2], d_out_fragments[3]);
          }
        }

        // dPᵀ = V_w·dOᵀ.
        float d_scores[Traits::kSliceFragments][4];
        key_major_product<Element, kHeadDim, kSliceM>(d_scores, v_tile + key_a_lane, d_out_rows + query_b_lane);

        // dSᵀ = Pᵀ ∘ (dPᵀ ∘ Zᵀ/(1-p) - D), in place of dPᵀ.
        const float keep_scale = kDropout ? params.dropout.keep_scale : 1.0f;
#pragma unroll
        for (int n = 0; n < Traits::kSliceFragments; ++n) {
          const float2 row_delta = load_shared_float2(delta_rows + 32 * n);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float d_p = (keep_bits >> (4 * n + e)) & 1u ? d_scores[n][e] * keep_scale : 0.0f;
            d_scores[n][e] = scores[n][e] * (d_p - (e % 2 == 0 ? row_delta.x : row_delta.y));
          }
        }

        // dK_w += dSᵀ·Q with dSᵀ from registers; dSᵀ also into the shared tile for dQ.
#pragma unroll
        for (int query_step = 0; query_step < kSliceM / 16; ++query_step) {
          const int n = 2 * query_step;
          const int fragment = slice_row / 8 + n;  // the 8-query fragment within the tile
          const std::uint32_t ds_fragment[4] = {pack_pair<Element>(d_scores[n][0], d_scores[n][1]),
                                                pack_pair<Element>(d_scores[n][2], d_scores[n][3]),
                                                pack_pair<Element>(d_scores[n + 1][0], d_scores[n + 1][1]),
                                                pack_pair<Element>(d_scores[n + 1][2], d_scores[n + 1][3])};
          store_shared_u32(swizzled_step(ds_store_lane, fragment, 0, kDsRowBytes), ds_fragment[0]);
          store_shared_u32(swizzled_step(ds_store_lane, fragment, 8, kDsRowBytes), ds_fragment[1]);
          store_shared_u32(swizzled_step(ds_store_lane, fragment + 1, 0, kDsRowBytes), ds_fragment[2]);
          store_shared_u32(swizzled_step(ds_store_lane, fragment + 1, 8, kDsRowBytes), ds_fragment[3]);
#pragma unroll
          for (int pair = 0; pair < Traits::kDimSteps; ++pair) {
            std::uint32_t q_fragments[4];
            load_matrix_x4_transposed(q_fragments,
                                      swizzled_step(q_rows + query_k_lane, 2 * pair, 16 * query_step, kRowBytes));
            mma_16x8x16<Element>(dk_accumulator[2 * pair], ds_fragment, q_fragments[0], q_fragments[1]);
            mma_16x8x16<Element>(dk_accumulator[2 * pair + 1], ds_fragment, q_fragments[2], q_fragments[3]);
          }
        }
      }
    } else {
      // The warp's keys are invisible to the whole tile: its dSᵀ rows are zero.
#pragma unroll
      for (int n = 0; n < Traits::kQueryFragments; ++n) {
        store_shared_u32(swizzled_step(ds_store_lane, n, 0, kDsRowBytes), 0u);
        store_shared_u32(swizzled_step(ds_store_lane, n, 8, kDsRowBytes), 0u);
      }
    }
    __syncthreads();  // the dSᵀ tile is complete; every warp is done with this stage's Q and dO

    // dQ += dS·K for the warp's 16 rows and dims, added into the fp32 accumulator.
    float dq[Traits::kDqFragments][4];
#pragma unroll
    for (int n = 0; n < Traits::kDqFragments; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) dq[n][e] = 0.0f;
    }
#pragma unroll
    for (int key_step = 0; key_step < Traits::kKeySteps; ++key_step) {
      std::uint32_t ds_fragment[4];
      load_matrix_x4_transposed(ds_fragment, swizzled_step(ds_a_lane, 0, 16 * key_step, kDsRowBytes));
#pragma unroll
      for (int pair = 0; pair < Traits::kDqDims / 16; ++pair) {
        std::uint32_t k_fragments[4];
        load_matrix_x4_transposed(k_fragments, swizzled_step(dq_key_lane, 2 * pair, 16 * key_step, kRowBytes));
        mma_16x8x16<Element>(dq[2 * pair], ds_fragment, k_fragments[0], k_fragments[1]);
        mma_16x8x16<Element>(dq[2 * pair + 1], ds_fragment, k_fragments[2], k_fragments[3]);
      }
    }
    float* const dq_rows = dq_accumulator +
                           ((static_cast<std::int64_t>(batch) * params.heads + head) * padded_rows + first_row +
                            dq_tile.first_row + lane / 4) *
                               kHeadDim +
                           dq_tile.first_dim + lane_column;
#pragma unroll
    for (int n = 0; n < Traits::kDqFragments; ++n) {
      add_pair_to_global(dq_rows + 8 * n, dq[n][0], dq[n][1]);
      add_pair_to_global(dq_rows + 8 * kHeadDim + 8 * n, dq[n][2], dq[n][3]);
    }
  }
  copy_async_wait<0>();

  // Epilogue: dK = τ·acc and dV = acc/(1-p) in the input dtype, staged through the
  // shared memory of the Q and dO stages (swizzled [key][dim] tiles) so that the
  // stores to global memory are whole 16-byte chunks; keys past seqlen_k are not stored.
  __syncthreads();  // every warp is done with the stages
  const std::uint32_t dk_tile = shared_base + kLayout.q_tiles;
  const std::uint32_t dv_tile = shared_base + kLayout.d_out_tiles;
  const std::uint32_t gradient_lane = c_fragment_store_lane_bytes(lane, Traits::kWarpKeys * warp, kRowBytes);
  const float dk_scale = params.scale;
  const float dv_scale = kDropout ? params.dropout.keep_scale : 1.0f;
#pragma unroll
  for (int n = 0; n < Traits::kGradientFragments; ++n) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const std::uint32_t offset = swizzled_step(gradient_lane, n, 8 * half, kRowBytes);
      store_shared_u32(dk_tile + offset, pack_pair<Element>(dk_accumulator[n][2 * half] * dk_scale,
                                                            dk_accumulator[n][2 * half + 1] * dk_scale));
      store_shared_u32(dv_tile + offset, pack_pair<Element>(dv_accumulator[n][2 * half] * dv_scale,
                                                            dv_accumulator[n][2 * half + 1] * dv_scale));
    }
  }
  __syncthreads();
  store_tile<kBlockN, kHeadDim, kThreads>(dk_tile, d_k + params.kv_offset(batch, 0, kv_head), kv_row_stride, cta_key,
                                          seqlen_k);
  store_tile<kBlockN, kHeadDim, kThreads>(dv_tile, d_v + params.kv_offset(batch, 0, kv_head), kv_row_stride, cta_key,
                                          seqlen_k);
}

// ---- 3. convert ----------------------------------------------------------------------

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kFlashBackwardRowThreads)
    flash_backward_convert_kernel(AttentionParams params, const float* __restrict__ dq_accumulator,
                                  Element* __restrict__ d_q, int padded_rows) {
  const auto [row, part, head, batch] = backward_row_lane();
  if (row >= params.seqlen_q) return;
  const float* const accumulator_row =
      dq_accumulator + ((static_cast<std::int64_t>(batch) * params.heads + head) * padded_rows + row) * kHeadDim;
  Element* const d_q_row = d_q + params.q_offset(batch, row, head);
#pragma unroll
  for (int pass = 0; pass < kHeadDim / (8 * kFlashBackwardRowLanes); ++pass) {
    const int column = row_chunk_column(pass, part);
    store_scaled_chunk(d_q_row + column, *reinterpret_cast<const float4*>(accumulator_row + column),
                       *reinterpret_cast<const float4*>(accumulator_row + column + 4), params.scale);
  }
}

// ---- launch ----------------------------------------------------------------------------

template <typename Element, int kHeadDim, bool kDropout>
void launch_main_kernel(const AttentionParams& params, const AttentionBuffers& buffers,
                        const FlashBackwardWorkspaceLayout& layout, unsigned char* workspace, int padded_rows,
                        cudaStream_t stream) {
  using Traits = BackwardTraits<kHeadDim>;
  constexpr int kSharedBytes = flash_backward_shared_layout(kHeadDim, sizeof(Element)).total;
  auto* const kernel = &flash_backward_kernel<Element, kHeadDim, kDropout>;
  static const bool shared_limit_raised = [kernel] {
    ATTNBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
    return true;
  }();
  (void)shared_limit_raised;
  const dim3 grid(static_cast<unsigned>((params.seqlen_k + Traits::kBlockN - 1) / Traits::kBlockN),
                  static_cast<unsigned>(params.kv_heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(static_cast<double>(params.scale) * 1.4426950408889634);
  launch_kernel(
      kernel, grid, Traits::kThreads, kSharedBytes, stream, params, static_cast<const Element*>(buffers.q.data), static_cast<const Element*>(buffers.k.data),
      static_cast<const Element*>(buffers.v.data), static_cast<const Element*>(buffers.d_out.data),
      static_cast<Element*>(buffers.d_k.data), static_cast<Element*>(buffers.d_v.data),
      reinterpret_cast<const float*>(workspace + layout.lse_log2),
      reinterpret_cast<const float*>(workspace + layout.delta),
      reinterpret_cast<float*>(workspace + layout.dq_accumulator), padded_rows, scale_log2);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element, int kHeadDim>
void launch_backward(const AttentionParams& params, const AttentionBuffers& buffers, void* backward_workspace,
                     cudaStream_t stream) {
  const FlashBackwardWorkspaceLayout layout =
      flash_backward_workspace_layout(params.batch, params.heads, params.seqlen_q, kHeadDim);
  auto* const workspace = static_cast<unsigned char*>(backward_workspace);
  auto* const lse_log2 = reinterpret_cast<float*>(workspace + layout.lse_log2);
  auto* const delta = reinterpret_cast<float*>(workspace + layout.delta);
  auto* const dq_accumulator = reinterpret_cast<float*>(workspace + layout.dq_accumulator);
  const auto padded_rows = static_cast<int>(flash_backward_padded_rows(params.seqlen_q, kHeadDim));

  const dim3 prepare_grid(static_cast<unsigned>(padded_rows / kFlashBackwardRowsPerBlock),
                          static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  launch_kernel(&flash_backward_prepare_kernel<Element, kHeadDim>, prepare_grid, kFlashBackwardRowThreads, 0, stream,
      params, static_cast<const Element*>(buffers.out.data), static_cast<const Element*>(buffers.d_out.data),
      static_cast<const float*>(buffers.lse.data), lse_log2, delta, dq_accumulator, padded_rows);
  ATTNBENCH_CUDA_CHECK_LAUNCH();

  if (params.dropout.enabled) {
    launch_main_kernel<Element, kHeadDim, true>(params, buffers, layout, workspace, padded_rows, stream);
  } else {
    launch_main_kernel<Element, kHeadDim, false>(params, buffers, layout, workspace, padded_rows, stream);
  }

  const dim3 convert_grid(
      static_cast<unsigned>((params.seqlen_q + kFlashBackwardRowsPerBlock - 1) / kFlashBackwardRowsPerBlock),
      static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  launch_kernel(&flash_backward_convert_kernel<Element, kHeadDim>, convert_grid, kFlashBackwardRowThreads, 0, stream,
      params, dq_accumulator, static_cast<Element*>(buffers.d_q.data), padded_rows);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element>
void launch_for_head_dim(const AttentionParams& params, const AttentionBuffers& buffers, void* backward_workspace,
                         cudaStream_t stream) {
  if (params.head_dim == 64) {
    launch_backward<Element, 64>(params, buffers, backward_workspace, stream);
  } else {
    launch_backward<Element, 128>(params, buffers, backward_workspace, stream);
  }
}

}  // namespace

std::size_t flash_backward_workspace_bytes(const Problem& problem) {
  return flash_backward_workspace_layout(problem.batch, problem.heads, problem.seqlen_q,
                                         static_cast<int>(problem.head_dim))
      .total;
}

void launch_flash_backward(const Problem& problem, const AttentionParams& params, const AttentionBuffers& buffers,
                           void* backward_workspace, cudaStream_t stream) {
  if (problem.dtype == InputDType::fp16) {
    launch_for_head_dim<__half>(params, buffers, backward_workspace, stream);
  } else {
    launch_for_head_dim<__nv_bfloat16>(params, buffers, backward_workspace, stream);
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
