// cuda.cublas's row kernels, one block per row of S (grid-stride over the
// batch·heads·Nq rows; row r = (b·H + h)·Nq + i is also LSE's index), and the
// conversion of the backward's fp32 dK, dV sums.
//
// Forward, masked_softmax: P~ = dropout(softmax(S + mask)) and LSE.
// Backward, score_gradient: dS = P o (dP o Z/(1-p) - D), P = exp(S - LSE),
// D = rowsum(dO o O).
//
// Launch: min(rows, 2^20) blocks of 32..256 threads (one warp per 32 groups of 4
// keys, at most 8 warps). masked_softmax runs baselines/cuda/softmax_row.hpp on
// its row: every thread a running (max, sum) over its key groups (float4 loads
// of S), merged across the warp with shuffles and across warps through shared
// memory (online_softmax_merge), then every thread writes its groups of the
// padded row in the input dtype (two 32-bit stores per group) and thread 0 the
// LSE. score_gradient runs baselines/cuda/score_gradient_row.hpp: the block sums
// D over the row's head dims of dO and O (shuffles, then shared memory), then
// every thread writes its groups of dS (float4 loads of S and dP, two 32-bit
// stores) of the padded row. The mask comes from visible_keys() with the row's
// batch element's lengths; dropout from the contract's Philox words, one call
// per group, the same words in both kernels.
// Precision: all fp32 (expf); P~ and dS rounded once to the input dtype.
//
// Every grid caps at 2^20 blocks through kernels/cuda/grid_stride.hpp.
//
// key_gradient_conversion: one thread per element (grid-stride), fp32 to the
// input dtype, dK and dV in one launch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "baselines/cuda/score_gradient_row.hpp"
#include "baselines/cuda/softmax_kernel.hpp"
#include "baselines/cuda/softmax_row.hpp"
#include "harness/cuda/cuda_check.hpp"
#include "kernels/cuda/element_conversion.hpp"
#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/grid_stride.hpp"
#include "kernels/cuda/kernel_launch.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

constexpr int kMaxWarps = 8;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;

// Threads for rows of `seqlen_k` keys: one per group of 4, in whole warps,
// between one warp and kMaxWarps.
int softmax_threads(std::int64_t seqlen_k) {
  const std::int64_t groups = (seqlen_k + 3) / 4;
  const std::int64_t warps = std::clamp<std::int64_t>((groups + 31) / 32, 1, kMaxWarps);
  return static_cast<int>(warps * 32);
}

// The row's state from every thread's partial state; every thread gets the same.
__device__ SoftmaxRowState<float> merge_across_block(SoftmaxRowState<float> state, float* shared_max,
                                                     float* shared_sum) {
  MergeFactors<float> factors;
  for (int offset = 16; offset > 0; offset /= 2) {
    SoftmaxRowState<float> other;
    other.max = __shfl_xor_sync(kFullMask, state.max, offset);
    other.sum = __shfl_xor_sync(kFullMask, state.sum, offset);
    state = online_softmax_merge(state, other, factors);
  }
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) {
    shared_max[warp] = state.max;
    shared_sum[warp] = state.sum;
  }
  __syncthreads();
  SoftmaxRowState<float> row;
  for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) {
    SoftmaxRowState<float> partial;
    partial.max = shared_max[w];
    partial.sum = shared_sum[w];
    row = online_softmax_merge(row, partial, factors);
  }
  __syncthreads();  // the next row reuses the shared slots
  return row;
}

// Writes a group of 4 values to a 16-byte aligned row of P~ or dS in the input dtype.
template <typename Element>
struct GroupStore {
  Element* row;
  __device__ void operator()(std::int64_t g, const ScoreGroup& p) const {
    using Pair = ElementPair<Element>;
    auto* pairs = reinterpret_cast<typename Pair::type*>(row + 4 * g);
    pairs[0] = Pair::make(p.value[0], p.value[1]);
    pairs[1] = Pair::make(p.value[2], p.value[3]);
  }
};

template <typename Element>
__global__ void __launch_bounds__(kMaxWarps * 32)
    masked_softmax(AttentionParams params, const float* scores, Element* probabilities, std::int64_t row_stride,
                   float* lse) {
  ATTNBENCH_STATIC_SHARED(shared_max, float[kMaxWarps]);
  ATTNBENCH_STATIC_SHARED(shared_sum, float[kMaxWarps]);
  const std::int64_t rows = params.batch * params.heads * params.seqlen_q;
  const int thread = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t z = r / params.seqlen_q;
    const std::int64_t i = r % params.seqlen_q;
    const std::int64_t b = z / params.heads;
    const std::int64_t h = z % params.heads;
    const SoftmaxRow row{visible_keys(params.mask, i, params.length_q(b), params.length_k(b)), params.seqlen_k,
                         static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(i)};
    const float* score_row = scores + r * row_stride;
    const SoftmaxRowState<float> state = merge_across_block(
        softmax_row_partial(score_row, row.visible, thread, threads), shared_max, shared_sum);
    softmax_row_write(score_row, row, state, params.dropout, thread, threads,
                      GroupStore<Element>{probabilities + r * row_stride});
    if (thread == 0) lse[r] = online_softmax_lse(state);
  }
}

