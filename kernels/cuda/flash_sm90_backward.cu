// The backward of cuda.flash.sm90: dQ, dK and dV of
// O = dropout(softmax(τ·Q·Kᵀ + mask))·V in the FlashAttention-3 structure on
// Hopper's instructions (TMA, mbarrier, wgmma, setmaxnreg), P and dS rebuilt
// from the forward's LSE, nothing N×N in memory. Tiling and budgets:
// Sm90BackwardTraits (kernels/cuda/flash_sm90_backward_geometry.hpp).
//
// Three kernels on the call's stream:
// 1. prepare: per query row D = rowsum(dO ∘ O) in fp32 and LSE·log2(e) (0 for
//    a row without keys, whose LSE is -inf) into the workspace, and zeros into
//    the row's part of the fp32 dQ accumulator.
// 2. the main kernel: one CTA per (key tile of kBlockN keys, kv head,
//    batch), three warpgroups of 128 threads.
//    - Warpgroup 0, the producer, gives registers away (setmaxnreg.dec 24); one
//      elected thread loads the K and V tiles once (TMA, on kv_full), then,
//      for each query head of the kv head's group (GQA: dK and dV sum over
//      them) and each query tile of kBlockM rows that can see the CTA's keys
//      (flash_backward_query_tiles), Q with its LSE·log2(e) rows and dO with its
//      D rows through a 2-stage MbarrierPipeline (hopper_pipeline.hpp) with
//      two full barriers per stage (Q's for Sᵀ, dO's for dPᵀ). Rows past the
//      tensor arrive as zeros (TMA's out-of-bound fill); the row vectors are
//      padded to whole tiles in the workspace.
//    - Warpgroups 1 and 2, the MMA warpgroups (consumers), take registers
//      (setmaxnreg.inc 240). At d64 and d128 (Sm90BackwardTraits::kSplitKeys)
//      the tile has 128 keys and consumer c owns keys 64c .. 64c + 63 (the M
//      of its key-major products) over the whole head dim; at d256 the tile
//      has 64 keys, which both consumers share: consumer c takes queries
//      32c .. 32c + 31 of the 64-row query tile in Sᵀ and dPᵀ, and dims
//      128c .. 128c + 127 in dK and dV. Per query tile, with wgmma m64nNk16
//      (fp16/bf16 in, fp32 accumulate), slice by slice of the consumer's
//      queries (N = 64: two slices at d64, one at d128; N = 32 at d256), the
//      operands:
//        Sᵀ  = K_c·Qᵀ    SS: A the consumer's K rows (K-major), B the slice's Q rows (K-major: k = dim)
//        dPᵀ = V_c·dOᵀ   SS: A the consumer's V rows (K-major), B the slice's dO rows (K-major)
//        Pᵀ  = exp2(Sᵀ·τ·log2(e) − LSE·log2(e)) in registers, 0 where masked;
//              dSᵀ = Pᵀ ∘ (dPᵀ ∘ Zᵀ/(1−p) − D) in registers (D, LSE from the stage's rows)
//        dV += (Pᵀ∘Zᵀ)·dO  d64, d128: RS, A Pᵀ from registers (the accumulator repacked);
//                        d256: SS, A the Pᵀ tile in shared memory (K-major: k = query), which
//                        both consumers' halves fill; B dO MN-major (k = query); N = its dims
//        dK += dSᵀ·Q     SS: A the consumer's key rows of the shared dSᵀ tile (K-major: k = query),
//                        B Q MN-major; N = its dims
//        dQ  = dS·K      SS: A the dSᵀ tile's panel of the part's rows (MN-major: query contiguous),
//                        B K MN-major (k = key), the part's 64-dim panels; N = 64, 128 at d256
//      dSᵀ is in registers, but dK reads it from shared memory, where it has
//      to go for dQ anyway: as an RS operand its packed fragments (kBlockM / 4
//      registers) would stay live beside dV, dK, and the next slice's Sᵀ and
//      dPᵀ, and ptxas spills at d64 and d128 (CUDA 13.0); from shared memory
//      they die at the stmatrix. At d256 dV needs all 64 queries' Pᵀ, and
//      each consumer holds half, so Pᵀ goes to shared memory too. The
//      fragments go to the tiles with stmatrix, then fence.proxy.async and a
//      named barrier of the 256 MMA threads; each consumer then runs dK (and
//      at d256 dV) over its part and its part of the tile's dQ over all the
//      keys (Sm90BackwardTraits: at d64 its 64 of the 128 rows, at d128 its 64
//      of the 128 dims, at d256 its 128 of the 256 dims). dSᵀ and Pᵀ are
//      double-buffered, so one barrier per tile separates a buffer's writes
//      from its reads: a warpgroup writes tile t + 2's only after passing tile
//      t + 1's barrier, which the other reaches only after finishing tile t's
//      products.
//    - dQ across CTAs, into the fp32 accumulator in global memory: each
//      consumer's part is one contiguous 64 × kDqColumns block of the tiled
//      accumulator (sm90_dq_offset). By default, at d64 and d128, the
//      consumer stages the part in shared memory and thread 0 adds it with
//      one cp.reduce.async.bulk.add.f32 of 16 KiB (the TMA engine's
//      reduce-add, rather than 2048 red.global.add.v2 instructions from the
//      warpgroup): kBlockM · d · 4 bytes of reduce-add per (key tile, query
//      tile), nothing read back; the staging's next write waits for the
//      copy's reads (bulk wait_group.read before the next tile's barrier).
//      At d256 the 64 KiB of staging does not fit beside two stages, and the
//      consumers add their parts from registers with red.global.add.v2.f32:
//      the same bytes, 32 instructions per thread per tile. Either way the
//      additions land in whatever order the CTAs reach them. With
//      `deterministic` (the ablation cuda.flash.sm90.deterministic) the key
//      tiles add in their index order: a semaphore per (batch, head, query
//      tile) in the workspace counts the parts added; thread 0 of a consumer
//      waits (ld.acquire.gpu) until both parts of every earlier key tile are
//      in (sm90_dq_turn), the warpgroup adds its part with
//      red.global.add.v2.f32, a barrier, and thread 0 passes the turn on
//      (red.release.gpu.add). Key tiles wait only for lower ones, which start
//      first on a GPU, so the chain always moves.
//    - Epilogue: after a barrier of the 256 MMA threads (the other warpgroup's
//      last products may still read K and V), dK = τ·acc and dV = acc/(1−p)
//      through the shared epilogue (hopper_epilogue.hpp), staged over the
//      consumer's own part of the K and V tiles, one TMA store per 64-dim
//      panel; keys past seqlen_k are clipped by the tensor map. A CTA whose
//      keys no query sees writes zeros.
// 3. convert: dQ = τ·accumulator in the input dtype.
//
// Masks: the CTA visits only the query tiles that meet the bound of its
// keys' visible rows (flash_backward_query_tiles); per warpgroup, tiles whose
// rows all see all of its 64 keys skip the per-element predicates, the rest
// compare each query with the visible rows of the thread's two keys. Padded
// rows (i ≥ Lq) and keys (j ≥ Lk) are invisible, so their P and dS are 0.
// Dropout: the keep bits of each slice, drawn per the Philox contract as the
// forward's (transposed_dropout_keep_bits, kernels/cuda/fragment_softmax.hpp),
// before the tile's products hold their registers.
//
// Synchronisation. mbarriers, initialised by thread 0 before the
// __syncthreads that precedes the roles: kv_full (1 arrival + the K and V
// bytes; each MMA thread waits for phase 0); the query ring (full barriers
// kQueries and kGradients per stage, 1 arrival + bytes; the empty barrier one
// arrival per MMA warpgroup, by its thread 0 once wgmma.wait_group 0 covers
// the four products reading the stage). Named barriers: kDsBarrier (the 256
// MMA threads, per tile and before the epilogue), kEpilogueBarrier + c,
// kDqBarrier + c (warpgroup c's 128 threads around its dQ reduction).
//
// Not yet in this kernel: FA3's 80-row query tiles at d128, overlap between
// the products of consecutive slices or tiles (every wgmma group is waited for
// with wait_group 0), clusters.
#include "kernels/cuda/flash_sm90_backward.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/backward_rows.hpp"
#include "kernels/cuda/element_conversion.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_sm90_backward_geometry.hpp"
#include "kernels/cuda/fragment_softmax.hpp"
#include "kernels/cuda/hopper_epilogue.hpp"
#include "kernels/cuda/hopper_pipeline.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"
#include "kernels/cuda/tensor_map.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// The named barriers (bar.sync ids; 0 is __syncthreads's).
enum Sm90BackwardBarrier : int {
  kDsBarrier = 1,        // the 256 MMA threads: a tile's dSᵀ is whole; before the epilogue
  kEpilogueBarrier = 2,  // + c: MMA warpgroup c's 128 threads before its TMA stores
  kDqBarrier = 4,        // + c: MMA warpgroup c's 128 threads around its dQ reduction
};
constexpr int kMmaThreads = 256;

