// The row logic of cuda.cublas's softmax kernel (baselines/cuda/softmax_kernel.cu),
// written once for the device and for the CPU tests that check it against the
// fp64 oracle (tests/test_cuda_host_logic.cpp).
//
// One row of S (fp32, the padded [0, Nk) grid, 16-byte aligned) becomes one row
// of P~ = dropout(softmax(S + mask)) and its LSE. `threads` workers (a CUDA
// block, or a loop on the CPU) share the row in groups of 4 consecutive keys
// [4g, 4g + 4): worker t takes groups t, t + threads, ... A group is one aligned
// float4 load of S and one Philox call of the dropout contract (DESIGN §2).
//   1. softmax_row_partial: each worker's running (max, sum) over its groups of
//      the visible keys (online_softmax_advance once per group);
//   2. the caller merges the workers' states (online_softmax_merge);
//   3. softmax_row_write: each worker writes its groups of the whole padded row:
//      exp(s - max) / sum, times 1/(1-p) or 0 per the dropout word, for visible
//      keys; 0 for masked ones and for columns in [Nk, round_up(Nk, 4)).
// LSE = max + log(sum) in natural log, fp32; -inf (and a zero row) for a row
// with no visible key, including padded rows i >= Lq. All arithmetic is fp32.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/common/dropout.hpp"
#include "kernels/common/host_device.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/common/online_softmax.hpp"

namespace attnbench {

// The tiling the row kernels' masks are cut by, in the vocabulary of the fused
// kernels' traits (kernels/cuda/flash_geometry.hpp's FlashTraits): one row per
// block, and the keys of a group (one float4 load, one Philox call) as the tile.
struct SoftmaxRowTraits {
  static constexpr int kBlockM = 1;
  static constexpr int kBlockN = 4;
  static constexpr int kWarpRows = 1;
  static constexpr int kWarpKeys = 4;
};

struct ScoreGroup {
  float value[4];
};

// Scores of keys 4g .. 4g+3 of a 16-byte aligned row; the row holds at least
// round_up(Nk, 4) elements, so the last group stays inside it.
ATTNBENCH_HD ScoreGroup load_score_group(const float* row, std::int64_t g) {
#if defined(__CUDA_ARCH__)
  const float4 v = reinterpret_cast<const float4*>(row)[g];
  return ScoreGroup{{v.x, v.y, v.z, v.w}};
#else
  return ScoreGroup{{row[4 * g], row[4 * g + 1], row[4 * g + 2], row[4 * g + 3]}};
#endif
}

ATTNBENCH_HD bool key_in(const KeyRange& keys, std::int64_t j) { return keys.begin <= j && j < keys.end; }

// Which row a worker is on, for the mask bound and the dropout counter.
struct SoftmaxRow {
  KeyRange visible;       // visible_keys() of the row
  std::int64_t seqlen_k;  // Nk, the padded row length
  std::uint32_t batch;    // b, h, i of the dropout counter
  std::uint32_t head;
  std::uint32_t row;
};

// Step 1: the running (max, sum) of worker `thread`'s groups of visible keys.
ATTNBENCH_HD SoftmaxRowState<float> softmax_row_partial(const float* scores, const KeyRange& visible, int thread,
                                                        int threads) {
  SoftmaxRowState<float> state;
  if (visible.empty()) return state;
  const std::int64_t last = (visible.end - 1) / 4;
  for (std::int64_t g = visible.begin / 4 + thread; g <= last; g += threads) {
    ScoreGroup s = load_score_group(scores, g);
    float group_max = -std::numeric_limits<float>::infinity();
    for (int k = 0; k < 4; ++k) {
      // Select, never arithmetic: masked columns may hold anything, NaN included.
      if (!key_in(visible, 4 * g + k)) s.value[k] = -std::numeric_limits<float>::infinity();
      group_max = s.value[k] > group_max ? s.value[k] : group_max;
    }
    online_softmax_advance(state, group_max);  // every group here has a visible key
    for (int k = 0; k < 4; ++k) state.sum += ExpBaseE::exp(s.value[k] - state.max);
  }
  return state;
}

// Whether keys [4g, 4g + 4) of group g meet the visible range.
ATTNBENCH_HD bool group_meets(const KeyRange& keys, std::int64_t g) { return 4 * g < keys.end && 4 * g + 4 > keys.begin; }

// Z/(1-p) for the four keys of group g of the row: 1/(1-p) where the contract's
// word keeps the element, 0 where it drops it; 1 without dropout (no RNG work).
ATTNBENCH_HD ScoreGroup dropout_group_factors(const DropoutRng& rng, const SoftmaxRow& row, std::int64_t g) {
  ScoreGroup factors{{1.0f, 1.0f, 1.0f, 1.0f}};
  if (!rng.enabled) return factors;
  const PhiloxBlock words = dropout_words(rng, row.batch, row.head, row.row, static_cast<std::uint32_t>(g));
  for (int k = 0; k < 4; ++k) factors.value[k] = dropout_word_keeps(rng, words.word[k]) ? rng.keep_scale : 0.0f;
  return factors;
}

// Step 3: writes worker `thread`'s groups of the row through store(g, group),
// given the row's merged state.
template <typename Store>
ATTNBENCH_HD void softmax_row_write(const float* scores, const SoftmaxRow& row, const SoftmaxRowState<float>& state,
                                    const DropoutRng& rng, int thread, int threads, Store&& store) {
  const std::int64_t groups = (row.seqlen_k + 3) / 4;
  const float inverse_sum = state.sum > 0.0f ? 1.0f / state.sum : 0.0f;
  for (std::int64_t g = thread; g < groups; g += threads) {
    ScoreGroup p{{0.0f, 0.0f, 0.0f, 0.0f}};
    if (group_meets(row.visible, g)) {
      const ScoreGroup s = load_score_group(scores, g);
      const ScoreGroup factors = dropout_group_factors(rng, row, g);
      for (int k = 0; k < 4; ++k) {
        if (key_in(row.visible, 4 * g + k)) {
          p.value[k] = ExpBaseE::exp(s.value[k] - state.max) * inverse_sum * factors.value[k];
        }
      }
    }
    store(g, p);
  }
}

}  // namespace attnbench
