// The row logic of cuda.cublas's score-gradient kernel (baselines/cuda/softmax_kernel.cu,
// score_gradient), written once for the device and for the CPU tests that check
// it against a direct fp64 computation (tests/test_cuda_host_logic.cpp).
//
// One query row (b, h, i) of the backward's
//   dS = P o (dP o Z/(1-p) - D),  D = rowsum(dO o O),  P = exp(S - LSE),
// as kernels/cpu_flash.cpp and baselines/cpu_standard.cpp define it, with dP =
// dO V^T the gradient of P~ (fp32, from the dP GEMM), S the forward's fp32 scores
// (masked columns hold anything) and LSE the forward's. `threads` workers (a CUDA
// block, or a loop on the CPU) share the row as the softmax does
// (softmax_row.hpp):
//   1. row_dot_partial: each worker's part of D over the head dims, summed by
//      the caller;
//   2. score_gradient_row_write: each worker writes its groups of 4 keys of the
//      whole padded row [0, round_up(Nk, 4)): dS for visible keys, 0 for masked
//      ones and for columns in [Nk, round_up(Nk, 4)). A group is one aligned
//      float4 load of S and of dP and one Philox call (the forward's words).
// A row with no visible key (masked, or a padded row i >= Lq, LSE = -inf) is all
// zeros, so dQ's row and its share of dK are zero. All arithmetic is fp32.
#pragma once

#include <cstdint>

#include "baselines/cuda/softmax_row.hpp"
#include "kernels/common/host_device.hpp"

namespace attnbench {

// Worker `thread`'s part of sum_x a[x]·b[x] over x in [0, head_dim), the
// elements read through to_float.
template <typename Element, typename ToFloat>
ATTNBENCH_HD float row_dot_partial(const Element* a, const Element* b, std::int64_t head_dim, int thread, int threads,
                                   ToFloat to_float) {
  float sum = 0.0f;
  for (std::int64_t x = thread; x < head_dim; x += threads) sum += to_float(a[x]) * to_float(b[x]);
  return sum;
}

// The row's forward statistics and D, beside where it sits (SoftmaxRow).
struct ScoreGradientRow {
  SoftmaxRow position;
  float lse;            // the forward's LSE of the row (natural log)
  float d_out_dot_out;  // D = rowsum(dO o O)
};

// Step 2: writes worker `thread`'s groups of the row's dS through store(g, group).
template <typename Store>
ATTNBENCH_HD void score_gradient_row_write(const float* scores, const float* probability_gradients,
                                           const ScoreGradientRow& row, const DropoutRng& rng, int thread,
                                           int threads, Store&& store) {
  const SoftmaxRow& position = row.position;
  const std::int64_t groups = (position.seqlen_k + 3) / 4;
  for (std::int64_t g = thread; g < groups; g += threads) {
    ScoreGroup d_score{{0.0f, 0.0f, 0.0f, 0.0f}};
    if (group_meets(position.visible, g)) {
      const ScoreGroup s = load_score_group(scores, g);
      const ScoreGroup d_probability = load_score_group(probability_gradients, g);
      const ScoreGroup factors = dropout_group_factors(rng, position, g);
      for (int k = 0; k < 4; ++k) {
        if (key_in(position.visible, 4 * g + k)) {
          const float probability = ExpBaseE::exp(s.value[k] - row.lse);
          d_score.value[k] = probability * (d_probability.value[k] * factors.value[k] - row.d_out_dot_out);
        }
      }
    }
    store(g, d_score);
  }
}

}  // namespace attnbench