// `value`, which the compiler must take as changed here: the K and V tiles'
// addresses pass through it once per query tile, so that their wgmma
// descriptors (2 · head_dim / 16 + 128 / 16 of 64 bits, loop-invariant) are
// recomputed each time instead of held in registers across the loop.
template <typename Value>
__device__ __forceinline__ Value opaque(Value value) {
  static_assert(sizeof(Value) == 4, "a 32-bit register");
#if !defined(ATTNBENCH_CUDASIM)
  asm volatile("" : "+r"(value));
#endif
  return value;
}

__device__ __forceinline__ std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// What every role of a CTA knows: its keys, the query tiles that see them,
// the query heads of its group, and the shared addresses of its storage.
template <int kHeadDim>
struct Sm90BackwardCta {
  using T = Sm90BackwardTraits<kHeadDim>;
  using Shared = typename T::Shared;
  using Pipeline = MbarrierPipeline<T::kStages, 2>;

  std::uint32_t shared;
  int kv_head, batch, len_q, len_k, first_key, group, first_head;
  QueryTileRange tiles;

  __device__ __forceinline__ explicit Sm90BackwardCta(const AttentionParams& params)
      : shared(shared_storage_base()),
        kv_head(static_cast<int>(blockIdx.y)),
        batch(static_cast<int>(blockIdx.z)),
        len_q(static_cast<int>(params.length_q(batch))),
        len_k(static_cast<int>(params.length_k(batch))),
        first_key(static_cast<int>(blockIdx.x) * T::kBlockN),
        group(static_cast<int>(params.heads / params.kv_heads)),
        first_head(kv_head * group),
        tiles(flash_backward_query_tiles(params.mask, first_key, first_key + T::kBlockN, len_q, len_k, T::kBlockM)) {}

  // The (query head, query tile) pairs in the order the ring carries them.
  __device__ __forceinline__ int steps() const { return group * tiles.count(); }
  __device__ __forceinline__ int head_of(int step) const { return first_head + step / tiles.count(); }
  __device__ __forceinline__ int tile_of(int step) const { return tiles.first + step % tiles.count(); }

