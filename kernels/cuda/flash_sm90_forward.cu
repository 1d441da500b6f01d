// The forward of cuda.flash.sm90: fused attention in the FlashAttention-3
// structure on Hopper's instructions (TMA, mbarrier, wgmma, setmaxnreg).
// O = dropout(softmax(τ·Q·Kᵀ + mask))·V and LSE, nothing N×N in memory.
//
// Tiling (Sm90Traits, kernels/cuda/flash_sm90_geometry.hpp): one CTA per
// (query tile of 128 rows, head, batch), the heaviest causal tile first;
// three warpgroups of 128 threads.
//   - Warpgroup 0, the producer, gives registers away (setmaxnreg.dec 24); one
//     elected thread of its first warp issues every TMA load: the CTA's Q tile
//     once, then the K and V tiles of block_n keys (128; 80 at d256) the
//     CTA's rows can see, through
//     a pipeline of kStages stages. Tiles are stored as panels of 64 columns
//     (128 bytes per row, 128-byte swizzle), head_dim / 64 panels per tile.
//     Rows past the end of the tensor arrive as zeros (TMA's out-of-bound fill).
//   - Warpgroups 1 and 2, the consumers, take registers (setmaxnreg.inc 240);
//     each owns 64 query rows. Per key tile: S = Q·Kᵀ with wgmma m64n{block_n}k16
//     (Q and K from K-major swizzled descriptors, head_dim / 16 steps, fp32
//     accumulators), then, on the accumulator fragment in registers, the scale
//     into base 2, the mask predicates (only on tiles that are not wholly
//     visible to the warpgroup's rows), the online softmax (row maxima and sums
//     over the quads, kernels/cuda/fragment_softmax.hpp); then, once the
//     previous P·V is done with P's registers, dropout per the Philox contract
//     and P rounded to fp16/bf16 in registers as wgmma's A
//     operand and O += P·V runs as wgmma m64n{head_dim}k16 in the RS form, V an
//     MN-major operand (V is stored [key, dim]: dim, the N of this product, is
//     the contiguous one) read through the descriptor's transpose.
//   - Overlap inside a consumer (Sm90Schedule::softmax_overlaps_pv, on by
//     default): S of tile j + 1 is issued before O += P(j)·V(j);
//     wgmma.wait_group 1 then waits for S alone, and the softmax of tile j + 1
//     runs while P·V is in flight. Its rescale of O and the packing of
//     P(j + 1) wait for wgmma.wait_group 0, since O and P(j) are that
//     product's registers. Off, each tile's S, softmax and P·V run one after
//     the other. The loop runs every tile but the last, whose P·V follows it,
//     so no wait sits behind a test of whether a next tile exists: ptxas then
//     keeps the waits' counts (WARPGROUP.DEPBAR 1) instead of serialising
//     every wgmma (C7514). At d256 the three products' registers do not fit
//     beside each other, and the consumers always run in order
//     (Sm90Traits::kSoftmaxOverlapFits).
//   - Ping-pong between the consumers (Sm90Schedule::pingpong, on by default):
//     the GEMMs a consumer issues between two softmaxes are a turn, and the consumers
//     take turns round robin, so one consumer's softmax runs while the tensor
//     cores work on the other's products. Both switches are run-time flags of
//     one kernel instance, so a GPU run measures what each is worth.
//   - Epilogue, per consumer: O divided by the row sum once (times 1/(1-p)
//     with dropout), rounded and written with stmatrix over the consumer's own
//     rows of the Q tile, which only its finished S products read, in the Q
//     loads' layout; then one TMA store per 64-column panel (the tensor's
//     bounds clip the rows past seqlen_q, so every tile is stored whole; rows
//     of a padded sequence past its length get the zeros they computed). LSE
//     in natural log, plain stores. Rows with no visible key get zeros and
//     LSE −∞.
//
// Structure: the kernel is written from the Hopper blocks (docs/cudasim.md,
// "Writing a Hopper kernel from the blocks"): shared memory is
// Sm90Traits::Shared, the K/V stages go round an MbarrierPipeline
// (kernels/cuda/hopper_pipeline.hpp), the epilogue is
// store_accumulators_with_tma (hopper_epilogue.hpp), and the roles are
// load_tiles (producer), consume_key_tiles (a consumer's key loop) and
// store_output (its epilogue).
//
// Synchronisation. mbarriers, all initialised by thread 0 before the
// __syncthreads that precedes the roles' split:
//   - q_full (1 arrival + the Q tile's bytes): the producer arrives with
//     expect_tx and the TMA loads complete it; each consumer waits for phase 0.
//   - the kv ring, two full barriers per stage (part kKeys, part kValues: 1
//     arrival + the tile's bytes each) and one empty barrier (one arrival per
//     consumer warpgroup): the producer acquires a stage and arms K's and V's
//     barrier before their loads; the consumers wait on K's before S and on
//     V's before P·V, so S can start before V has landed, and thread 0 of
//     each releases the stage once its wgmma.wait_group 0 has covered both
//     products reading it.
// Every consumer waits and arrives on every stage of the CTA's key range, so
// the two stay in step with the producer even where one has no visible key.
// Named barriers (Sm90NamedBarrier), with the ping-pong: consumer c waits
// (bar.sync, 256 threads) on kTurnBarrier + c before each turn; the consumer
// before it arrives there (bar.arrive) once its turn's wgmma are issued. The
// last consumer arrives on consumer 0's barrier before its first turn, and
// consumer 0 waits once more after its last, so both barriers end with every
// instance complete. In the epilogue, each consumer's 128 threads synchronise
// on kEpilogueBarrier + c between their stmatrix writes and the TMA store.
//
// Not yet in this kernel: FA3's wider tiles for d64 and d128 (192 x 128,
// 128 x 176; why not, in Sm90Traits), skipping per consumer the tiles its own
// rows cannot see, the backward.
#include "kernels/cuda/flash_sm90_forward.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"
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

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// The named barriers (bar.sync ids; 0 is __syncthreads's), each a first id
// to which the consumer's index is added.
enum Sm90NamedBarrier : int {
  // Consumer c waits for its ping-pong turn on kTurnBarrier + c, its 128
  // threads waiting and the previous consumer's 128 arriving.
  kTurnBarrier = 1,
  // Consumer c's 128 threads before its TMA store of O.
  kEpilogueBarrier = 3,
};
constexpr int kTurnThreads = 256;

