// The forward of cuda.flash.sm90: fused attention in the FlashAttention-3
// structure on Hopper's instructions (TMA, mbarrier, wgmma, setmaxnreg).
// O = dropout(softmax(τ·Q·Kᵀ + mask))·V and LSE, nothing N×N in memory.
//
// Tiling (Sm90Traits): one CTA per (query tile of 128 rows, head, batch), the
// heaviest causal tile first; three warpgroups of 128 threads.
//   - Warpgroup 0, the producer, gives registers away (setmaxnreg.dec 40); one
//     elected thread of its first warp issues every TMA load: the CTA's Q tile
//     once, then the K and V tiles of 128 keys the CTA's rows can see, through
//     a pipeline of kStages stages. Tiles are stored as panels of 64 columns
//     (128 bytes per row, 128-byte swizzle), head_dim / 64 panels per tile.
//     Rows past the end of the tensor arrive as zeros (TMA's out-of-bound fill).
//   - Warpgroups 1 and 2, the consumers, take registers (setmaxnreg.inc 232);
//     each owns 64 query rows. Per key tile: S = Q·Kᵀ with wgmma m64n128k16
//     (Q and K from K-major swizzled descriptors, head_dim / 16 steps, fp32
//     accumulators), then, on the accumulator fragment in registers, the scale
//     into base 2, the mask predicates (only on tiles that are not wholly
//     visible to the warpgroup's rows), the online softmax (row maxima and sums
//     over the quads, kernels/cuda/fragment_softmax.hpp), dropout per the
//     Philox contract; then P is rounded to fp16/bf16 in registers as wgmma's A
//     operand and O += P·V runs as wgmma m64n{head_dim}k16 in the RS form, V an
//     MN-major operand (V is stored [key, dim]: dim, the N of this product, is
//     the contiguous one) read through the descriptor's transpose.
//   - Epilogue, per consumer: O divided by the row sum once (times 1/(1-p)
//     with dropout), written from registers with plain stores where the row
//     lies inside the tensor; LSE in natural log. Rows with no visible key get
//     zeros and LSE −∞.
//
// Synchronisation. mbarriers, all initialised by thread 0 before the
// __syncthreads that precedes the roles' split:
//   - q_full (1 arrival + the Q tile's bytes): the producer arrives with
//     expect_tx and the TMA loads complete it; each consumer waits for phase 0.
//   - k_full[s], v_full[s] (1 arrival + the tile's bytes each): the producer
//     arms them for the u-th use of stage s, the consumers wait for parity
//     (u & 1), k_full before S, v_full before P·V; K and V of a stage are
//     separate so S can start before V has landed.
//   - empty[s] (one arrival per consumer warpgroup): thread 0 of a consumer
//     arrives once its wgmma.wait_group 0 has covered both products reading
//     the stage; the producer waits for parity (u & 1) ^ 1 before refilling
//     (its first use waits for the phase before phase 0, already complete).
// Every consumer waits and arrives on every stage of the CTA's key range, so
// the two stay in step with the producer even where one has no visible key.
//
// Not yet in this kernel (docs/design.md lists it): the S(j+1) / P·V(j) overlap
// inside a warpgroup and the ping-pong between warpgroups, the stmatrix + TMA
// store epilogue, head dim 256, the backward.
#include "kernels/cuda/flash_sm90_forward.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/fragment_softmax.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"
#include "kernels/cuda/tensor_map.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// Tile shape and budgets per head dim (64 or 128), 16-bit elements.
//   Registers per consumer thread: S is 64 × 128 fp32 over 128 threads = 64,
//   P as packed pairs 32, O 64 × head_dim fp32 = head_dim / 2 (64 at d128):
//   160 at d128 under the 232 setmaxnreg gives, the rest for addresses,
//   row state and dropout. 40 (producer) × 128 + 232 × 256 = 64512 of the
//   SM's 65536 registers.
//   Shared memory at d128: Q 32 KiB + 2 stages × (K 32 KiB + V 32 KiB) =
//   160 KiB of the 227 KiB a CTA may have; d64 half of it.
template <int kHeadDim>
struct Sm90Traits {
  static constexpr int kBlockM = 128, kBlockN = 128;
  static constexpr int kConsumers = kBlockM / 64;  // warpgroups of 64 rows each
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
  static constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
  static_assert(kHeadDim == 64 || kHeadDim == 128, "head dims 64 and 128");
  static_assert(kSharedBytes <= 227 * 1024, "a CTA has at most 227 KiB of shared memory");
  static_assert(kQPanelBytes % 1024 == 0 && kKeyPanelBytes % 1024 == 0, "panels keep the 1024-byte swizzle alignment");
};