  __device__ __forceinline__ std::uint32_t at(std::size_t offset) const {
    return shared + static_cast<std::uint32_t>(offset);
  }
  __device__ __forceinline__ std::uint32_t k_tile() const { return at(offsetof(Shared, k)); }
  __device__ __forceinline__ std::uint32_t v_tile() const { return at(offsetof(Shared, v)); }
  __device__ __forceinline__ std::uint32_t q_tile(int stage) const {
    return at(offsetof(Shared, q)) + static_cast<std::uint32_t>(stage * T::kQueryTileBytes);
  }
  __device__ __forceinline__ std::uint32_t d_out_tile(int stage) const {
    return at(offsetof(Shared, d_out)) + static_cast<std::uint32_t>(stage * T::kQueryTileBytes);
  }
  __device__ __forceinline__ std::uint32_t ds_tile(int buffer) const {
    return at(offsetof(Shared, ds)) + static_cast<std::uint32_t>(buffer * T::kDsTileBytes);
  }
  __device__ __forceinline__ std::uint32_t lse_rows(int stage) const {
    return at(offsetof(Shared, lse_log2)) + static_cast<std::uint32_t>(stage * T::kRowVectorBytes);
  }
  __device__ __forceinline__ std::uint32_t delta_rows(int stage) const {
    return at(offsetof(Shared, delta)) + static_cast<std::uint32_t>(stage * T::kRowVectorBytes);
  }
  // The exchange: consumer c's dQ staging (kStagedDq), or Pᵀ tile `buffer` (d256).
  __device__ __forceinline__ std::uint32_t dq_part(int consumer) const {
    static_assert(T::kStagedDq, "the dQ parts are staged");
    return at(offsetof(Shared, exchange)) + static_cast<std::uint32_t>(consumer * T::kDqPartBytes);
  }
  __device__ __forceinline__ std::uint32_t p_tile(int buffer) const {
    static_assert(!T::kSplitKeys, "Pᵀ goes through shared memory");
    return at(offsetof(Shared, exchange)) + static_cast<std::uint32_t>(buffer * T::kDsTileBytes);
  }
  __device__ __forceinline__ std::uint32_t kv_full() const { return at(offsetof(Shared, kv_full)); }
  __device__ __forceinline__ Pipeline query() const { return Pipeline(at(offsetof(Shared, query))); }

  __device__ __forceinline__ void init_barriers() const {
    mbarrier_init(kv_full(), 1);
    query().init(T::kConsumers);
    fence_mbarrier_init();
  }
};

// The tensor maps of the main kernel.
struct Sm90BackwardMaps {
  CUtensorMap q, k, v, d_out, d_k, d_v, lse_log2, delta;
};

// The producer, one elected thread: K and V once, then per (head, query tile)
// Q with its LSE·log2(e) rows on the stage's kQueries barrier and dO with its
// D rows on kGradients.
template <int kHeadDim>
__device__ __forceinline__ void load_tiles(const Sm90BackwardCta<kHeadDim>& cta, const AttentionParams& params,
                                           const Sm90BackwardMaps& maps) {
  using T = Sm90BackwardTraits<kHeadDim>;
  mbarrier_arrive_expect_tx(cta.kv_full(), 2 * T::kKeyTileBytes);
  for (int panel = 0; panel < T::kPanels; ++panel) {
    tma_load(cta.k_tile() + panel * T::kKeyPanelBytes, &maps.k, cta.kv_full(), 64 * panel, cta.first_key,
             cta.kv_head, cta.batch);
    tma_load(cta.v_tile() + panel * T::kKeyPanelBytes, &maps.v, cta.kv_full(), 64 * panel, cta.first_key,
             cta.kv_head, cta.batch);
  }
  const auto ring = cta.query();
  typename Sm90BackwardCta<kHeadDim>::Pipeline::State state;
  for (int step = 0; step < cta.steps(); ++step, state.advance()) {
    const int head = cta.head_of(step);
    const int first_row = cta.tile_of(step) * T::kBlockM;
    const int row_vector = cta.batch * static_cast<int>(params.heads) + head;
    ring.producer_acquire(state);
    const std::uint32_t queries = ring.producer_arm(state, T::kQueryTileBytes + T::kRowVectorBytes, T::kQueries);
    for (int panel = 0; panel < T::kPanels; ++panel) {
      tma_load(cta.q_tile(state.stage()) + panel * T::kQueryPanelBytes, &maps.q, queries, 64 * panel, first_row, head,
               cta.batch);
    }
    tma_load(cta.lse_rows(state.stage()), &maps.lse_log2, queries, first_row, row_vector);
    const std::uint32_t gradients = ring.producer_arm(state, T::kQueryTileBytes + T::kRowVectorBytes, T::kGradients);
    for (int panel = 0; panel < T::kPanels; ++panel) {
      tma_load(cta.d_out_tile(state.stage()) + panel * T::kQueryPanelBytes, &maps.d_out, gradients, 64 * panel,
               first_row, head, cta.batch);
    }
    tma_load(cta.delta_rows(state.stage()), &maps.delta, gradients, first_row, row_vector);
  }
}

