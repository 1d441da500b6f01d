// cuda.flash.simple: the fused attention forward (DESIGN §1) written to be
// obviously correct rather than fast. It runs beside cuda.flash so that, on a
// GPU, a failure tells "the algorithm is wrong" from "the tensor-core fragment
// plumbing is wrong".
//
// Computes O = dropout(softmax(tau Q K^T + mask)) V and LSE (natural log), in
// fp32 arithmetic on fp16/bf16 inputs, without tensor cores, never writing S or P.
// Tiling (the index logic is kernels/cuda/flash_simple_geometry.hpp):
// - grid (ceil(Nq / 16), H, B); a CTA of 4 warps owns 16 consecutive query rows
//   of one (b, h), 4 rows per warp, and stages those rows of Q in shared memory;
// - it walks the 32-key tiles of K and V (kv head kv_head_of(h)) that overlap
//   visible_key_bound of its rows, staging each in shared memory in the input
//   dtype for its 4 warps; wholly masked tiles are never loaded;
// - scores: lane l computes, for each row of its warp, tau q·k of key
//   (tile start + l); keys outside the row's visible_keys score -inf;
// - per row, the online softmax in base e: the tile's row maximum by warp
//   shuffles, online_softmax_advance (rescaling l and the accumulator once per
//   tile), p = exp(s - m), l += the warp sum of p; only then dropout: p is kept
//   (and scaled by 1/(1 - p_drop)) iff the contract's Philox word for element
//   (b, h, i, j) of the padded grid says so;
// - P·V: each lane stores its key's p~ of every row of its warp in shared
//   memory; after a __syncwarp, lane l accumulates dims 2l and 2l + 1 (+ 64 per
//   pass) of each of the warp's rows over the tile's 32 keys, reading each p~ as
//   a broadcast;
// - at the end O = acc / l in the input dtype, zeros for rows without a visible
//   key (padded rows i >= Lq included), and LSE = m + log l (-inf for those).
// Head dims are multiples of 8 up to 256; one instance each is compiled for
// d <= 64, <= 128 and <= 256. Shared memory is static (42.5 KiB at most, d = 256);
// the rows of the K tile are padded by 16 bytes so that the lanes' 16-byte reads
// of 32 different keys do not conflict on banks.
// Assumes: Q, K, V and O start 16-byte aligned (the harness aligns to 256) and
// their strides are multiples of 8 elements (they are multiples of d).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "harness/cuda/cuda_check.hpp"
#include "harness/cuda/cuda_implementation.hpp"
#include "harness/measure/traffic_model.hpp"
#include "kernels/common/dropout.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/device_lengths.hpp"
#include "kernels/cuda/element_conversion.hpp"
#include "kernels/cuda/flash_simple_geometry.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

using namespace flash_simple;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr std::int64_t kMaxGridDimension = 65535;  // gridDim.y and gridDim.z

template <typename Element, int kCompiledDim>
struct alignas(16) SharedTiles {
  Element query[kBlockRows][kCompiledDim];                 // (kBlockRows, d): the CTA's rows of Q
  Element key[kBlockKeys][key_row_stride(kCompiledDim)];   // (kBlockKeys, d + pad): one K tile
  Element value[kBlockKeys][kCompiledDim];                 // (kBlockKeys, d): one V tile
  float probability[kWarps][kRowsPerWarp][kBlockKeys];      // p~ of the tile, per warp, row and key
};

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

// The two 16-bit elements packed in a 32-bit word (the lower address in the low
// half), as fp32.
template <typename Element>
__device__ __forceinline__ float2 unpack_pair(std::uint32_t word);
template <>
__device__ __forceinline__ float2 unpack_pair<__half>(std::uint32_t word) {
  return make_float2(to_float(__ushort_as_half(static_cast<unsigned short>(word & 0xffffu))),
                     to_float(__ushort_as_half(static_cast<unsigned short>(word >> 16))));
}
template <>
__device__ __forceinline__ float2 unpack_pair<__nv_bfloat16>(std::uint32_t word) {
  return make_float2(to_float(__ushort_as_bfloat16(static_cast<unsigned short>(word & 0xffffu))),
                     to_float(__ushort_as_bfloat16(static_cast<unsigned short>(word >> 16))));
}

// Eight consecutive elements of a 16-byte aligned shared row, as fp32.
template <typename Element>
__device__ __forceinline__ void load_chunk(const Element* source, float (&values)[kChunkElements]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(source);
  const std::uint32_t words[kChunkElements / 2] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int w = 0; w < kChunkElements / 2; ++w) {
    const float2 pair = unpack_pair<Element>(words[w]);
    values[2 * w] = pair.x;
    values[2 * w + 1] = pair.y;
  }
}