// What every role of a CTA knows: where its rows are, the key tiles they can
// see, and the 32-bit shared addresses of its storage (Sm90Traits::Shared).
template <int kHeadDim>
struct Sm90Cta {
  using T = Sm90Traits<kHeadDim>;
  using Shared = typename T::Shared;
  using Pipeline = MbarrierPipeline<T::kStages, 2>;
  static_assert(kTurnBarrier + T::kConsumers <= kEpilogueBarrier && kEpilogueBarrier + T::kConsumers <= 16,
                "each consumer's named barriers apart, ids up to 15");

  std::uint32_t shared;
  int head, kv_head, batch, len_q, len_k, cta_row;
  KeyTileRange tiles;

  __device__ __forceinline__ explicit Sm90Cta(const AttentionParams& params)
      : shared(shared_storage_base()),
        head(static_cast<int>(blockIdx.y)),
        kv_head(static_cast<int>(params.kv_head_of(head))),
        batch(static_cast<int>(blockIdx.z)),
        len_q(static_cast<int>(params.length_q(batch))),
        len_k(static_cast<int>(params.length_k(batch))),
        cta_row(flash_query_tile_of_block(static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)) * T::kBlockM),
        tiles(flash_key_tiles(params.mask, cta_row, cta_row + T::kBlockM, len_q, len_k, T::kBlockN)) {}

  __device__ __forceinline__ std::uint32_t at(std::size_t offset) const {
    return shared + static_cast<std::uint32_t>(offset);
  }
  __device__ __forceinline__ std::uint32_t q_tile() const { return at(offsetof(Shared, q)); }
  __device__ __forceinline__ std::uint32_t k_tile(int stage) const {
    return at(offsetof(Shared, k)) + static_cast<std::uint32_t>(stage * T::kKeyTileBytes);
  }
  __device__ __forceinline__ std::uint32_t v_tile(int stage) const {
    return at(offsetof(Shared, v)) + static_cast<std::uint32_t>(stage * T::kKeyTileBytes);
  }
  __device__ __forceinline__ std::uint32_t q_full() const { return at(offsetof(Shared, q_full)); }
  __device__ __forceinline__ Pipeline kv() const { return Pipeline(at(offsetof(Shared, kv))); }

  // By thread 0 before the __syncthreads that precedes the roles' split.
  __device__ __forceinline__ void init_barriers() const {
    mbarrier_init(q_full(), 1);
    kv().init(T::kConsumers);
    fence_mbarrier_init();
  }
};