// An MMA warpgroup: its keys through every (head, query tile) of the CTA, dK
// and dV of its part in registers, its dQ parts into the accumulator, then
// its epilogue.
template <typename Element, int kHeadDim, bool kDropout>
__device__ void consume_query_tiles(const Sm90BackwardCta<kHeadDim>& cta, const AttentionParams& params,
                                    const Sm90BackwardMaps& maps, int consumer, float scale_log2,
                                    float* __restrict__ dq_accumulator, int* __restrict__ semaphores,
                                    int padded_rows, bool deterministic) {
  using T = Sm90BackwardTraits<kHeadDim>;
  constexpr int kGroups = T::kSliceQueries / 8;  // 8-query groups of a slice of Sᵀ
  const auto ring = cta.query();
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const int warp = thread / 32, lane = thread % 32;
  // The consumer's part: its rows of the K, V, dSᵀ and Pᵀ tiles, its first
  // query of each slice, its first dim of dK and dV (Sm90BackwardTraits).
  const int key_row = T::key_row(consumer);
  const int consumer_query = T::first_query(consumer);
  const int consumer_dim = T::first_dim(consumer);
  const int consumer_key = cta.first_key + key_row;
  const int key0 = consumer_key + T::kWarpKeys * warp + lane / 4;  // this thread's keys: key0 and key0 + 8
  const int lane_column = 2 * (lane % 4);                           // its first query in each 8-query group
  const int len_q = cta.len_q, len_k = cta.len_k;
  int visible_begin[2], visible_end[2];
  fragment_visible_queries(params.mask, key0, len_q, len_k, visible_begin, visible_end);
  const KeyRange full_rows =
      fully_visible_queries(params.mask, consumer_key, consumer_key + T::kConsumerKeys, len_q, len_k);
  const auto full_begin = static_cast<int>(full_rows.begin), full_end = static_cast<int>(full_rows.end);
  const Sm90DqPart dq_part = sm90_dq_part(consumer, T::kBlockM, kHeadDim);
  const float keep_scale = kDropout ? params.dropout.keep_scale : 1.0f;

  // Accumulators in the m64nNk16 layout: element i of thread (warp, lane) is row
  // (key) 16·warp + lane / 4 + 8·((i >> 1) & 1), column 8·(i >> 2) + 2·(lane % 4) + (i & 1).
  float d_value[T::kConsumerDims / 2], d_key[T::kConsumerDims / 2];
#pragma unroll
  for (int i = 0; i < T::kConsumerDims / 2; ++i) d_value[i] = d_key[i] = 0.0f;

  if (!cta.tiles.empty()) mbarrier_wait_parity(cta.kv_full(), 0);
  typename Sm90BackwardCta<kHeadDim>::Pipeline::State state;
  for (int step = 0; step < cta.steps(); ++step, state.advance()) {
    const int head = cta.head_of(step);
    const int first_row = cta.tile_of(step) * T::kBlockM;
    const int stage = state.stage();
    const bool whole = full_begin <= first_row && first_row + T::kBlockM <= full_end;
    const std::uint32_t k_tile = opaque(cta.k_tile()), v_tile = opaque(cta.v_tile());

    // Per slice of the consumer's queries: Sᵀ = K_c·Qᵀ and dPᵀ = V_c·dOᵀ
    // (one group), Pᵀ and dSᵀ = Pᵀ ∘ (dPᵀ − D) in place, dSᵀ rounded into the
    // consumer's part of the dSᵀ tile (stmatrix), where dK's and dQ's
    // products read it. With kSplitKeys, Pᵀ packed as dV's A fragments and
    // dV += Pᵀ·dO of the slice; at d256, Pᵀ into its part of the Pᵀ tile.
    // (Both waits come first: a wait loop between two issues makes ptxas wait
    // for the first group.)
    ring.consumer_wait(state, T::kQueries);
    ring.consumer_wait(state, T::kGradients);
    const std::uint32_t ds_tile = cta.ds_tile(step % 2);
    // The dropout keep bits of each slice (bit 4n + e: element e of 8-query
    // group n), before any product of the tile holds registers; a rolled loop
    // keeps Philox's registers out of the unrolled code.
    std::uint32_t keep[T::kSlices];
#pragma unroll
    for (int slice = 0; slice < T::kSlices; ++slice) keep[slice] = ~0u;
    if constexpr (kDropout) {
#pragma unroll
      for (int slice = 0; slice < T::kSlices; ++slice) {
        keep[slice] = 0;
#pragma unroll 1
        for (int n = 0; n < kGroups; ++n) {
          keep[slice] |= transposed_dropout_keep_bits<1>(
                             params.dropout, static_cast<std::uint32_t>(cta.batch), static_cast<std::uint32_t>(head),
                             first_row + consumer_query + T::kSliceQueries * slice + 8 * n,
                             consumer_key + T::kWarpKeys * warp, lane)
                         << (4 * n);
        }
      }
    }
    std::uint32_t p[T::kSplitKeys ? T::kBlockM / 16 : 1][4];
    // Pins a slice's Pᵀ fragments until a wait has covered the dV product reading them.
    const auto fence_slice = [&p](int slice) {
      if constexpr (T::kSplitKeys) {
#pragma unroll
        for (int s = 4 * slice; s < 4 * slice + 4; ++s) wgmma_fence_operand(p[s]);
      }
    };
#pragma unroll
    for (int slice = 0; slice < T::kSlices; ++slice) {
      const int first_query = consumer_query + T::kSliceQueries * slice;
      float scores[T::kSliceQueries / 2], d_scores[T::kSliceQueries / 2];
      wgmma_fence_operand(scores);
      wgmma_fence_operand(d_scores);
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < kHeadDim / 16; ++k) {
        wgmma_ss<T::kSliceQueries, Element>(scores, k_major_descriptor(k_tile, T::kKeyPanelBytes, key_row, k),
                                            k_major_descriptor(cta.q_tile(stage), T::kQueryPanelBytes, first_query, k),
                                            k > 0);
      }
#pragma unroll
      for (int k = 0; k < kHeadDim / 16; ++k) {
        wgmma_ss<T::kSliceQueries, Element>(
            d_scores, k_major_descriptor(v_tile, T::kKeyPanelBytes, key_row, k),
            k_major_descriptor(cta.d_out_tile(stage), T::kQueryPanelBytes, first_query, k), k > 0);
      }
      wgmma_commit_group();
      wgmma_wait_group<0>();
      wgmma_fence_operand(scores);
      wgmma_fence_operand(d_scores);
      wgmma_fence_operand(d_value);
      if (slice > 0) fence_slice(slice - 1);

      // The visible queries of the thread's two keys relative to its first
      // column of the slice (everything, for a tile the whole warpgroup sees).
      int begin[2], end[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        begin[half] = whole ? 0 : visible_begin[half] - first_row - first_query - lane_column;
        end[half] = whole ? T::kSliceQueries : visible_end[half] - first_row - first_query - lane_column;
      }
#pragma unroll
      for (int n = 0; n < kGroups; ++n) {
        const std::uint32_t column = 4 * static_cast<std::uint32_t>(first_query + 8 * n + lane_column);
        const float2 lse = load_shared_float2(cta.lse_rows(stage) + column);
        const float2 delta = load_shared_float2(cta.delta_rows(stage) + column);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int query = 8 * n + (e & 1);  // relative to the slice's first_row + first_query + lane_column
          const bool visible = begin[e >> 1] <= query && query < end[e >> 1];
          const float exponent = scores[4 * n + e] * scale_log2 - ((e & 1) ? lse.y : lse.x);
          const float probability = FastExp2::exp(visible ? exponent : kNegativeInfinity);  // a select, no branch
          // Dropout: Pᵀ ∘ Zᵀ for dV (1/(1-p) applied at the end), and dPᵀ ∘ Zᵀ/(1-p) for dSᵀ.
          const bool kept = !kDropout || ((keep[slice] >> (4 * n + e)) & 1u);
          const float d_probability = kept ? d_scores[4 * n + e] * keep_scale : 0.0f;
          scores[4 * n + e] = kept ? probability : 0.0f;
          d_scores[4 * n + e] = probability * (d_probability - ((e & 1) ? delta.y : delta.x));
        }
      }
#pragma unroll
      for (int s = 0; s < T::kSliceQueries / 16; ++s) {
        std::uint32_t probabilities[4], ds[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          probabilities[r] = pack_pair<Element>(scores[8 * s + 2 * r], scores[8 * s + 2 * r + 1]);
          ds[r] = pack_pair<Element>(d_scores[8 * s + 2 * r], d_scores[8 * s + 2 * r + 1]);
        }
        store_fragment_columns(ds_tile, T::kDsPanelBytes, key_row, first_query / 8 + 2 * s, ds);
        if constexpr (T::kSplitKeys) {
#pragma unroll
          for (int r = 0; r < 4; ++r) p[4 * slice + s][r] = probabilities[r];
        } else {
          store_fragment_columns(cta.p_tile(step % 2), T::kDsPanelBytes, key_row, first_query / 8 + 2 * s,
                                 probabilities);
        }
      }
      if constexpr (T::kSplitKeys) {
        wgmma_fence_operand(d_value);
        fence_slice(slice);
        wgmma_fence();
#pragma unroll
        for (int s = 4 * slice; s < 4 * slice + 4; ++s) {
          wgmma_rs<kHeadDim, Element, Major::mn>(d_value, p[s],
                                                 mn_major_descriptor(cta.d_out_tile(stage), T::kQueryPanelBytes, s),
                                                 true);
        }
        wgmma_commit_group();
        wgmma_fence_operand(d_value);
        fence_slice(slice);
      }
    }
    fence_proxy_async();
    // Both consumers' parts of the dSᵀ (and Pᵀ) tile are written; and, once
    // thread 0 has seen the previous tile's reduction read its staging, it is free.
    if constexpr (T::kStagedDq) {
      if (thread == 0) bulk_wait_group_read<0>();
    }
    named_barrier_sync(kDsBarrier, kMmaThreads);

    // At d256, dV += Pᵀ·dO: A the consumer's rows of the Pᵀ tile (K-major: k = query), B dO (MN-major).
    if constexpr (!T::kSplitKeys) {
      wgmma_fence_operand(d_value);
      wgmma_fence();
#pragma unroll
      for (int s = 0; s < T::kBlockM / 16; ++s) {
        wgmma_ss<T::kConsumerDims, Element, Major::k, Major::mn>(
            d_value, k_major_descriptor(cta.p_tile(step % 2), T::kDsPanelBytes, key_row, s),
            mn_major_descriptor(cta.d_out_tile(stage) + consumer_dim / 64 * T::kQueryPanelBytes, T::kQueryPanelBytes,
                                s),
            true);
      }
      wgmma_commit_group();
      wgmma_fence_operand(d_value);
    }

    // dK += dSᵀ·Q: A the consumer's rows of the dSᵀ tile (K-major: k = query), B Q (MN-major).
    wgmma_fence_operand(d_key);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < T::kBlockM / 16; ++s) {
      wgmma_ss<T::kConsumerDims, Element, Major::k, Major::mn>(
          d_key, k_major_descriptor(ds_tile, T::kDsPanelBytes, key_row, s),
          mn_major_descriptor(cta.q_tile(stage) + consumer_dim / 64 * T::kQueryPanelBytes, T::kQueryPanelBytes, s),
          true);
    }
    wgmma_commit_group();
    wgmma_fence_operand(d_key);

    // dQ part = dS·K over the tile's keys: A the dSᵀ tile's panel of the
    // part's rows (queries contiguous: MN-major), B K's panels of its dims (MN-major).
    float d_query[T::kDqColumns / 2];
    wgmma_fence_operand(d_query);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < T::kBlockN / 16; ++k) {
      wgmma_ss<T::kDqColumns, Element, Major::mn, Major::mn>(
          d_query, mn_major_descriptor(ds_tile + dq_part.first_row / 64 * T::kDsPanelBytes, T::kDsPanelBytes, k),
          mn_major_descriptor(k_tile + dq_part.first_dim / 64 * T::kKeyPanelBytes, T::kKeyPanelBytes, k), k > 0);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    wgmma_fence_operand(d_query);
    wgmma_fence_operand(d_value);
    wgmma_fence_operand(d_key);
    fence_slice(T::kSlices - 1);
    if (thread == 0) ring.consumer_release(state);  // Sᵀ, dPᵀ, dV and dK have read the stage

    // The part into the accumulator: one contiguous 64 × kDqColumns block.
    const std::int64_t row_vector = static_cast<std::int64_t>(cta.batch) * params.heads + head;
    float* const part = dq_accumulator + row_vector * padded_rows * kHeadDim +
                        sm90_dq_offset(first_row + dq_part.first_row, dq_part.first_dim, T::kBlockM, kHeadDim);
    if (deterministic || !T::kStagedDq) {
      // From registers, with red.global.add.v2. Deterministic: in the key
      // tiles' order: wait for this tile's turn (both consumers of every
      // earlier key tile have added theirs: 2 per tile), add, pass on.
      const int query_tile = first_row / T::kBlockM;
      int* const semaphore = semaphores + row_vector * (padded_rows / T::kBlockM) + query_tile;
      if (deterministic) {
        // (The lengths are read again here rather than kept in registers across the loop.)
        const auto batch = static_cast<std::int64_t>(blockIdx.z);
        const int turn = sm90_dq_turn(params.mask, static_cast<int>(blockIdx.x), query_tile, T::kBlockM, T::kBlockN,
                                      params.length_q(batch), params.length_k(batch));
        if (thread == 0) {
          while (ld_acquire_gpu(semaphore) < T::kConsumers * turn) {
          }
        }
        named_barrier_sync(kDqBarrier + consumer, 128);
      }
#pragma unroll
      for (int i = 0; i < T::kDqColumns / 2; i += 2) {
        const int row = T::kWarpKeys * warp + lane / 4 + 8 * ((i >> 1) & 1);
        red_add_global_v2(part + row * T::kDqColumns + 8 * (i >> 2) + lane_column, d_query[i], d_query[i + 1]);
      }
      if (deterministic) {
        named_barrier_sync(kDqBarrier + consumer, 128);  // the warpgroup's adds precede the release
        if (thread == 0) red_release_gpu_add(semaphore, 1);
      }
    } else if constexpr (T::kStagedDq) {
      // Staged in shared memory in the block's layout, then one bulk
      // reduce-add of its kDqPartBytes by thread 0; the staging's next writes
      // wait for its reads (bulk_wait_group_read before the next tile's kDsBarrier).
      const std::uint32_t staging = cta.dq_part(consumer);
#pragma unroll
      for (int i = 0; i < T::kDqColumns / 2; i += 2) {
        const int row = T::kWarpKeys * warp + lane / 4 + 8 * ((i >> 1) & 1);
        const auto offset = static_cast<std::uint32_t>(4 * (row * T::kDqColumns + 8 * (i >> 2) + lane_column));
        store_shared_u32(staging + offset, float_bits(d_query[i]));
        store_shared_u32(staging + offset + 4, float_bits(d_query[i + 1]));
      }
      fence_proxy_async();
      named_barrier_sync(kDqBarrier + consumer, 128);
      if (thread == 0) {
        bulk_reduce_add_global(part, staging, T::kDqPartBytes);
        bulk_commit_group();
      }
    }
  }
  if (thread == 0) bulk_wait_group<0>();  // the last reduction is done before the epilogue's bulk group

  // Epilogue: the other warpgroup's last products may still read K and V;
  // then dK and dV staged over this consumer's part of the K and V tiles.
  named_barrier_sync(kDsBarrier, kMmaThreads);