// Copies rows [first_row, first_row + rows) of one head's [seq, d] slice (row s at
// head + s * seq_stride) into a shared tile with `tile_stride` elements per row.
// Rows at or past `valid_rows` become zeros, so nothing past the valid lengths is
// read and no uninitialised shared memory reaches the arithmetic.
template <typename Element>
__device__ void stage_rows(const Element* head, std::int64_t seq_stride, std::int64_t first_row, int rows,
                           std::int64_t valid_rows, int head_dim, Element* tile, int tile_stride) {
  for (int chunk = static_cast<int>(threadIdx.x); chunk < tile_chunks(rows, head_dim); chunk += kThreads) {
    const TileChunk at = tile_chunk(chunk, head_dim);
    const std::int64_t row = first_row + at.row;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (row < valid_rows) value = *reinterpret_cast<const uint4*>(head + row * seq_stride + at.column);
    *reinterpret_cast<uint4*>(tile + at.row * tile_stride + at.column) = value;
  }
}

// The state of one warp's query rows.
template <int kCompiledDim>
struct WarpRows {
  std::int64_t row[kRowsPerWarp];             // positions i in the padded query grid
  KeyRange visible[kRowsPerWarp];             // the keys each row sees
  SoftmaxRowState<float> softmax[kRowsPerWarp];
  float2 accumulator[kRowsPerWarp][dim_passes(kCompiledDim)];  // this lane's dims of sum_j p~_j v_j
};

// score[r] = q_r · k for the key of this lane, over the staged tile.
template <typename Element, int kCompiledDim>
__device__ void dot_products(const SharedTiles<Element, kCompiledDim>& tiles, int warp, int lane, int head_dim,
                             float (&score)[kRowsPerWarp]) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) score[r] = 0.0f;
  for (int column = 0; column < head_dim; column += kChunkElements) {
    float key[kChunkElements];
    load_chunk(&tiles.key[lane][column], key);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      float query[kChunkElements];
      load_chunk(&tiles.query[block_row(warp, r)][column], query);  // the same address in every lane: a broadcast
#pragma unroll
      for (int e = 0; e < kChunkElements; ++e) score[r] = fmaf(query[e], key[e], score[r]);
    }
  }
}

// The dropped-out probabilities p~ of this lane's key from the tile's scores q·k,
// advancing each row's online softmax and rescaling its accumulator.
template <int kCompiledDim>
__device__ void softmax_step(const AttentionParams& params, std::int64_t b, std::int64_t h, std::int64_t key,
                             const float (&score)[kRowsPerWarp], WarpRows<kCompiledDim>& rows,
                             float (&probability)[kRowsPerWarp]) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const bool visible = key >= rows.visible[r].begin && key < rows.visible[r].end;
    const float s = visible ? params.scale * score[r] : -std::numeric_limits<float>::infinity();
    const float factor = online_softmax_advance(rows.softmax[r], warp_max(s));
    float p = ExpBaseE::exp(s - exp_reference(rows.softmax[r].max));
    rows.softmax[r].sum += warp_sum(p);
    if (params.dropout.enabled) {
      const PhiloxBlock words =
          dropout_words(params.dropout, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
                        static_cast<std::uint32_t>(rows.row[r]), static_cast<std::uint32_t>(key / 4));
      const std::uint32_t word = philox_word(words, static_cast<int>(key % 4));
      p = dropout_word_keeps(params.dropout, word) ? p * params.dropout.keep_scale : 0.0f;
    }
#pragma unroll
    for (int pass = 0; pass < dim_passes(kCompiledDim); ++pass) {
      rows.accumulator[r][pass].x *= factor;
      rows.accumulator[r][pass].y *= factor;
    }
    probability[r] = p;
  }
}

// accumulator[r] += sum over the tile's keys of p~[r][key] · v[key], for this
// lane's dims, with p~ shared through the warp's slice of tiles.probability.
template <typename Element, int kCompiledDim>
__device__ void accumulate_values(SharedTiles<Element, kCompiledDim>& tiles, int warp, int lane, int head_dim,
                                  const float (&probability)[kRowsPerWarp], WarpRows<kCompiledDim>& rows) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) tiles.probability[warp][r][lane] = probability[r];
  __syncwarp();
  for (int key = 0; key < kBlockKeys; ++key) {
    float2 value[dim_passes(kCompiledDim)];
#pragma unroll
    for (int pass = 0; pass < dim_passes(kCompiledDim); ++pass) {
      const int dim = dim_of(lane, pass);
      value[pass] = dim < head_dim
                        ? unpack_pair<Element>(*reinterpret_cast<const std::uint32_t*>(&tiles.value[key][dim]))
                        : make_float2(0.0f, 0.0f);
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float p = tiles.probability[warp][r][key];  // the same address in every lane: a broadcast
#pragma unroll
      for (int pass = 0; pass < dim_passes(kCompiledDim); ++pass) {
        rows.accumulator[r][pass].x = fmaf(p, value[pass].x, rows.accumulator[r][pass].x);
        rows.accumulator[r][pass].y = fmaf(p, value[pass].y, rows.accumulator[r][pass].y);
      }
    }
  }
}