// The producer, one elected thread: the CTA's Q tile once, then the K and V
// tiles of its key range through the kv ring, K and V of a stage each on its
// own full barrier, panel by panel.
template <int kHeadDim>
__device__ __forceinline__ void load_tiles(const Sm90Cta<kHeadDim>& cta, const CUtensorMap* q_map,
                                           const CUtensorMap* k_map, const CUtensorMap* v_map) {
  using T = Sm90Traits<kHeadDim>;
  mbarrier_arrive_expect_tx(cta.q_full(), T::kQBytes);
  for (int panel = 0; panel < T::kPanels; ++panel) {
    tma_load(cta.q_tile() + panel * T::kQPanelBytes, q_map, cta.q_full(), 64 * panel, cta.cta_row, cta.head,
             cta.batch);
  }
  const auto kv = cta.kv();
  typename Sm90Cta<kHeadDim>::Pipeline::State state;
  for (int tile = cta.tiles.first; tile < cta.tiles.end; ++tile, state.advance()) {
    kv.producer_acquire(state);
    const std::uint32_t k_full = kv.producer_arm(state, T::kKeyTileBytes, T::kKeys);
    for (int panel = 0; panel < T::kPanels; ++panel) {
      tma_load(cta.k_tile(state.stage()) + panel * T::kKeyPanelBytes, k_map, k_full, 64 * panel, tile * T::kBlockN,
               cta.kv_head, cta.batch);
    }
    const std::uint32_t v_full = kv.producer_arm(state, T::kKeyTileBytes, T::kValues);
    for (int panel = 0; panel < T::kPanels; ++panel) {
      tma_load(cta.v_tile(state.stage()) + panel * T::kKeyPanelBytes, v_map, v_full, 64 * panel, tile * T::kBlockN,
               cta.kv_head, cta.batch);
    }
  }
}

// The epilogue of a consumer: O = output · keep_scale / l (zeros for a row
// without keys), LSE with plain stores, then O through the shared epilogue
// (hopper_epilogue.hpp), staged over the consumer's own rows of the Q tile,
// which only its finished S products read, in the Q loads' layout.
template <typename Element, int kHeadDim, bool kDropout>
__device__ __forceinline__ void store_output(const Sm90Cta<kHeadDim>& cta, const AttentionParams& params,
                                             int consumer, int row0, float (&output)[kHeadDim / 2],
                                             SoftmaxRowState<float> (&state)[2], const CUtensorMap* o_map,
                                             float* __restrict__ lse) {
  using T = Sm90Traits<kHeadDim>;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  float normalizer[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + 8 * half;
    state[half].sum = quad_sum(state[half].sum);
    const float keep_scale = kDropout ? params.dropout.keep_scale : 1.0f;
    normalizer[half] = state[half].sum > 0.0f ? keep_scale / state[half].sum : 0.0f;
    if (row < params.seqlen_q && lane % 4 == 0) {
      lse[(static_cast<std::int64_t>(cta.batch) * params.heads + cta.head) * params.seqlen_q + row] =
          online_softmax_lse<float, FastExp2>(state[half]) * 0.6931471805599453f;  // log2 to natural log
    }
  }
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) output[i] *= normalizer[(i >> 1) & 1];
  const int consumer_row = cta.cta_row + T::kConsumerRows * consumer;
  store_accumulators_with_tma<Element, kHeadDim>(
      output, cta.q_tile() + static_cast<std::uint32_t>(T::kConsumerRows * consumer * T::kRowBytes),
      T::kQPanelBytes, kEpilogueBarrier + consumer, o_map, 0, consumer_row, cta.head, cta.batch);
}