#pragma unroll
  for (int i = 0; i < T::kConsumerDims / 2; ++i) {
    d_key[i] *= params.scale;
    d_value[i] *= keep_scale;
  }
  const auto own_part = static_cast<std::uint32_t>(consumer_dim / 64 * T::kKeyPanelBytes + key_row * T::kRowBytes);
  store_accumulators_with_tma<Element, T::kConsumerDims>(d_key, cta.k_tile() + own_part, T::kKeyPanelBytes,
                                                         kEpilogueBarrier + consumer, &maps.d_k, consumer_dim,
                                                         consumer_key, cta.kv_head, cta.batch);
  store_accumulators_with_tma<Element, T::kConsumerDims>(d_value, cta.v_tile() + own_part, T::kKeyPanelBytes,
                                                         kEpilogueBarrier + consumer, &maps.d_v, consumer_dim,
                                                         consumer_key, cta.kv_head, cta.batch);
}

template <typename Element, int kHeadDim, bool kDropout>
__global__ void __launch_bounds__(Sm90BackwardTraits<kHeadDim>::kThreads, 1)
    flash_sm90_backward_kernel(const __grid_constant__ Sm90BackwardMaps maps, AttentionParams params,
                               float* __restrict__ dq_accumulator, int* __restrict__ semaphores, int padded_rows,
                               float scale_log2, bool deterministic) {
  using T = Sm90BackwardTraits<kHeadDim>;
  const Sm90BackwardCta<kHeadDim> cta(params);
  if (threadIdx.x == 0) cta.init_barriers();
  __syncthreads();

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (warpgroup == 0) {
    setmaxnreg_dec<T::kProducerRegisters>();
    if (threadIdx.x < 32 && elect_one_sync() && !cta.tiles.empty()) load_tiles(cta, params, maps);
    return;
  }
  setmaxnreg_inc<T::kConsumerRegisters>();
  consume_query_tiles<Element, kHeadDim, kDropout>(cta, params, maps, warpgroup - 1, scale_log2, dq_accumulator,
                                                   semaphores, padded_rows, deterministic);
}