// O = accumulator / l (zeros where l = 0) and LSE for the warp's rows inside the padded grid.
template <typename Element, int kCompiledDim>
__device__ void write_rows(const AttentionParams& params, std::int64_t b, std::int64_t h, int lane, Element* out,
                           float* lse, const WarpRows<kCompiledDim>& rows) {
  const int head_dim = static_cast<int>(params.head_dim);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const std::int64_t i = rows.row[r];
    if (i >= params.seqlen_q) continue;  // the same for every lane of the warp
    const float sum = rows.softmax[r].sum;
    const float normalizer = sum > 0.0f ? 1.0f / sum : 0.0f;
    Element* out_row = out + params.q_offset(b, i, h);
#pragma unroll
    for (int pass = 0; pass < dim_passes(kCompiledDim); ++pass) {
      const int dim = dim_of(lane, pass);
      if (dim >= head_dim) continue;
      const float2 a = rows.accumulator[r][pass];
      *reinterpret_cast<typename ElementPair<Element>::type*>(out_row + dim) =
          ElementPair<Element>::make(a.x * normalizer, a.y * normalizer);
    }
    if (lane == 0) lse[(b * params.heads + h) * params.seqlen_q + i] = online_softmax_lse(rows.softmax[r]);
  }
}

template <typename Element, int kCompiledDim>
__global__ void __launch_bounds__(kThreads)
    flash_simple_forward(AttentionParams params, const Element* q, const Element* k, const Element* v, Element* out,
                         float* lse) {
  static_assert(sizeof(SharedTiles<Element, kCompiledDim>) == shared_bytes(kCompiledDim, sizeof(Element)));
  static_assert(sizeof(SharedTiles<Element, kCompiledDim>) <= kStaticSharedLimit);
  ATTNBENCH_STATIC_SHARED(tiles, SharedTiles<Element, kCompiledDim>);

  const std::int64_t block = blockIdx.x;
  const std::int64_t h = blockIdx.y;
  const std::int64_t b = blockIdx.z;
  const std::int64_t kv_head = params.kv_head_of(h);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int head_dim = static_cast<int>(params.head_dim);
  const std::int64_t len_q = params.length_q(b);
  const std::int64_t len_k = params.length_k(b);

  WarpRows<kCompiledDim> rows;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    rows.row[r] = query_row(block, warp, r);
    rows.visible[r] = visible_keys(params.mask, rows.row[r], len_q, len_k);
    rows.softmax[r] = SoftmaxRowState<float>{};
#pragma unroll
    for (int pass = 0; pass < dim_passes(kCompiledDim); ++pass) rows.accumulator[r][pass] = make_float2(0.0f, 0.0f);
  }

  stage_rows(q + params.q_offset(b, 0, h), params.q_strides.seq, first_row_of_block(block), kBlockRows, len_q,
             head_dim, &tiles.query[0][0], kCompiledDim);
  const Element* key_head = k + params.kv_offset(b, 0, kv_head);
  const Element* value_head = v + params.kv_offset(b, 0, kv_head);
  // The tile range is the same for the whole CTA, so every thread reaches every barrier.
  const TileRange key_tile_range = key_tiles(params.mask, block, len_q, len_k);
  for (std::int64_t tile = key_tile_range.begin; tile < key_tile_range.end; ++tile) {
    __syncthreads();  // every warp is done with the previous tile
    stage_rows(key_head, params.kv_strides.seq, key_of(tile, 0), kBlockKeys, len_k, head_dim, &tiles.key[0][0],
               key_row_stride(kCompiledDim));
    stage_rows(value_head, params.kv_strides.seq, key_of(tile, 0), kBlockKeys, len_k, head_dim, &tiles.value[0][0],
               kCompiledDim);
    __syncthreads();  // the tile (and, before the first, the Q rows) is staged

    float score[kRowsPerWarp];
    float probability[kRowsPerWarp];
    dot_products(tiles, warp, lane, head_dim, score);
    softmax_step(params, b, h, key_of(tile, lane), score, rows, probability);
    accumulate_values(tiles, warp, lane, head_dim, probability, rows);
  }
  write_rows(params, b, h, lane, out, lse, rows);
}

