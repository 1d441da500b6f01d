// The forward of cuda.flash, the fused attention kernel in the FlashAttention-2 structure.
// O = dropout(softmax(τ·Q·Kᵀ + mask))·V and LSE, without anything N×N in memory.
//
// Tiling (kernels/cuda/flash_geometry.hpp has the numbers and the index maps):
// one CTA per (query tile of block_m rows, head, batch); 4 warps, each owning 16
// query rows. The CTA's Q tile is copied to shared memory once (cp.async) and
// each warp keeps its Q fragments in registers. K and V tiles of block_n keys
// stream through shared memory in two stages: while the warps compute on tile j,
// cp.async brings tile j + 1. Per tile, each warp computes S = Q·Kᵀ with
// mma.sync m16n8k16 (fp16 or bf16 in, fp32 accumulate; K loaded with ldmatrix),
// scales it by τ·log2(e), masks it, advances the online softmax in base 2
// (kernels/common/online_softmax.hpp: row maximum over the quad, one rescale of
// the accumulator per tile), applies dropout to P in registers, and accumulates
// O += P·V with P straight from registers as the A operand and V loaded with
// ldmatrix.trans. O is divided by the row sum once, at the end; LSE is written
// in natural log.
//
// Masks: a CTA visits only the key tiles that meet the visible-key bound of its
// rows (wholly masked tiles are never loaded); a warp skips the tiles its own 16
// rows cannot see; tiles that tile_fully_visible() clears for the warp's rows
// skip the per-element predicates, the rest compare each key with the row's
// visible interval. Rows with no visible key (padded rows i >= Lq included) get
// zeros and LSE = -inf. Dropout follows the contract (DESIGN §2): the Philox
// words of element (b, h, i, j) of the padded grid, one call per 4 keys shared
// by a lane pair; the row sum accumulates P before dropout, and kept elements
// are scaled by 1/(1-p) with the final normalisation.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/flash_forward.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/fragment_softmax.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/tile_copy.hpp"
#include "kernels/cuda/warp_primitives.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