// A consumer warpgroup: its 64 query rows through the CTA's key tiles, the
// accumulators in registers, then its epilogue. The steps of a tile are the
// lambdas below; the key loop at the end puts them in the schedule's order.
template <typename Element, int kHeadDim, bool kDropout>
__device__ void consume_key_tiles(const Sm90Cta<kHeadDim>& cta, const AttentionParams& params, int consumer,
                                  const float& scale_log2, const Sm90Schedule& schedule, const CUtensorMap* o_map,
                                  float* __restrict__ lse) {
  using T = Sm90Traits<kHeadDim>;
  using State = typename Sm90Cta<kHeadDim>::Pipeline::State;
  const KeyTileRange tiles = cta.tiles;
  const auto kv = cta.kv();
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const int warp = thread / 32, lane = thread % 32;
  const int consumer_row = cta.cta_row + T::kConsumerRows * consumer;
  const int row0 = consumer_row + 16 * warp + lane / 4;  // this thread's rows: row0 and row0 + 8
  const int lane_column = 2 * (lane % 4);                // its first key in each 8-key group
  int visible_begin[2], visible_end[2];
  const int len_q = cta.len_q, len_k = cta.len_k;  // the lambdas capture these, not the whole CTA
  fragment_visible_keys(params.mask, row0, len_q, len_k, visible_begin, visible_end);

  // Accumulators in the m64nNk16 layout: element i of thread (warp, lane) is row
  // 16·warp + lane / 4 + 8·((i >> 1) & 1), column 8·(i >> 2) + 2·(lane % 4) + (i & 1).
  float output[kHeadDim / 2];  // (64, head_dim) per consumer
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) output[i] = 0.0f;
  float scores[T::kBlockN / 2];  // (64, block_n)
  std::uint32_t p[T::kBlockN / 16][4];  // P(j) as wgmma A fragments, one per 16 keys
  SoftmaxRowState<float> state[2];

  // S = Q·Kᵀ of the stage's K tile for the warpgroup's 64 rows, issued and committed as one group.
  const auto issue_scores = [&](State stage) {
    kv.consumer_wait(stage, T::kKeys);
    wgmma_fence_operand(scores);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kHeadDim / 16; ++step) {
      wgmma_ss<T::kBlockN, Element>(
          scores, k_major_descriptor(cta.q_tile(), T::kQPanelBytes, T::kConsumerRows * consumer, step),
          k_major_descriptor(cta.k_tile(stage.stage()), T::kKeyPanelBytes, 0, step), step > 0);
    }
    wgmma_commit_group();
    wgmma_fence_operand(scores);
  };
  // O += P·V of the stage's V tile, issued and committed as one group.
  const auto issue_output = [&](State stage) {
    kv.consumer_wait(stage, T::kValues);
    wgmma_fence_operand(output);
    wgmma_fence_operand(p);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < T::kBlockN / 16; ++step) {
      wgmma_rs<kHeadDim, Element, Major::mn>(
          output, p[step], mn_major_descriptor(cta.v_tile(stage.stage()), T::kKeyPanelBytes, step), true);
    }
    wgmma_commit_group();
    wgmma_fence_operand(output);
    wgmma_fence_operand(p);
  };
  // A turn of the ping-pong: wait for the previous consumer to have issued its
  // GEMMs, issue this consumer's, pass the turn on to the next.
  const auto await_turn = [&] {
    if (schedule.pingpong) named_barrier_sync(kTurnBarrier + consumer, kTurnThreads);
  };
  const auto pass_turn = [&] {
    if (schedule.pingpong) named_barrier_arrive(kTurnBarrier + (consumer + 1) % T::kConsumers, kTurnThreads);
  };
  // wgmma.wait_group, then the registers of the products it covers are pinned after it.
  const auto wait_for_scores = [&] {  // all but the last group (P·V)
    wgmma_wait_group<1>();
    wgmma_fence_operand(scores);
  };
  const auto wait_for_all = [&] {
    wgmma_wait_group<0>();
    wgmma_fence_operand(scores);
    wgmma_fence_operand(output);
    wgmma_fence_operand(p);
  };

  // The softmax of a tile's finished S, in place: scale into base 2, mask where the
  // warpgroup's rows do not see the whole tile, new row maxima, P = exp2(S - m),
  // row sums. Returns through `factor` the rescale O needs, which the caller
  // applies once no P·V product is in flight on O.
  const auto softmax = [&](int tile, float (&factor)[2]) {
    const int first_key = tile * T::kBlockN;
    scale_and_mask_scores<T::kBlockN / 8>(
        [&](int n, int e) -> float& { return scores[4 * n + e]; },
        tile_fully_visible(params.mask, consumer_row, consumer_row + T::kConsumerRows, first_key,
                           first_key + T::kBlockN, len_q, len_k),
        visible_begin, visible_end, first_key, lane_column, scale_log2);
    float tile_max[2] = {kNegativeInfinity, kNegativeInfinity};
#pragma unroll
    for (int i = 0; i < T::kBlockN / 2; ++i) tile_max[(i >> 1) & 1] = fmaxf(tile_max[(i >> 1) & 1], scores[i]);
    float reference[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      factor[half] = online_softmax_advance<float, FastExp2>(state[half], quad_max(tile_max[half]));
      reference[half] = exp_reference(state[half].max);
    }
#pragma unroll
    for (int i = 0; i < T::kBlockN / 2; ++i) {
      const int half = (i >> 1) & 1;
      scores[i] = FastExp2::exp(scores[i] - reference[half]);
      state[half].sum += scores[i];
    }
  };

  // O *= factor, dropout on P (after the row sums, which count every
  // element), then P as the A operand: register r of key step t holds
  // accumulator elements 8t + 2r and 8t + 2r + 1 of S. The dropout waits for
  // this step, when the previous P·V has finished with P(j)'s registers, so that
  // its Philox rounds do not add to the registers the overlapped softmax holds.
  const auto rescale_and_pack = [&](int tile, const float (&factor)[2]) {
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) output[i] *= factor[(i >> 1) & 1];
    if constexpr (kDropout) {
      const int first_key = tile * T::kBlockN;
      // The keep bits of the tile first (a rolled loop keeps Philox's registers
      // out of the unrolled code), then the zeros.
      static_assert(T::kBlockN / 2 <= 64, "one keep bit per score element of the thread");
      std::uint64_t keep = 0;
#pragma unroll 1
      for (int group = 0; group < T::kBlockN / 8; ++group) {
        keep |= std::uint64_t{dropout_keep_bits(params.dropout, static_cast<std::uint32_t>(cta.batch),
                                                static_cast<std::uint32_t>(cta.head), row0, first_key + 8 * group,
                                                lane)}
                << (4 * group);
      }
#pragma unroll
      for (int i = 0; i < T::kBlockN / 2; ++i) {
        if (!((keep >> i) & 1u)) scores[i] = 0.0f;
      }
    }