template <typename Element>
void launch(const AttentionParams& params, const float* scores, void* probabilities, std::int64_t row_stride,
            float* lse, cudaStream_t stream) {
  const std::int64_t rows = params.batch * params.heads * params.seqlen_q;
  const auto blocks = static_cast<unsigned>(grid_stride_blocks(rows, kMaxBlocks));
  launch_kernel(&masked_softmax<Element>, blocks, softmax_threads(params.seqlen_k), 0, stream, params, scores, static_cast<Element*>(probabilities), row_stride, lse);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

// The row's sum of every thread's `value`; every thread gets the same.
__device__ float sum_across_block(float value, float* shared_sum) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) shared_sum[warp] = value;
  __syncthreads();
  float sum = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) sum += shared_sum[w];
  __syncthreads();  // the next row reuses the shared slots
  return sum;
}

struct ElementToFloat {
  template <typename Element>
  __device__ float operator()(Element x) const {
    return to_float(x);
  }
};

template <typename Element>
__global__ void __launch_bounds__(kMaxWarps * 32)
    score_gradient(AttentionParams params, ScoreGradientTensors tensors, std::int64_t row_stride) {
  ATTNBENCH_STATIC_SHARED(shared_sum, float[kMaxWarps]);
  const std::int64_t rows = params.batch * params.heads * params.seqlen_q;
  const int thread = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const auto* out = static_cast<const Element*>(tensors.out);
  const auto* d_out = static_cast<const Element*>(tensors.d_out);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t z = r / params.seqlen_q;
    const std::int64_t i = r % params.seqlen_q;
    const std::int64_t b = z / params.heads;
    const std::int64_t h = z % params.heads;
    const std::int64_t offset = params.q_offset(b, i, h);
    const float d_out_dot_out = sum_across_block(
        row_dot_partial(d_out + offset, out + offset, params.head_dim, thread, threads, ElementToFloat{}), shared_sum);
    const ScoreGradientRow row{
        SoftmaxRow{visible_keys(params.mask, i, params.length_q(b), params.length_k(b)), params.seqlen_k,
                   static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(i)},
        tensors.lse[r], d_out_dot_out};
    score_gradient_row_write(tensors.scores + r * row_stride, tensors.probability_gradients + r * row_stride, row,
                             params.dropout, thread, threads,
                             GroupStore<Element>{static_cast<Element*>(tensors.score_gradients) + r * row_stride});
  }
}

template <typename Element>
__global__ void key_gradient_conversion(const float* key_sums, const float* value_sums, Element* d_k, Element* d_v,
                                        std::int64_t elements) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < elements; e += stride) {
    d_k[e] = from_float<Element>(key_sums[e]);
    d_v[e] = from_float<Element>(value_sums[e]);
  }
}

}  // namespace

void launch_masked_softmax(const AttentionParams& params, const float* scores, void* probabilities, InputDType dtype,
                           std::int64_t row_stride, float* lse, cudaStream_t stream) {
  if (dtype == InputDType::fp16) {
    launch<__half>(params, scores, probabilities, row_stride, lse, stream);
  } else {
    launch<__nv_bfloat16>(params, scores, probabilities, row_stride, lse, stream);
  }
}

void launch_score_gradient(const AttentionParams& params, const ScoreGradientTensors& tensors, InputDType dtype,
                           std::int64_t row_stride, cudaStream_t stream) {
  const std::int64_t rows = params.batch * params.heads * params.seqlen_q;
  const auto blocks = static_cast<unsigned>(grid_stride_blocks(rows, kMaxBlocks));
  const int threads = softmax_threads(params.seqlen_k);
  if (dtype == InputDType::fp16) {
    launch_kernel(&score_gradient<__half>, blocks, threads, 0, stream, params, tensors, row_stride);
  } else {
    launch_kernel(&score_gradient<__nv_bfloat16>, blocks, threads, 0, stream, params, tensors, row_stride);
  }
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

void launch_key_gradient_conversion(const float* key_sums, const float* value_sums, void* d_k, void* d_v,
                                    std::int64_t elements, InputDType dtype, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>(grid_stride_blocks((elements + kThreads - 1) / kThreads, kMaxBlocks));
  if (dtype == InputDType::fp16) {
    launch_kernel(&key_gradient_conversion<__half>, blocks, kThreads, 0, stream, key_sums, value_sums, static_cast<__half*>(d_k),
                                                             static_cast<__half*>(d_v), elements);
  } else {
    launch_kernel(&key_gradient_conversion<__nv_bfloat16>, blocks, kThreads, 0, stream, key_sums, value_sums, static_cast<__nv_bfloat16*>(d_k),
                                                             static_cast<__nv_bfloat16*>(d_v), elements);
  }
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