template <typename Element, int kHeadDim, bool kDropout>
__global__ void __launch_bounds__(FlashTraits<kHeadDim>::kThreads)
    flash_forward_kernel(AttentionParams params, const Element* __restrict__ q, const Element* __restrict__ k,
                         const Element* __restrict__ v, Element* __restrict__ o, float* __restrict__ lse,
                         float scale_log2) {
  using Traits = FlashTraits<kHeadDim>;
  constexpr int kBlockM = Traits::kBlockM;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kThreads = Traits::kThreads;
  constexpr int kRowBytes = kHeadDim * static_cast<int>(sizeof(Element));
  constexpr int kKeyTileBytes = kBlockN * kRowBytes;
  // Shared memory: the Q tile, kFlashStages K tiles, kFlashStages V tiles; every
  // tile starts at a multiple of 128 bytes, as swizzled_step() needs.
  const std::uint32_t q_tile = shared_address(dynamic_shared_memory());
  const std::uint32_t k_tiles = q_tile + kBlockM * kRowBytes;
  const std::uint32_t v_tiles = k_tiles + kFlashStages * kKeyTileBytes;

  const int query_tile = flash_query_tile_of_block(static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  const auto head = static_cast<int>(blockIdx.y);
  const auto batch = static_cast<int>(blockIdx.z);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const auto seqlen_q = static_cast<int>(params.seqlen_q);
  const auto seqlen_k = static_cast<int>(params.seqlen_k);
  const auto len_q = static_cast<int>(params.length_q(batch));
  const auto len_k = static_cast<int>(params.length_k(batch));

  const int cta_row = query_tile * kBlockM;
  const int warp_row = cta_row + Traits::kWarpRows * warp;
  const int row0 = warp_row + lane / 4;  // this lane's rows: row0 and row0 + 8
  const KeyTileRange cta_tiles = flash_key_tiles(params.mask, cta_row, cta_row + kBlockM, len_q, len_k, kBlockN);
  const KeyTileRange warp_tiles = flash_key_tiles(params.mask, warp_row, warp_row + Traits::kWarpRows, len_q, len_k, kBlockN);
  int visible_begin[2], visible_end[2];
  fragment_visible_keys(params.mask, row0, len_q, len_k, visible_begin, visible_end);
  const int lane_column = mma_c_position(lane, 0).column;  // the lane's first key in an 8-key fragment

  const std::int64_t q_row_stride = params.q_strides.seq;
  const std::int64_t kv_row_stride = params.kv_strides.seq;
  const Element* const q_slice = q + params.q_offset(batch, 0, head);
  const Element* const k_slice = k + params.kv_offset(batch, 0, params.kv_head_of(head));
  const Element* const v_slice = v + params.kv_offset(batch, 0, params.kv_head_of(head));

  float accumulator[Traits::kOutputTiles][4];
#pragma unroll
  for (int n = 0; n < Traits::kOutputTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) accumulator[n][e] = 0.0f;
  }
  SoftmaxRowState<float> state[2];  // rows row0 and row0 + 8; sum is this lane's part
  std::uint32_t q_fragments[Traits::kDimSteps][4];

  if (!cta_tiles.empty()) {
    copy_tile_async<kBlockM, kHeadDim, kThreads>(q_tile, q_slice, q_row_stride, cta_row, seqlen_q);
    copy_tile_async<kBlockN, kHeadDim, kThreads>(k_tiles, k_slice, kv_row_stride, cta_tiles.first * kBlockN,
                                                 seqlen_k);
    copy_tile_async<kBlockN, kHeadDim, kThreads>(v_tiles, v_slice, kv_row_stride, cta_tiles.first * kBlockN,
                                                 seqlen_k);
  }
  copy_async_commit();

  for (int tile = cta_tiles.first; tile < cta_tiles.end; ++tile) {
    const int stage = (tile - cta_tiles.first) % kFlashStages;
    if (tile + 1 < cta_tiles.end) {
      const int next = (stage + 1) % kFlashStages;
      copy_tile_async<kBlockN, kHeadDim, kThreads>(k_tiles + next * kKeyTileBytes, k_slice, kv_row_stride,
                                                   (tile + 1) * kBlockN, seqlen_k);
      copy_tile_async<kBlockN, kHeadDim, kThreads>(v_tiles + next * kKeyTileBytes, v_slice, kv_row_stride,
                                                   (tile + 1) * kBlockN, seqlen_k);
    }
    copy_async_commit();
    copy_async_wait<1>();  // everything but the tile just requested has landed
    __syncthreads();

    if (tile == cta_tiles.first) {
      const FragmentPosition position = ldmatrix_row_for_a(lane);
      const std::uint32_t q_lane =
          q_tile + swizzled_lane_bytes(Traits::kWarpRows * warp + position.row, position.column / 8, kRowBytes);
#pragma unroll
      for (int step = 0; step < Traits::kDimSteps; ++step) {
        load_matrix_x4(q_fragments[step], swizzled_step(q_lane, 2 * step, 0, kRowBytes));
      }
    }

    if (tile >= warp_tiles.first && tile < warp_tiles.end) {
      const int first_key = tile * kBlockN;

      // S = Q·Kᵀ for the warp's 16 rows and the tile's keys.
      float scores[Traits::kScoreTiles][4];
#pragma unroll
      for (int n = 0; n < Traits::kScoreTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) scores[n][e] = 0.0f;
      }
      const FragmentPosition k_position = ldmatrix_row_for_b(lane);
      const std::uint32_t k_lane = k_tiles + stage * kKeyTileBytes +
                                   swizzled_lane_bytes(k_position.row, k_position.column / 8, kRowBytes);
#pragma unroll
      for (int step = 0; step < Traits::kDimSteps; ++step) {
#pragma unroll
        for (int pair = 0; pair < kBlockN / 16; ++pair) {
          std::uint32_t k_fragments[4];
          load_matrix_x4(k_fragments, swizzled_step(k_lane, 2 * step, 16 * pair, kRowBytes));
          mma_16x8x16<Element>(scores[2 * pair], q_fragments[step], k_fragments[0], k_fragments[1]);
          mma_16x8x16<Element>(scores[2 * pair + 1], q_fragments[step], k_fragments[2], k_fragments[3]);
        }
      }

      // Scale into base-2 units; on tiles the warp's rows do not see whole, mask
      // (element (n, e) holds key first_key + lane_column + 8n + e % 2, so the
      // visible interval is moved into those units once per tile and row).
      scale_and_mask_scores<Traits::kScoreTiles>(
          [&](int n, int e) -> float& { return scores[n][e]; },
          tile_fully_visible(params.mask, warp_row, warp_row + Traits::kWarpRows, first_key, first_key + kBlockN, len_q, len_k),
          visible_begin, visible_end, first_key, lane_column, scale_log2);
      float tile_max[2] = {kNegativeInfinity, kNegativeInfinity};
#pragma unroll
      for (int n = 0; n < Traits::kScoreTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) tile_max[e / 2] = fmaxf(tile_max[e / 2], scores[n][e]);
      }

      // Online softmax: new maxima, one rescale of the accumulator, P = exp2(s - m).
      float reference[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float factor = online_softmax_advance<float, FastExp2>(state[half], quad_max(tile_max[half]));
        reference[half] = exp_reference(state[half].max);
#pragma unroll
        for (int n = 0; n < Traits::kOutputTiles; ++n) {
          accumulator[n][2 * half] *= factor;
          accumulator[n][2 * half + 1] *= factor;
        }
      }
#pragma unroll
      for (int n = 0; n < Traits::kScoreTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          scores[n][e] = FastExp2::exp(scores[n][e] - reference[e / 2]);
          state[e / 2].sum += scores[n][e];
        }
        if constexpr (kDropout) {
          apply_dropout(scores[n], params.dropout, static_cast<std::uint32_t>(batch), static_cast<std::uint32_t>(head),
                        row0, first_key + 8 * n, lane);
        }
      }

      // O += P·V, P from registers (two C fragments make one A fragment).
      const FragmentPosition v_position = ldmatrix_row_for_transposed_b(lane);
      const std::uint32_t v_lane = v_tiles + stage * kKeyTileBytes +
                                   swizzled_lane_bytes(v_position.row, v_position.column / 8, kRowBytes);