#pragma unroll
    for (int step = 0; step < T::kBlockN / 16; ++step) {
#pragma unroll
      for (int r = 0; r < 4; ++r) p[step][r] = pack_pair<Element>(scores[8 * step + 2 * r], scores[8 * step + 2 * r + 1]);
    }
  };

  // The key loop. With the overlap, S of tile j + 1 is issued before
  // O += P(j)·V(j) and its softmax runs while that product is in flight
  // (wgmma.wait_group 1); without, each tile's S, softmax and P·V run one after
  // the other. The issues between two softmaxes are one turn of the ping-pong.
  // The last consumer hands consumer 0 its first turn, and consumer 0 takes
  // the turn the last consumer passes after its final one, so every barrier
  // instance completes. `stage` is the ring's state for the tile whose P·V
  // comes next; S runs a tile ahead of it, on stage.next().
  if (!tiles.empty() && consumer == T::kConsumers - 1) pass_turn();
  State stage;
  if (!tiles.empty()) {
    mbarrier_wait_parity(cta.q_full(), 0);
    float factor[2];
    await_turn();
    issue_scores(stage);
    pass_turn();
    wait_for_all();
    softmax(tiles.first, factor);
    rescale_and_pack(tiles.first, factor);
  }
  // Every tile but the last has a next one (the loop holds no test for it, so
  // each wgmma.wait_group sees one known set of groups in flight); the last
  // tile's P·V follows the loop.
  for (int tile = tiles.first; tile + 1 < tiles.end; ++tile, stage.advance()) {
    float factor[2];
    if (T::kSoftmaxOverlapFits && schedule.softmax_overlaps_pv) {
      await_turn();
      issue_scores(stage.next());  // fences the writes of O and P above
      issue_output(stage);
      pass_turn();
      wait_for_scores();  // S(j + 1) is done; P(j)·V(j) may still run
      softmax(tile + 1, factor);
      wait_for_all();
    } else {
      await_turn();
      issue_output(stage);
      wait_for_all();
      issue_scores(stage.next());
      pass_turn();
      wait_for_all();
      softmax(tile + 1, factor);
    }
    if (thread == 0) kv.consumer_release(stage);  // both products reading it are done
    rescale_and_pack(tile + 1, factor);
  }
  if (!tiles.empty()) {
    await_turn();
    issue_output(stage);
    pass_turn();
    wait_for_all();
    if (thread == 0) kv.consumer_release(stage);
  }
  if (!tiles.empty() && consumer == 0) await_turn();

  store_output<Element, kHeadDim, kDropout>(cta, params, consumer, row0, output, state, o_map, lse);
}

