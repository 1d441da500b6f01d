// The fp64 oracle cpu.reference: its gradients against central finite
// differences of L = sum(dO o O), with masks, padding and dropout; hand-checkable
// cases; and the sampling functions of cpu_reference.hpp against the registered
// implementation.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "attention_test_support.hpp"
#include "kernels/common/dropout.hpp"

namespace attnbench::test {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// L = sum(dO o O) of one forward of the oracle.
double loss(const Problem& p, const Inputs& in) {
  const Outputs out = run(implementation("cpu.reference"), p, in, 1, false);
  double sum = 0.0;
  for (std::int64_t e = 0; e < out.out.size(); ++e) sum += in.d_out.at(e) * out.out.at(e);
  return sum;
}

// Checks every element of `gradient` against (L(x + h) - L(x - h)) / 2h.
void expect_finite_differences(const Problem& p, Inputs& in, OwnedBuffer& tensor,
                               const OwnedBuffer& gradient, const char* name) {
  constexpr double kStep = 1e-5;
  double max_error = 0.0;
  double max_gradient = 0.0;
  for (std::int64_t e = 0; e < tensor.size(); ++e) {
    const double x = tensor.at(e);
    tensor.set(e, x + kStep);
    const double plus = loss(p, in);
    tensor.set(e, x - kStep);
    const double minus = loss(p, in);
    tensor.set(e, x);
    const double numeric = (plus - minus) / (2 * kStep);
    max_error = std::max(max_error, std::abs(numeric - gradient.at(e)));
    max_gradient = std::max(max_gradient, std::abs(gradient.at(e)));
  }
  EXPECT_GT(max_gradient, 1e-3) << name << " is trivially zero";
  EXPECT_LE(max_error, 1e-8 * std::max(1.0, max_gradient)) << name;
}

void check_gradients_by_finite_differences(const Problem& p) {
  Inputs in = make_inputs(p, 2024, ElementType::f64);
  const Outputs analytic = run(implementation("cpu.reference"), p, in, 1);
  expect_finite_differences(p, in, in.q, analytic.d_q, "dQ");
  expect_finite_differences(p, in, in.k, analytic.d_k, "dK");
  expect_finite_differences(p, in, in.v, analytic.d_v, "dV");
}

TEST(CpuReferenceGradients, MatchFiniteDifferencesWithoutMask) {
  Problem p = make_problem(1, 2, 1, 5, 7, 4);
  finish_problem(p);
  check_gradients_by_finite_differences(p);
}

TEST(CpuReferenceGradients, MatchFiniteDifferencesWithMaskAndDropout) {
  Problem p = make_problem(1, 2, 1, 5, 7, 4);
  p.mask = MaskSpec{true, true, 3, -1};
  p.dropout = DropoutSpec{0.3, 77, 1};
  finish_problem(p);
  check_gradients_by_finite_differences(p);
}

TEST(CpuReferenceGradients, MatchFiniteDifferencesWithPadding) {
  Problem p = make_problem(2, 2, 1, 5, 7, 4);
  p.mask = MaskSpec{true, false, -1, -1};
  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  p.lengths_q = {4, 5};
  p.lengths_k = {5, 0};
  p.dropout = DropoutSpec{0.2, 5, 0};
  finish_problem(p);
  check_gradients_by_finite_differences(p);
}

// ---- Hand-checkable cases --------------------------------------------------------

// Fills a tensor with 0.25 * (e mod 11) - 1: exact in fp64, varied, no zeros needed.
void fill_pattern(OwnedBuffer& tensor, double offset) {
  for (std::int64_t e = 0; e < tensor.size(); ++e)
    tensor.set(e, 0.25 * static_cast<double>(e % 11) - 1.0 + offset);
}

TEST(CpuReferenceByHand, OneKeyGivesItsValueRow) {
  Problem p = make_problem(1, 1, 1, 3, 1, 4);
  finish_problem(p);
  Inputs in = make_inputs(p, 1, ElementType::f64);
  const Outputs out = run(implementation("cpu.reference"), p, in, 1, false);
  for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
    double score = 0.0;
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      EXPECT_EQ(out.out.at(q_index(p, 0, i, 0, x)), in.v.at(kv_index(p, 0, 0, 0, x)));
      score += in.q.at(q_index(p, 0, i, 0, x)) * in.k.at(kv_index(p, 0, 0, 0, x));
    }
    EXPECT_NEAR(out.lse.at(lse_index(p, 0, 0, i)), score * p.softmax_scale(), 1e-6);
  }
}