#pragma unroll
      for (int step = 0; step < Traits::kKeySteps; ++step) {
        const std::uint32_t p_fragment[4] = {pack_pair<Element>(scores[2 * step][0], scores[2 * step][1]),
                                             pack_pair<Element>(scores[2 * step][2], scores[2 * step][3]),
                                             pack_pair<Element>(scores[2 * step + 1][0], scores[2 * step + 1][1]),
                                             pack_pair<Element>(scores[2 * step + 1][2], scores[2 * step + 1][3])};
#pragma unroll
        for (int pair = 0; pair < Traits::kDimSteps; ++pair) {
          std::uint32_t v_fragments[4];
          load_matrix_x4_transposed(v_fragments, swizzled_step(v_lane, 2 * pair, 16 * step, kRowBytes));
          mma_16x8x16<Element>(accumulator[2 * pair], p_fragment, v_fragments[0], v_fragments[1]);
          mma_16x8x16<Element>(accumulator[2 * pair + 1], p_fragment, v_fragments[2], v_fragments[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  copy_async_wait<0>();

  // Epilogue: O = accumulator · keep_scale / l (zeros for a row without keys), LSE.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + 8 * half;
    state[half].sum = quad_sum(state[half].sum);
    const float keep_scale = kDropout ? params.dropout.keep_scale : 1.0f;
    const float normalizer = state[half].sum > 0.0f ? keep_scale / state[half].sum : 0.0f;
    if (row >= seqlen_q) continue;
    Element* const o_row = o + params.q_offset(batch, row, head);
#pragma unroll
    for (int n = 0; n < Traits::kOutputTiles; ++n) {
      const int column = 8 * n + mma_c_position(lane, 0).column;
      *reinterpret_cast<typename ElementPair<Element>::type*>(o_row + column) = ElementPair<Element>::make(
          accumulator[n][2 * half] * normalizer, accumulator[n][2 * half + 1] * normalizer);
    }
    if (lane % 4 == 0) {
      const float lse_base2 = online_softmax_lse<float, FastExp2>(state[half]);
      lse[(static_cast<std::int64_t>(batch) * params.heads + head) * params.seqlen_q + row] =
          lse_base2 * 0.6931471805599453f;  // log2 to natural log
    }
  }
}

template <typename Element, int kHeadDim, bool kDropout>
void launch_kernel(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  using Traits = FlashTraits<kHeadDim>;
  constexpr int kSharedBytes = flash_shared_bytes(kHeadDim, sizeof(Element));
  auto* const kernel = &flash_forward_kernel<Element, kHeadDim, kDropout>;
  static const bool shared_limit_raised = [kernel] {
    ATTNBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
    return true;
  }();
  (void)shared_limit_raised;
  const dim3 grid(static_cast<unsigned>(flash_query_tiles(params.seqlen_q, Traits::kShape)),
                  static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(static_cast<double>(params.scale) * 1.4426950408889634);
  launch_kernel(
      kernel, grid, Traits::kThreads, kSharedBytes, stream, params, static_cast<const Element*>(buffers.q.data), static_cast<const Element*>(buffers.k.data),
      static_cast<const Element*>(buffers.v.data), static_cast<Element*>(buffers.out.data),
      static_cast<float*>(buffers.lse.data), scale_log2);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element, int kHeadDim>
void launch_for_dropout(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  if (params.dropout.enabled) {
    launch_kernel<Element, kHeadDim, true>(params, buffers, stream);
  } else {
    launch_kernel<Element, kHeadDim, false>(params, buffers, stream);
  }
}

template <typename Element>
void launch_for_head_dim(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  if (params.head_dim == 64) {
    launch_for_dropout<Element, 64>(params, buffers, stream);
  } else {
    launch_for_dropout<Element, 128>(params, buffers, stream);
  }
}

}  // namespace

void launch_flash_forward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                          cudaStream_t stream) {
  if (dtype == InputDType::fp16) {
    launch_for_head_dim<__half>(params, buffers, stream);
  } else {
    launch_for_head_dim<__nv_bfloat16>(params, buffers, stream);
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