template <typename Element, int kHeadDim, bool kDropout>
__global__ void __launch_bounds__(Sm90Traits<kHeadDim>::kThreads, 1)
    flash_sm90_forward_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap o_map,
                              AttentionParams params, float* __restrict__ lse, float scale_log2,
                              Sm90Schedule schedule) {
  using T = Sm90Traits<kHeadDim>;
  const Sm90Cta<kHeadDim> cta(params);
  if (threadIdx.x == 0) cta.init_barriers();
  __syncthreads();

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (warpgroup == 0) {
    setmaxnreg_dec<T::kProducerRegisters>();
    if (threadIdx.x < 32 && elect_one_sync() && !cta.tiles.empty()) load_tiles(cta, &q_map, &k_map, &v_map);
    return;
  }
  setmaxnreg_inc<T::kConsumerRegisters>();
  consume_key_tiles<Element, kHeadDim, kDropout>(cta, params, warpgroup - 1, scale_log2, schedule, &o_map, lse);
}

template <typename Element, int kHeadDim, bool kDropout>
void launch(const AttentionParams& params, const AttentionBuffers& buffers, Sm90Schedule schedule, cudaStream_t stream) {
  using T = Sm90Traits<kHeadDim>;
  constexpr bool kBf16 = std::is_same_v<Element, __nv_bfloat16>;
  const CUtensorMap q_map = attention_tensor_map(buffers.q.data, params.q_strides, params.seqlen_q, params.heads,
                                          params.batch, kHeadDim, T::kBlockM, kBf16, "Q");
  const CUtensorMap k_map = attention_tensor_map(buffers.k.data, params.kv_strides, params.seqlen_k, params.kv_heads,
                                          params.batch, kHeadDim, T::kBlockN, kBf16, "K");
  const CUtensorMap v_map = attention_tensor_map(buffers.v.data, params.kv_strides, params.seqlen_k, params.kv_heads,
                                          params.batch, kHeadDim, T::kBlockN, kBf16, "V");
  const CUtensorMap o_map = attention_tensor_map(buffers.out.data, params.q_strides, params.seqlen_q, params.heads,
                                          params.batch, kHeadDim, T::kConsumerRows, kBf16, "O");
  auto* const kernel = &flash_sm90_forward_kernel<Element, kHeadDim, kDropout>;
  static const bool shared_limit_raised = [kernel] {
    ATTNBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
    return true;
  }();
  (void)shared_limit_raised;
  const dim3 grid(static_cast<unsigned>((params.seqlen_q + T::kBlockM - 1) / T::kBlockM),
                  static_cast<unsigned>(params.heads), static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(static_cast<double>(params.scale) * 1.4426950408889634);
  launch_kernel(kernel, grid, dim3(T::kThreads), T::kSharedBytes, stream, q_map, k_map, v_map, o_map, params,
                static_cast<float*>(buffers.lse.data), scale_log2, schedule);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element, int kHeadDim>
void launch_for_dropout(const AttentionParams& params, const AttentionBuffers& buffers,
                        Sm90Schedule schedule, cudaStream_t stream) {
  if (params.dropout.enabled) {
    launch<Element, kHeadDim, true>(params, buffers, schedule, stream);
  } else {
    launch<Element, kHeadDim, false>(params, buffers, schedule, stream);
  }
}

[[noreturn]] void unlisted_head_dim(std::int64_t head_dim) {
  throw std::invalid_argument("cuda.flash.sm90 has no instance for head_dim " + std::to_string(head_dim));
}

template <typename Element>
void launch_for_head_dim(const AttentionParams& params, const AttentionBuffers& buffers,
                         Sm90Schedule schedule, cudaStream_t stream) {
  const bool launched = Sm90HeadDims::dispatch(params.head_dim, [&](auto head_dim) {
    launch_for_dropout<Element, decltype(head_dim)::value>(params, buffers, schedule, stream);
  });
  if (!launched) unlisted_head_dim(params.head_dim);
}

}  // namespace

FlashSm90Shape flash_sm90_shape(int head_dim) {
  FlashSm90Shape shape{};
  const bool listed = Sm90HeadDims::dispatch(head_dim, [&](auto listed_head_dim) {
    using T = Sm90Traits<decltype(listed_head_dim)::value>;
    shape = FlashSm90Shape{T::kBlockM, T::kBlockN, T::kConsumers, T::kStages, T::kSharedBytes, T::kSoftmaxOverlapFits};
  });
  if (!listed) unlisted_head_dim(head_dim);
  return shape;
}

void launch_flash_sm90_forward(const AttentionParams& params, InputDType dtype, const AttentionBuffers& buffers,
                               Sm90Schedule schedule, cudaStream_t stream) {
  if (dtype == InputDType::fp16) {
    launch_for_head_dim<__half>(params, buffers, schedule, stream);
  } else {
    launch_for_head_dim<__nv_bfloat16>(params, buffers, schedule, stream);
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