TEST(CpuReferenceByHand, EqualScoresAverageTheVisibleValues) {
  // Every key row is the same, so each row's visible scores are equal and its
  // output is the mean of the values it sees: rows 0..3 see keys 0..i (causal).
  Problem p = make_problem(1, 1, 1, 4, 4, 3);
  p.mask = MaskSpec{true, false, -1, -1};
  finish_problem(p);
  Inputs in = make_inputs(p, 1, ElementType::f64);
  fill_pattern(in.q, 0.1);
  for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
    for (std::int64_t x = 0; x < p.head_dim; ++x)
      in.k.set(kv_index(p, 0, j, 0, x), 0.5 + static_cast<double>(x));
    for (std::int64_t x = 0; x < p.head_dim; ++x)
      in.v.set(kv_index(p, 0, j, 0, x), static_cast<double>(10 * j + x));
  }
  const Outputs out = run(implementation("cpu.reference"), p, in, 1, false);
  for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
    double score = 0.0;
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      score += in.q.at(q_index(p, 0, i, 0, x)) * (0.5 + static_cast<double>(x));
      // mean over j = 0..i of 10 j + x
      EXPECT_NEAR(out.out.at(q_index(p, 0, i, 0, x)),
                  5.0 * static_cast<double>(i) + static_cast<double>(x), 1e-12);
    }
    EXPECT_NEAR(out.lse.at(lse_index(p, 0, 0, i)),
                score * p.softmax_scale() + std::log(static_cast<double>(i + 1)), 1e-6);
  }
}

TEST(CpuReferenceByHand, DropoutZeroesOrRescalesEachElement) {
  // One key: P = 1, so O_i is V_0 / (1 - p) where the element is kept, else 0.
  Problem p = make_problem(1, 1, 1, 64, 1, 2);
  p.dropout = DropoutSpec{0.5, 42, 7};
  finish_problem(p);
  Inputs in = make_inputs(p, 3, ElementType::f64);
  const Outputs out = run(implementation("cpu.reference"), p, in, 1, false);
  const DropoutRng rng = make_dropout_rng(0.5, 42, 7, 1);
  int kept = 0;
  for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
    const bool keeps = dropout_keeps(rng, 0, 0, static_cast<std::uint32_t>(i), 0);
    kept += keeps ? 1 : 0;
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      EXPECT_EQ(out.out.at(q_index(p, 0, i, 0, x)),
                keeps ? 2.0 * in.v.at(kv_index(p, 0, 0, 0, x)) : 0.0)
          << "row " << i;
    }
    double score = 0.0;
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      score += in.q.at(q_index(p, 0, i, 0, x)) * in.k.at(kv_index(p, 0, 0, 0, x));
    }
    EXPECT_NEAR(out.lse.at(lse_index(p, 0, 0, i)), score * p.softmax_scale(), 1e-6)
        << "the LSE is of the un-dropped P, kept or not";
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 64);
}

TEST(CpuReferenceByHand, RowsThatSeeNothingAreZeroWithMinusInfinityLse) {
  Problem p = make_problem(1, 1, 1, 6, 3, 2);
  p.mask = MaskSpec{true, true, -1, -1};  // rows 0..2 see no key
  finish_problem(p);
  const Inputs in = make_inputs(p, 4, ElementType::f64);
  const Outputs out = run(implementation("cpu.reference"), p, in, 1);
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.lse.at(lse_index(p, 0, 0, i)), -kInfinity);
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      EXPECT_EQ(out.out.at(q_index(p, 0, i, 0, x)), 0.0);
      EXPECT_EQ(out.d_q.at(q_index(p, 0, i, 0, x)), 0.0);
    }
  }
  EXPECT_TRUE(std::isfinite(out.lse.at(lse_index(p, 0, 0, 3))));
}

// ---- Sampling functions ------------------------------------------------------------

