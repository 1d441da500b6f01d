// The row kernels of cuda.cublas (baselines/cuda/softmax_kernel.cu): the
// forward's softmax, which turns S into P~ and LSE (row logic:
// baselines/cuda/softmax_row.hpp), the backward's score gradient, which turns S,
// dP, O and dO into dS (baselines/cuda/score_gradient_row.hpp), and the
// conversion of the fp32 dK, dV sums of grouped-query attention.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "harness/common/problem.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// scores: [batch·heads, Nq, row_stride] fp32; probabilities: the same shape in
// `dtype`; lse: [batch, heads, Nq] fp32. row_stride is a multiple of 8 and both
// arrays are 16-byte aligned.
void launch_masked_softmax(const AttentionParams& params, const float* scores, void* probabilities, InputDType dtype,
                           std::int64_t row_stride, float* lse, cudaStream_t stream);

// The tensors of the score-gradient kernel. scores (the forward's S) and
// probability_gradients (dP): [batch·heads, Nq, row_stride] fp32;
// score_gradients (dS): the same shape in the input dtype; out and d_out: O and
// dO in Q's layout, input dtype; lse: the forward's, [batch, heads, Nq].
struct ScoreGradientTensors {
  const float* scores;
  const float* probability_gradients;
  const void* out;
  const void* d_out;
  const float* lse;
  void* score_gradients;
};

// dS = P o (dP o Z/(1-p) - D) with P = exp(S - LSE) and D = rowsum(dO o O),
// over the whole padded grid (zeros where masked). row_stride is a multiple of 8
// and the score-shaped arrays are 16-byte aligned.
void launch_score_gradient(const AttentionParams& params, const ScoreGradientTensors& tensors, InputDType dtype,
                           std::int64_t row_stride, cudaStream_t stream);

// d_k[e] = key_sums[e] and d_v[e] = value_sums[e], rounded to `dtype`, for e in
// [0, elements): the fp32 dK and dV sums over a group's query heads (in K's
// layout) to the gradient tensors.
void launch_key_gradient_conversion(const float* key_sums, const float* value_sums, void* d_k, void* d_v,
                                    std::int64_t elements, InputDType dtype, cudaStream_t stream);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