// ---- 1. prepare and 3. convert: per query row ----------------------------------------
// A CTA of kFlashBackwardRowThreads threads takes kFlashBackwardRowsPerBlock
// rows, kFlashBackwardRowLanes lanes per row, each lane 8-element chunks.

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kFlashBackwardRowThreads)
    flash_sm90_backward_prepare_kernel(AttentionParams params, const Element* __restrict__ out,
                                       const Element* __restrict__ d_out, const float* __restrict__ lse,
                                       float* __restrict__ lse_log2, float* __restrict__ delta,
                                       float* __restrict__ dq_accumulator, int* __restrict__ semaphores,
                                       int padded_rows) {
  using T = Sm90BackwardTraits<kHeadDim>;
  const BackwardRowLane lane = backward_row_lane();
  const auto [row, part, head, batch] = lane;
  const std::int64_t row_vector = static_cast<std::int64_t>(batch) * params.heads + head;
  const bool inside = row < params.seqlen_q;
  const float sum = output_gradient_dot<Element, kHeadDim>(params, out, d_out, lane);
  if (part == 0) {
    delta[row_vector * padded_rows + row] = sum;
    const float row_lse = inside ? lse[row_vector * params.seqlen_q + row] : 0.0f;
    lse_log2[row_vector * padded_rows + row] = exp_reference(row_lse) * kLog2e;
    if (row % T::kBlockM == 0) semaphores[row_vector * (padded_rows / T::kBlockM) + row / T::kBlockM] = 0;
  }
  float* const block = dq_accumulator + row_vector * padded_rows * kHeadDim;
#pragma unroll
  for (int pass = 0; pass < kHeadDim / (8 * kFlashBackwardRowLanes); ++pass) {
    const int column = row_chunk_column(pass, part);
    float4* const chunk = reinterpret_cast<float4*>(block + sm90_dq_offset(row, column, T::kBlockM, kHeadDim));
    chunk[0] = chunk[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kFlashBackwardRowThreads)
    flash_sm90_backward_convert_kernel(AttentionParams params, const float* __restrict__ dq_accumulator,
                                       Element* __restrict__ d_q, int padded_rows) {
  using T = Sm90BackwardTraits<kHeadDim>;
  const auto [row, part, head, batch] = backward_row_lane();
  if (row >= params.seqlen_q) return;
  const float* const block =
      dq_accumulator + (static_cast<std::int64_t>(batch) * params.heads + head) * padded_rows * kHeadDim;
  Element* const d_q_row = d_q + params.q_offset(batch, row, head);
#pragma unroll
  for (int pass = 0; pass < kHeadDim / (8 * kFlashBackwardRowLanes); ++pass) {
    const int column = row_chunk_column(pass, part);
    const float4* const chunk =
        reinterpret_cast<const float4*>(block + sm90_dq_offset(row, column, T::kBlockM, kHeadDim));
    store_scaled_chunk(d_q_row + column, chunk[0], chunk[1], params.scale);
  }
}

// ---- launch ----------------------------------------------------------------------------

// LSE·log2(e) or D of the workspace as a 2-d fp32 tensor map (row, b·H + h),
// read in boxes of one query tile's rows.
CUtensorMap row_vector_map(const float* data, std::int64_t padded_rows, std::int64_t row_vectors,
                           std::uint32_t block_m, const char* what) {
  TensorMapShape shape;
  shape.rank = 2;
  shape.dims[0] = static_cast<std::uint64_t>(padded_rows);
  shape.dims[1] = static_cast<std::uint64_t>(row_vectors);
  shape.byte_strides[0] = 4 * static_cast<std::uint64_t>(padded_rows);
  shape.box[0] = block_m;
  shape.box[1] = 1;
  return make_tensor_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, data, shape, CU_TENSOR_MAP_SWIZZLE_NONE, what);
}

template <typename Element, int kHeadDim>
void launch_backward(const AttentionParams& params, const AttentionBuffers& buffers, void* backward_workspace,
                     bool deterministic, cudaStream_t stream) {
  using T = Sm90BackwardTraits<kHeadDim>;
  constexpr bool kBf16 = std::is_same_v<Element, __nv_bfloat16>;
  const Sm90BackwardWorkspace layout =
      sm90_backward_workspace(params.batch, params.heads, params.seqlen_q, T::kBlockM, kHeadDim);
  auto* const workspace = static_cast<unsigned char*>(backward_workspace);
  auto* const lse_log2 = reinterpret_cast<float*>(workspace + layout.lse_log2);
  auto* const delta = reinterpret_cast<float*>(workspace + layout.delta);
  auto* const dq_accumulator = reinterpret_cast<float*>(workspace + layout.dq_accumulator);
  auto* const semaphores = reinterpret_cast<int*>(workspace + layout.semaphores);
  const auto padded_rows = static_cast<int>(sm90_backward_padded_rows(params.seqlen_q, T::kBlockM));

  const dim3 row_grid(static_cast<unsigned>(padded_rows / kFlashBackwardRowsPerBlock),
                      static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  launch_kernel(&flash_sm90_backward_prepare_kernel<Element, kHeadDim>, row_grid, kFlashBackwardRowThreads, 0, stream,
                params, static_cast<const Element*>(buffers.out.data), static_cast<const Element*>(buffers.d_out.data),
                static_cast<const float*>(buffers.lse.data), lse_log2, delta, dq_accumulator, semaphores, padded_rows);
  ATTNBENCH_CUDA_CHECK_LAUNCH();

  // Built in place (a CUtensorMap must stay 64-byte aligned; a temporary
  // copied into the struct need not be, at -O0).
  const Sm90BackwardMaps maps{
      attention_tensor_map(buffers.q.data, params.q_strides, params.seqlen_q, params.heads, params.batch, kHeadDim,
                           T::kBlockM, kBf16, "Q"),
      attention_tensor_map(buffers.k.data, params.kv_strides, params.seqlen_k, params.kv_heads, params.batch,
                           kHeadDim, T::kBlockN, kBf16, "K"),
      attention_tensor_map(buffers.v.data, params.kv_strides, params.seqlen_k, params.kv_heads, params.batch,
                           kHeadDim, T::kBlockN, kBf16, "V"),
      attention_tensor_map(buffers.d_out.data, params.q_strides, params.seqlen_q, params.heads, params.batch,
                           kHeadDim, T::kBlockM, kBf16, "dO"),
      attention_tensor_map(buffers.d_k.data, params.kv_strides, params.seqlen_k, params.kv_heads, params.batch,
                           kHeadDim, T::kConsumerKeys, kBf16, "dK"),
      attention_tensor_map(buffers.d_v.data, params.kv_strides, params.seqlen_k, params.kv_heads, params.batch,
                           kHeadDim, T::kConsumerKeys, kBf16, "dV"),
      row_vector_map(lse_log2, padded_rows, params.batch * params.heads, T::kBlockM, "LSE·log2(e)"),
      row_vector_map(delta, padded_rows, params.batch * params.heads, T::kBlockM, "D")};
  auto* const with_dropout = &flash_sm90_backward_kernel<Element, kHeadDim, true>;
  auto* const without_dropout = &flash_sm90_backward_kernel<Element, kHeadDim, false>;
  static const bool shared_limit_raised = [with_dropout, without_dropout] {
    for (auto* const instance : {with_dropout, without_dropout}) {
      ATTNBENCH_CUDA_CHECK(
          cudaFuncSetAttribute(instance, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
    }
    return true;
  }();
  auto* const kernel = params.dropout.enabled ? with_dropout : without_dropout;
  (void)shared_limit_raised;
  const dim3 grid(static_cast<unsigned>((params.seqlen_k + T::kBlockN - 1) / T::kBlockN),
                  static_cast<unsigned>(params.kv_heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(static_cast<double>(params.scale) * 1.4426950408889634);
  launch_kernel(kernel, grid, dim3(T::kThreads), T::kSharedBytes, stream, maps, params, dq_accumulator, semaphores,
                padded_rows, scale_log2, deterministic);
  ATTNBENCH_CUDA_CHECK_LAUNCH();

  const dim3 convert_grid(
      static_cast<unsigned>((params.seqlen_q + kFlashBackwardRowsPerBlock - 1) / kFlashBackwardRowsPerBlock),
      static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  launch_kernel(&flash_sm90_backward_convert_kernel<Element, kHeadDim>, convert_grid, kFlashBackwardRowThreads, 0,
                stream, params, dq_accumulator, static_cast<Element*>(buffers.d_q.data), padded_rows);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

[[noreturn]] void unlisted_head_dim(std::int64_t head_dim) {
  throw std::invalid_argument("cuda.flash.sm90's backward has no instance for head_dim " + std::to_string(head_dim));
}

template <typename Element>
void launch_for_head_dim(const AttentionParams& params, const AttentionBuffers& buffers, void* backward_workspace,
                         bool deterministic, cudaStream_t stream) {
  const bool launched = Sm90BackwardHeadDims::dispatch(params.head_dim, [&](auto head_dim) {
    launch_backward<Element, decltype(head_dim)::value>(params, buffers, backward_workspace, deterministic, stream);
  });
  if (!launched) unlisted_head_dim(params.head_dim);
}

}  // namespace

FlashSm90BackwardShape flash_sm90_backward_shape(int head_dim) {
  FlashSm90BackwardShape shape{};
  const bool listed = Sm90BackwardHeadDims::dispatch(head_dim, [&](auto listed_head_dim) {
    using T = Sm90BackwardTraits<decltype(listed_head_dim)::value>;
    shape = FlashSm90BackwardShape{T::kBlockM,      T::kBlockN,    T::kConsumers, T::kStages,
                                   T::kSharedBytes, T::kSplitKeys, T::kDqColumns, T::kStagedDq};
  });
  if (!listed) unlisted_head_dim(head_dim);
  return shape;
}

std::size_t flash_sm90_backward_workspace_bytes(const Problem& problem) {
  const FlashSm90BackwardShape shape = flash_sm90_backward_shape(static_cast<int>(problem.head_dim));
  return sm90_backward_workspace(problem.batch, problem.heads, problem.seqlen_q, shape.block_m,
                                 static_cast<int>(problem.head_dim))
      .total;
}

void launch_flash_sm90_backward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                                void* backward_workspace, bool deterministic, cudaStream_t stream) {
  if (dtype == InputDType::fp16) {
    launch_for_head_dim<__half>(params, buffers, backward_workspace, deterministic, stream);
  } else {
    launch_for_head_dim<__nv_bfloat16>(params, buffers, backward_workspace, deterministic, stream);
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