// A K-major operand (Q as A of Q·Kᵀ, K as its B) in panels of 128-byte rows:
// the k16 step `step` of the head dim is 32 bytes into panel step / 4; 8-row
// groups are 1024 bytes apart.
__device__ __forceinline__ std::uint64_t k_major_descriptor(std::uint32_t tile, int panel_bytes, int first_row,
                                                            int step) {
  const auto start = tile + static_cast<std::uint32_t>(step / 4 * panel_bytes + first_row * 128 + 32 * (step % 4));
  return make_matrix_descriptor(start, 16, 1024, MatrixSwizzle::bytes128);
}

// V as the MN-major B operand of P·V for keys 16·step …: element (dim n, key k)
// at (n % 64)·2 + (n / 64)·panel (the leading offset) + (k % 8)·128 + (k / 8)·1024
// (the stride offset), from the step's first key row.
__device__ __forceinline__ std::uint64_t v_descriptor(std::uint32_t tile, int panel_bytes, int step) {
  return make_matrix_descriptor(tile + static_cast<std::uint32_t>(step * 16 * 128), static_cast<std::uint32_t>(panel_bytes),
                                1024, MatrixSwizzle::bytes128);
}

template <typename Element, int kHeadDim, bool kDropout>
__global__ void __launch_bounds__(Sm90Traits<kHeadDim>::kThreads, 1)
    flash_sm90_forward_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, AttentionParams params,
                              Element* __restrict__ o, float* __restrict__ lse, float scale_log2) {
  using T = Sm90Traits<kHeadDim>;
  const std::uint32_t window = shared_address(dynamic_shared_memory());
  const std::uint32_t base = (window + 1023) / 1024 * 1024;
  const std::uint32_t q_tile = base;
  const auto k_tile = [&](int s) { return base + static_cast<std::uint32_t>(T::kKOffset + s * T::kKeyTileBytes); };
  const auto v_tile = [&](int s) { return base + static_cast<std::uint32_t>(T::kVOffset + s * T::kKeyTileBytes); };
  const std::uint32_t q_full = base + T::kBarrierOffset;
  const auto k_full = [&](int s) { return q_full + 8u * static_cast<std::uint32_t>(1 + s); };
  const auto v_full = [&](int s) { return k_full(s) + 8u * T::kStages; };
  const auto empty = [&](int s) { return v_full(s) + 8u * T::kStages; };

  const int query_tile = flash_query_tile_of_block(static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  const auto head = static_cast<int>(blockIdx.y);
  const auto batch = static_cast<int>(blockIdx.z);
  const auto kv_head = static_cast<int>(params.kv_head_of(head));
  const auto len_q = static_cast<int>(params.length_q(batch));
  const auto len_k = static_cast<int>(params.length_k(batch));
  const int cta_row = query_tile * T::kBlockM;
  const KeyTileRange tiles = flash_key_tiles(params.mask, cta_row, cta_row + T::kBlockM, len_q, len_k, T::kBlockN);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    mbarrier_init(q_full, 1);
    for (int s = 0; s < T::kStages; ++s) {
      mbarrier_init(k_full(s), 1);
      mbarrier_init(v_full(s), 1);
      mbarrier_init(empty(s), T::kConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<T::kProducerRegisters>();
    if (threadIdx.x < 32 && elect_one_sync() && !tiles.empty()) {
      mbarrier_arrive_expect_tx(q_full, T::kQBytes);
      for (int panel = 0; panel < T::kPanels; ++panel) {
        tma_load(q_tile + panel * T::kQPanelBytes, &q_map, q_full, 64 * panel, cta_row, head, batch);
      }
      for (int tile = tiles.first; tile < tiles.end; ++tile) {
        const int use = tile - tiles.first, s = use % T::kStages;
        mbarrier_wait_parity(empty(s), (static_cast<std::uint32_t>(use / T::kStages) & 1u) ^ 1u);
        mbarrier_arrive_expect_tx(k_full(s), T::kKeyTileBytes);
        for (int panel = 0; panel < T::kPanels; ++panel) {
          tma_load(k_tile(s) + panel * T::kKeyPanelBytes, &k_map, k_full(s), 64 * panel, tile * T::kBlockN, kv_head,
                   batch);
        }
        mbarrier_arrive_expect_tx(v_full(s), T::kKeyTileBytes);
        for (int panel = 0; panel < T::kPanels; ++panel) {
          tma_load(v_tile(s) + panel * T::kKeyPanelBytes, &v_map, v_full(s), 64 * panel, tile * T::kBlockN, kv_head,
                   batch);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<T::kConsumerRegisters>();
  const int consumer = warpgroup - 1;
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const int warp = thread / 32, lane = thread % 32;
  const int consumer_row = cta_row + 64 * consumer;
  const int row0 = consumer_row + 16 * warp + lane / 4;  // this thread's rows: row0 and row0 + 8
  const int lane_column = 2 * (lane % 4);                // its first key in each 8-key group
  int visible_begin[2], visible_end[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const KeyRange keys = visible_keys(params.mask, row0 + 8 * half, len_q, len_k);
    visible_begin[half] = static_cast<int>(keys.begin);
    visible_end[half] = static_cast<int>(keys.end);
  }

  // Accumulators in the m64nNk16 layout: element i of thread (warp, lane) is row
  // 16·warp + lane / 4 + 8·((i >> 1) & 1), column 8·(i >> 2) + 2·(lane % 4) + (i & 1).
  float output[kHeadDim / 2];  // (64, head_dim) per consumer
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) output[i] = 0.0f;
  float scores[T::kBlockN / 2];  // (64, block_n)
  SoftmaxRowState<float> state[2];

  if (!tiles.empty()) mbarrier_wait_parity(q_full, 0);
  for (int tile = tiles.first; tile < tiles.end; ++tile) {
    const int use = tile - tiles.first, s = use % T::kStages;
    const auto parity = static_cast<std::uint32_t>(use / T::kStages) & 1u;
    const int first_key = tile * T::kBlockN;

    // S = Q·Kᵀ for the warpgroup's 64 rows.
    mbarrier_wait_parity(k_full(s), parity);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
      wgmma_ss<T::kBlockN, Element>(scores, k_major_descriptor(q_tile, T::kQPanelBytes, 64 * consumer, step),
                                    k_major_descriptor(k_tile(s), T::kKeyPanelBytes, 0, step), step > 0);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();

    // Scale into base 2; mask where the warpgroup's rows do not see the whole tile.
    if (tile_fully_visible(params.mask, consumer_row, consumer_row + 64, first_key, first_key + T::kBlockN, len_q,
                           len_k)) {
#pragma unroll
      for (int i = 0; i < T::kBlockN / 2; ++i) scores[i] *= scale_log2;
    } else {
      int tile_begin[2], tile_end[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        tile_begin[half] = visible_begin[half] - first_key - lane_column;
        tile_end[half] = visible_end[half] - first_key - lane_column;
      }
#pragma unroll
      for (int i = 0; i < T::kBlockN / 2; ++i) {
        const int key = 8 * (i >> 2) + (i & 1), half = (i >> 1) & 1;
        const bool visible = tile_begin[half] <= key && key < tile_end[half];
        scores[i] = visible ? scores[i] * scale_log2 : kNegativeInfinity;
      }
    }

    // Online softmax: new maxima, one rescale of O, P = exp2(S - m).
    float tile_max[2] = {kNegativeInfinity, kNegativeInfinity};
#pragma unroll
    for (int i = 0; i < T::kBlockN / 2; ++i) tile_max[(i >> 1) & 1] = fmaxf(tile_max[(i >> 1) & 1], scores[i]);
    float reference[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float factor = online_softmax_advance<float, FastExp2>(state[half], quad_max(tile_max[half]));
      reference[half] = exp_reference(state[half].max);
#pragma unroll
      for (int i = 2 * half; i < kHeadDim / 2; i += 4) {
        output[i] *= factor;
        output[i + 1] *= factor;
      }
    }
#pragma unroll
    for (int i = 0; i < T::kBlockN / 2; ++i) {
      const int half = (i >> 1) & 1;
      scores[i] = FastExp2::exp(scores[i] - reference[half]);
      state[half].sum += scores[i];
    }
    if constexpr (kDropout) {
      // The keep bits of the tile first (a rolled loop keeps Philox's registers
      // out of the unrolled score code), then the zeros.
      static_assert(T::kBlockN / 2 <= 64, "one keep bit per score element of the thread");
      std::uint64_t keep = 0;
#pragma unroll 1
      for (int group = 0; group < T::kBlockN / 8; ++group) {
        keep |= std::uint64_t{dropout_keep_bits(params.dropout, static_cast<std::uint32_t>(batch),
                                                static_cast<std::uint32_t>(head), row0, first_key + 8 * group, lane)}
                << (4 * group);
      }
#pragma unroll
      for (int i = 0; i < T::kBlockN / 2; ++i) {
        if (!((keep >> i) & 1u)) scores[i] = 0.0f;
      }
    }

    // P as the A operand: register r of key step t holds accumulator elements 8t + 2r and 8t + 2r + 1.
    std::uint32_t p[T::kBlockN / 16][4];
#pragma unroll
    for (int step = 0; step < T::kBlockN / 16; ++step) {
#pragma unroll
      for (int r = 0; r < 4; ++r) p[step][r] = pack_pair<Element>(scores[8 * step + 2 * r], scores[8 * step + 2 * r + 1]);
    }

    // O += P·V.
    mbarrier_wait_parity(v_full(s), parity);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < T::kBlockN / 16; ++step) {
      wgmma_rs<kHeadDim, Element, Major::mn>(output, p[step], v_descriptor(v_tile(s), T::kKeyPanelBytes, step), true);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    if (thread == 0) mbarrier_arrive(empty(s));  // both products reading the stage are done
  }

  // Epilogue: O = output · keep_scale / l (zeros for a row without keys), LSE.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + 8 * half;
    state[half].sum = quad_sum(state[half].sum);
    const float keep_scale = kDropout ? params.dropout.keep_scale : 1.0f;
    const float normalizer = state[half].sum > 0.0f ? keep_scale / state[half].sum : 0.0f;
    if (row >= params.seqlen_q) continue;
    Element* const o_row = o + params.q_offset(batch, row, head);
#pragma unroll
    for (int i = 2 * half; i < kHeadDim / 2; i += 4) {
      const int column = 8 * (i >> 2) + lane_column;
      *reinterpret_cast<typename ElementPair<Element>::type*>(o_row + column) =
          ElementPair<Element>::make(output[i] * normalizer, output[i + 1] * normalizer);
    }
    if (lane % 4 == 0) {
      lse[(static_cast<std::int64_t>(batch) * params.heads + head) * params.seqlen_q + row] =
          online_softmax_lse<float, FastExp2>(state[half]) * 0.6931471805599453f;  // log2 to natural log
    }
  }
}

// Q, K or V as a 4-d tensor map (dim, sequence, head, batch) read in boxes of
// 64 columns (one 128-byte swizzle span) by `rows` rows.
CUtensorMap attention_map(const void* data, const TensorStrides& strides, std::int64_t seqlen, std::int64_t heads,
                          std::int64_t batch, std::int64_t head_dim, std::uint32_t rows, bool bf16, const char* what) {
  TensorMapShape shape;
  shape.rank = 4;
  shape.dims[0] = static_cast<std::uint64_t>(head_dim);
  shape.dims[1] = static_cast<std::uint64_t>(seqlen);
  shape.dims[2] = static_cast<std::uint64_t>(heads);
  shape.dims[3] = static_cast<std::uint64_t>(batch);
  shape.byte_strides[0] = 2 * static_cast<std::uint64_t>(strides.seq);
  shape.byte_strides[1] = 2 * static_cast<std::uint64_t>(strides.head);
  shape.byte_strides[2] = 2 * static_cast<std::uint64_t>(strides.batch);
  shape.box[0] = 64;
  shape.box[1] = rows;
  return make_tensor_map(bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, data, shape,
                         CU_TENSOR_MAP_SWIZZLE_128B, what);
}

template <typename Element, int kHeadDim, bool kDropout>
void launch(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  using T = Sm90Traits<kHeadDim>;
  constexpr bool kBf16 = std::is_same_v<Element, __nv_bfloat16>;
  const CUtensorMap q_map = attention_map(buffers.q.data, params.q_strides, params.seqlen_q, params.heads,
                                          params.batch, kHeadDim, T::kBlockM, kBf16, "Q");
  const CUtensorMap k_map = attention_map(buffers.k.data, params.kv_strides, params.seqlen_k, params.kv_heads,
                                          params.batch, kHeadDim, T::kBlockN, kBf16, "K");
  const CUtensorMap v_map = attention_map(buffers.v.data, params.kv_strides, params.seqlen_k, params.kv_heads,
                                          params.batch, kHeadDim, T::kBlockN, kBf16, "V");
  auto* const kernel = &flash_sm90_forward_kernel<Element, kHeadDim, kDropout>;
  static const bool shared_limit_raised = [kernel] {
    ATTNBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
    return true;
  }();
  (void)shared_limit_raised;
  const dim3 grid(static_cast<unsigned>((params.seqlen_q + T::kBlockM - 1) / T::kBlockM),
                  static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(static_cast<double>(params.scale) * 1.4426950408889634);
  launch_kernel(kernel, grid, dim3(T::kThreads), T::kSharedBytes, stream, q_map, k_map, v_map, params,
                static_cast<Element*>(buffers.out.data), static_cast<float*>(buffers.lse.data), scale_log2);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element, int kHeadDim>
void launch_for_dropout(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  if (params.dropout.enabled) {
    launch<Element, kHeadDim, true>(params, buffers, stream);
  } else {
    launch<Element, kHeadDim, false>(params, buffers, stream);
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

template <int kHeadDim>
FlashSm90Shape shape_of() {
  using T = Sm90Traits<kHeadDim>;
  return FlashSm90Shape{T::kBlockM, T::kBlockN, T::kConsumers, T::kStages, T::kSharedBytes};
}

}  // namespace

FlashSm90Shape flash_sm90_shape(int head_dim) { return head_dim == 64 ? shape_of<64>() : shape_of<128>(); }

void launch_flash_sm90_forward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                               cudaStream_t stream) {
  if (dtype == InputDType::fp16) {
    launch_for_head_dim<__half>(params, buffers, stream);
  } else {
    launch_for_head_dim<__nv_bfloat16>(params, buffers, stream);
  }
}

bool flash_sm90_runs_here(std::string& why) {
#if defined(ATTNBENCH_CUDASIM)
  (void)why;
  return true;
#else
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    why = "no CUDA device";
    return false;
  }
  if (major != 9 || minor != 0) {
    why = "the kernel is sm_90a code (TMA, wgmma, setmaxnreg); this GPU has compute capability " +
          std::to_string(major) + "." + std::to_string(minor);
    return false;
  }
  return true;
#endif
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
