// The online-softmax update shared by the tiled implementations (CPU and CUDA).
//
// A row's softmax over keys seen so far is summarised by its running maximum m and
// normalizer l = sum_j exp(s_j - m); the unnormalized output accumulator is
// acc = sum_j exp(s_j - m) v_j. When a new tile of scores arrives with row
// maximum t, the state moves to m' = max(m, t) and everything accumulated so far
// is rescaled by exp(m - m'). Two partial states over disjoint key sets merge the
// same way. A row that has seen only masked keys keeps m = -inf; the guards below
// make exp(-inf - (-inf)) contribute 0 instead of NaN.
//
// Exp is a policy so CUDA kernels can work in base 2 (exp2 with log2(e) folded
// into the scale) while the CPU code works in base e.
#pragma once

#include <cmath>
#include <limits>

#include "host_device.hpp"

namespace attnbench {

struct ExpBaseE {
  ATTNBENCH_HD static float exp(float x) { return ::expf(x); }
  ATTNBENCH_HD static double exp(double x) { return ::exp(x); }
  ATTNBENCH_HD static float log(float x) { return ::logf(x); }
  ATTNBENCH_HD static double log(double x) { return ::log(x); }
};

struct ExpBase2 {
  ATTNBENCH_HD static float exp(float x) { return ::exp2f(x); }
  ATTNBENCH_HD static double exp(double x) { return ::exp2(x); }
  ATTNBENCH_HD static float log(float x) { return ::log2f(x); }
  ATTNBENCH_HD static double log(double x) { return ::log2(x); }
};

template <typename T>
struct SoftmaxRowState {
  T max = -std::numeric_limits<T>::infinity();
  T sum = T(0);
};

// The value to subtract before exponentiating scores of a row whose maximum is
// `row_max`: the maximum itself, or 0 while the row has seen no visible key, so
// masked scores (-inf) give exp(-inf) = 0 rather than NaN.
template <typename T>
ATTNBENCH_HD T exp_reference(T row_max) {
  return row_max == -std::numeric_limits<T>::infinity() ? T(0) : row_max;
}

// Factor that carries quantities accumulated relative to `old_max` over to
// `new_max` (new_max >= old_max); 0 when nothing was accumulated (old_max = -inf).
template <typename T, typename Exp = ExpBaseE>
ATTNBENCH_HD T rescale_factor(T old_max, T new_max) {
  if (old_max == -std::numeric_limits<T>::infinity()) return T(0);
  return Exp::exp(old_max - new_max);
}

// Moves `state` to account for a tile whose row maximum is `tile_max`: updates the
// maximum and rescales the normalizer. Returns the factor by which the caller must
// rescale its output accumulator; the caller then adds the tile's
// exp(s - exp_reference(state.max)) terms to state.sum and the accumulator.
template <typename T, typename Exp = ExpBaseE>
ATTNBENCH_HD T online_softmax_advance(SoftmaxRowState<T>& state, T tile_max) {
  const T new_max = tile_max > state.max ? tile_max : state.max;
  const T factor = rescale_factor<T, Exp>(state.max, new_max);
  state.max = new_max;
  state.sum *= factor;
  return factor;
}

// Scales to apply to two partial accumulators when their states merge.
template <typename T>
struct MergeFactors {
  T first = T(0);
  T second = T(0);
};

// Merges two partial states over disjoint key sets. The merged accumulator is
// factors.first * acc_a + factors.second * acc_b.
template <typename T, typename Exp = ExpBaseE>
ATTNBENCH_HD SoftmaxRowState<T> online_softmax_merge(const SoftmaxRowState<T>& a,
                                                     const SoftmaxRowState<T>& b,
                                                     MergeFactors<T>& factors) {
  SoftmaxRowState<T> merged;
  merged.max = a.max > b.max ? a.max : b.max;
  factors.first = rescale_factor<T, Exp>(a.max, merged.max);
  factors.second = rescale_factor<T, Exp>(b.max, merged.max);
  merged.sum = a.sum * factors.first + b.sum * factors.second;
  return merged;
}

// Log-sum-exp of the row in the units of Exp (natural log for ExpBaseE); -inf
// for a row with no visible key.
template <typename T, typename Exp = ExpBaseE>
ATTNBENCH_HD T online_softmax_lse(const SoftmaxRowState<T>& state) {
  if (!(state.sum > T(0))) return -std::numeric_limits<T>::infinity();
  return state.max + Exp::log(state.sum);
}

}  // namespace attnbench