Problem sampled_problem() {
  Problem p = make_problem(2, 4, 2, 19, 23, 8);
  p.mask = MaskSpec{true, true, 6, -1};
  p.layout = Layout::bhsd;
  p.dropout = DropoutSpec{0.17, 9, 2};
  finish_problem(p);
  return p;
}

AttentionBuffers input_view(const Inputs& in) {
  AttentionBuffers buffers;
  buffers.q = in.q.buffer;
  buffers.k = in.k.buffer;
  buffers.v = in.v.buffer;
  buffers.d_out = in.d_out.buffer;
  return buffers;
}

TEST(CpuReferenceSampling, QueryRowsEqualTheFullOracle) {
  const Problem p = sampled_problem();
  const Inputs in = make_inputs(p, 6);
  const Outputs full = run(implementation("cpu.reference"), p, in, 2);
  const std::int64_t b = 1;
  const std::int64_t h = 3;
  const std::vector<std::int64_t> rows = {18, 0, 7, 3};
  const ReferenceRows sample = reference_query_rows(p, input_view(in), b, h, rows, true);
  ASSERT_EQ(sample.out.size(), rows.size() * 8);
  ASSERT_EQ(sample.lse.size(), rows.size());
  ASSERT_EQ(sample.d_q.size(), rows.size() * 8);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(static_cast<float>(sample.lse[r]),
              static_cast<float>(full.lse.at(lse_index(p, b, h, rows[r]))));  // LSE buffer is fp32
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      const auto at = static_cast<std::size_t>(static_cast<std::int64_t>(r) * p.head_dim + x);
      EXPECT_EQ(sample.out[at], full.out.at(q_index(p, b, rows[r], h, x)));
      EXPECT_EQ(sample.d_q[at], full.d_q.at(q_index(p, b, rows[r], h, x)));
    }
  }
  const ReferenceRows forward_only = reference_query_rows(p, input_view(in), b, h, rows, false);
  EXPECT_TRUE(forward_only.d_q.empty());
  EXPECT_EQ(forward_only.out, sample.out);
}

TEST(CpuReferenceSampling, KeyGradientsEqualTheFullOracle) {
  const Problem p = sampled_problem();
  const Inputs in = make_inputs(p, 6);
  const Outputs full = run(implementation("cpu.reference"), p, in, 2);
  const std::int64_t b = 1;
  const std::int64_t hkv = 1;
  const ReferenceKeyGradients sample = reference_key_gradients(p, input_view(in), b, hkv);
  ASSERT_EQ(sample.d_k.size(), static_cast<std::size_t>(p.seqlen_k * p.head_dim));
  ASSERT_EQ(sample.d_v.size(), static_cast<std::size_t>(p.seqlen_k * p.head_dim));
  double largest = 0.0;
  for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      const auto at = static_cast<std::size_t>(j * p.head_dim + x);
      EXPECT_EQ(sample.d_k[at], full.d_k.at(kv_index(p, b, j, hkv, x)));
      EXPECT_EQ(sample.d_v[at], full.d_v.at(kv_index(p, b, j, hkv, x)));
      largest = std::max(largest, std::abs(sample.d_k[at]));
    }
  }
  EXPECT_GT(largest, 1e-3);
}

TEST(CpuReferenceSampling, RejectsIndicesOutsideTheProblem) {
  const Problem p = sampled_problem();
  const Inputs in = make_inputs(p, 6);
  EXPECT_THROW(reference_query_rows(p, input_view(in), 2, 0, {0}, false), std::out_of_range);
  EXPECT_THROW(reference_query_rows(p, input_view(in), 0, 4, {0}, false), std::out_of_range);
  EXPECT_THROW(reference_query_rows(p, input_view(in), 0, 0, {19}, false), std::out_of_range);
  EXPECT_THROW(reference_query_rows(p, input_view(in), 0, 0, {-1}, false), std::out_of_range);
  EXPECT_THROW(reference_key_gradients(p, input_view(in), 0, 2), std::out_of_range);
  EXPECT_THROW(reference_key_gradients(p, input_view(in), -1, 0), std::out_of_range);
}

}  // namespace
}  // namespace attnbench::test