template <typename Element, int kCompiledDim>
void launch(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  const GridShape grid = grid_shape(params.batch, params.heads, params.seqlen_q);
  const dim3 blocks(static_cast<unsigned>(grid.query_blocks), static_cast<unsigned>(grid.heads),
                    static_cast<unsigned>(grid.batch));
  launch_kernel(&flash_simple_forward<Element, kCompiledDim>, blocks, kThreads, 0, stream, params, static_cast<const Element*>(buffers.q.data), static_cast<const Element*>(buffers.k.data),
      static_cast<const Element*>(buffers.v.data), static_cast<Element*>(buffers.out.data),
      static_cast<float*>(buffers.lse.data));
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element>
void launch_for_head_dim(const AttentionParams& params, const AttentionBuffers& buffers, cudaStream_t stream) {
  switch (compiled_head_dim(params.head_dim)) {
    case 64:
      launch<Element, 64>(params, buffers, stream);
      break;
    case 128:
      launch<Element, 128>(params, buffers, stream);
      break;
    default:
      launch<Element, kLargestHeadDim>(params, buffers, stream);
      break;
  }
}

class CudaFlashSimple final : public CudaImplementation {
 public:
  std::string_view name() const override { return ATTNBENCH_CUDA_IMPLEMENTATION("flash.simple"); }
  std::string_view summary() const override {
    return "fused attention forward in plain fp32 (no tensor cores), one key per lane; the cross-check of cuda.flash";
  }
  std::string_view accuracy_baseline() const override { return ATTNBENCH_CUDA_IMPLEMENTATION("cublas"); }

  Verdict supports(const Problem& problem) const override {
    if (Verdict direction = supports_forward_only(problem); !direction.ok) return direction;
    if (!head_dim_supported(problem.head_dim)) {
      return Verdict::no(std::string(name()) + " supports head dims that are multiples of 8 from 8 to 256, not " +
                         std::to_string(problem.head_dim));
    }
    if (problem.heads > kMaxGridDimension || problem.batch > kMaxGridDimension) {
      return Verdict::no(std::string(name()) + " launches one CTA row per head and batch element, at most " +
                         std::to_string(kMaxGridDimension) + " each; this problem has " +
                         std::to_string(problem.heads) + " heads and batch " + std::to_string(problem.batch));
    }
    return Verdict::yes();
  }

  // The FlashAttention-2 order with this kernel's tiles: each CTA's query rows
  // stay on chip while every visible K/V tile streams past them.
  std::optional<TrafficModel> modelled_traffic(const Problem& problem) const override {
    const auto width = static_cast<int>(element_size(element_type(problem.dtype)));
    FusedTiling tiling;
    tiling.block_m = kBlockRows;
    tiling.block_n = kBlockKeys;
    tiling.shared_bytes =
        static_cast<std::int64_t>(shared_bytes(compiled_head_dim(problem.head_dim), static_cast<std::size_t>(width)));
    tiling.input = tiling.output = width;
    return fused_traffic(problem, tiling);
  }

  std::size_t workspace_bytes(const Problem& problem, const ExecutionContext&) const override {
    return device_lengths_bytes(problem);
  }

  void forward(const Problem& problem, const AttentionBuffers& buffers, ExecutionContext& context) override {
    for (const TensorBuffer* input : {&buffers.q, &buffers.k, &buffers.v}) {
      if (reinterpret_cast<std::uintptr_t>(input->data) % 16 != 0) {
        throw std::invalid_argument(
            std::string(name()) + " reads Q, K and V in 16-byte chunks; an input is not 16-byte aligned");
      }
    }
    const cudaStream_t stream = stream_of(context);
    const std::int64_t* lengths = upload_lengths(problem, buffers.workspace.data, stream);
    const AttentionParams params = make_attention_params(problem, lengths);
    if (problem.dtype == InputDType::fp16) {
      launch_for_head_dim<__half>(params, buffers, stream);
    } else {
      launch_for_head_dim<__nv_bfloat16>(params, buffers, stream);
    }
  }

  nlohmann::ordered_json configuration(const Problem& problem, const ExecutionContext&) const override {
    return {{"block_rows", kBlockRows},
            {"block_keys", kBlockKeys},
            {"warps", kWarps},
            {"rows_per_warp", kRowsPerWarp},
            {"compiled_head_dim", compiled_head_dim(problem.head_dim)},
            {"arithmetic", "fp32"}};
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CudaFlashSimple>(); }};

}  // namespace
ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
