// The host-side logic of the CUDA implementations, checked on the CPU (no CUDA
// needed). For cuda.cublas: its workspace layout, the order of its GEMM batch
// entries, its forward and backward GEMM parameters run through a column-major
// GEMM emulation that reads its arguments exactly as cuBLAS does
// (baselines/cuda/cublas_plan.hpp), the softmax row logic its forward kernel
// runs (baselines/cuda/softmax_row.hpp) against a direct fp64 softmax and the
// score-gradient row logic of its backward kernel
// (baselines/cuda/score_gradient_row.hpp) against a direct fp64 dS, both built
// from the mask and dropout definitions; and the whole pipeline, these pieces
// composed as cublas_attention.cu composes them, against the fp64 oracle
// cpu.reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention_test_support.hpp"
#include "baselines/cuda/cublas_plan.hpp"
#include "baselines/cuda/score_gradient_row.hpp"
#include "baselines/cuda/softmax_row.hpp"
#include "harness/common/problem.hpp"
#include "kernels/common/dropout.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/cuda/attention_params.hpp"

namespace attnbench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Batch 2, heads 4 sharing 2 kv heads, no mask, no dropout; lengths resolved.
Problem gqa_problem(Layout layout, std::int64_t seqlen_q, std::int64_t seqlen_k, std::int64_t head_dim) {
  Problem p = test::make_problem(2, 4, 2, seqlen_q, seqlen_k, head_dim);
  p.layout = layout;
  return p;
}

std::string describe(const Problem& p) {
  return to_string(p.layout) + " Nq=" + std::to_string(p.seqlen_q) + " Nk=" + std::to_string(p.seqlen_k) +
         " d=" + std::to_string(p.head_dim);
}

// ---- Workspace layout ---------------------------------------------------------

TEST(CublasPlan, ScoreRowStrideIsNkRoundedUpToEight) {
  for (std::int64_t seqlen_k : {1, 7, 8, 9, 129, 4096}) {
    Problem p = gqa_problem(Layout::bshd, 3, seqlen_k, 64);
    const std::int64_t stride = score_row_stride(p);
    EXPECT_EQ(stride % 8, 0) << seqlen_k;
    EXPECT_GE(stride, seqlen_k);
    EXPECT_LT(stride, seqlen_k + 8);
    EXPECT_EQ(score_head_elements(p), 3 * stride);
  }
}

TEST(CublasPlan, WorkspaceRegionsAreAlignedOrderedAndSized) {
  for (InputDType dtype : {InputDType::fp16, InputDType::bf16}) {
    for (bool padded : {false, true}) {
      for (Direction direction : {Direction::fwd, Direction::bwd, Direction::fwd_bwd}) {
        for (std::int64_t kv_heads : {4, 2}) {
          Problem p = gqa_problem(Layout::bshd, 37, 53, 64);
          p.dtype = dtype;
          p.direction = direction;
          p.kv_heads = kv_heads;
          if (padded) {
            p.padding.kind = PaddingSpec::Kind::explicit_lengths;
            p.lengths_q = {37, 20};
            p.lengths_k = {50, 53};
          }
          const CublasWorkspaceLayout layout = cublas_workspace_layout(p);
          const std::size_t entries = 2 * 4;
          const std::size_t score_elements = entries * 37 * static_cast<std::size_t>(score_row_stride(p));
          const bool backward = direction != Direction::fwd;
          SCOPED_TRACE(to_string(dtype) + (padded ? " padded " : " unpadded ") + to_string(direction) +
                       " kv_heads=" + std::to_string(kv_heads));

          const std::size_t offsets[] = {layout.pointers,        layout.lengths,          layout.scores,
                                         layout.probabilities,   layout.backward_pointers, layout.probability_gradients,
                                         layout.score_gradients, layout.key_gradient_sums, layout.library,
                                         layout.total};
          for (std::size_t offset : offsets) EXPECT_EQ(offset % 256, 0u) << offset;
          EXPECT_TRUE(std::is_sorted(std::begin(offsets), std::end(offsets))) << "regions in the documented order";
          EXPECT_EQ(layout.pointers, 0u);
          // Each region holds what it must and is padded by less than 256 bytes;
          // `bytes` 0 means the region is empty.
          auto expect_region = [](std::size_t begin, std::size_t end, std::size_t bytes, const char* what) {
            EXPECT_GE(end, begin + bytes) << what;
            EXPECT_LT(end - begin, bytes == 0 ? 1 : bytes + 256) << what;
          };
          expect_region(layout.pointers, layout.lengths, 6 * entries * sizeof(void*), "pointer arrays");
          expect_region(layout.scores, layout.probabilities, score_elements * sizeof(float), "S (fp32)");
          expect_region(layout.probabilities, layout.backward_pointers, score_elements * 2, "P~ (input dtype)");
          expect_region(layout.backward_pointers, layout.probability_gradients,
                        backward ? 6 * entries * sizeof(void*) : 0, "backward pointer arrays");
          expect_region(layout.probability_gradients, layout.score_gradients,
                        backward ? score_elements * sizeof(float) : 0, "dP (fp32)");
          expect_region(layout.score_gradients, layout.key_gradient_sums, backward ? score_elements * 2 : 0,
                        "dS (input dtype)");
          const std::size_t kv = 2 * 53 * static_cast<std::size_t>(kv_heads) * 64;
          EXPECT_EQ(sums_key_gradients(p), kv_heads != 4);
          EXPECT_EQ(key_gradient_sum_bytes(p), round_up_256(kv * sizeof(float)));
          expect_region(layout.key_gradient_sums, layout.library,
                        backward && kv_heads != 4 ? 2 * key_gradient_sum_bytes(p) : 0, "fp32 dK and dV sums");
          EXPECT_EQ(layout.total - layout.library, kCublasLibraryWorkspaceBytes);
          if (padded) {
            expect_region(layout.lengths, layout.scores, 2 * 2 * sizeof(std::int64_t), "lengths");
            EXPECT_EQ(layout.scores - layout.lengths, device_lengths_bytes(p));
          } else {
            EXPECT_EQ(layout.scores, layout.lengths) << "no lengths region without padding";
          }
          // The forward's regions do not depend on the direction: a forward
          // followed by a backward sees one layout.
          Problem forward_only = p;
          forward_only.direction = Direction::fwd;
          const CublasWorkspaceLayout forward_layout = cublas_workspace_layout(forward_only);
          EXPECT_EQ(forward_layout.scores, layout.scores);
          EXPECT_EQ(forward_layout.probabilities, layout.probabilities);
          EXPECT_EQ(forward_layout.backward_pointers, layout.backward_pointers);
        }
      }
    }
  }
}

// ---- The order of the GEMM batch entries ----------------------------------------

TEST(CublasPlan, GemmEntriesAreGroupMemberMajorAndEachMemberCoversEveryKvHeadOnce) {
  for (std::int64_t kv_heads : {4, 2, 1}) {
    Problem p = gqa_problem(Layout::bshd, 5, 11, 6);
    p.batch = 3;
    p.kv_heads = kv_heads;
    const AttentionParams params = make_attention_params(p, nullptr);
    const std::int64_t entries = p.batch * p.heads, group = p.heads / kv_heads, per_member = p.batch * kv_heads;
    SCOPED_TRACE("kv_heads=" + std::to_string(kv_heads));
    std::vector<int> seen(static_cast<std::size_t>(entries), 0);
    for (std::int64_t e = 0; e < entries; ++e) {
      const std::int64_t z = gemm_entry_batch_index(params, e);
      ASSERT_GE(z, 0);
      ASSERT_LT(z, entries);
      ++seen[static_cast<std::size_t>(z)];
      const std::int64_t b = z / p.heads, h = z % p.heads;
      // Entry e of member g = e / per_member is (b, kv head) number e % per_member.
      EXPECT_EQ(h % group, e / per_member) << "e=" << e;
      EXPECT_EQ(b * kv_heads + h / group, e % per_member) << "e=" << e;
      if (group == 1) {
        EXPECT_EQ(z, e) << "without GQA the order is b·heads + h";
      }
    }
    for (std::int64_t z = 0; z < entries; ++z) EXPECT_EQ(seen[static_cast<std::size_t>(z)], 1) << "z=" << z;
  }
}

TEST(CublasPlan, OperandPointersAreTheBaseAndTheOperandOffsetOfTheEntry) {
  const Problem p = gqa_problem(Layout::bhsd, 5, 11, 6);
  const AttentionParams params = make_attention_params(p, nullptr);
  std::vector<std::byte> memory(4096);  // beyond every operand's last offset (at most 2560 bytes)
  for (std::int64_t element_bytes : {2, 4}) {
    for (OperandKind kind : {OperandKind::query, OperandKind::key_value, OperandKind::score}) {
      const OperandArray array{memory.data(), element_bytes, kind};
      for (std::int64_t e = 0; e < p.batch * p.heads; ++e) {
        const BatchOperandOffsets offsets =
            batch_operand_offsets(params, gemm_entry_batch_index(params, e), score_head_elements(p));
        const std::int64_t expected = kind == OperandKind::query       ? offsets.q
                                      : kind == OperandKind::key_value ? offsets.kv
                                                                       : offsets.score;
        EXPECT_EQ(operand_offset(offsets, kind), expected);
        EXPECT_EQ(operand_pointer(array, params, e, score_head_elements(p)) - memory.data(), expected * element_bytes);
      }
    }
  }
}

// ---- GEMM parameters, through a column-major GEMM emulation ---------------------

// C = alpha op(A) op(B) + beta C, reading the arguments exactly as cuBLAS does:
// column-major, element (r, c) of a matrix with leading dimension ld at r + c·ld
// from its pointer (an offset into `a`, `b`, `c`); op(A) is m x k, op(B) k x n,
// C m x n; with beta = 0, C is not read. Out-of-range accesses throw (vector::at).
void column_major_gemm(const GemmShape& g, double alpha, const std::vector<double>& a, std::int64_t a_offset,
                       const std::vector<double>& b, std::int64_t b_offset, std::vector<double>& c,
                       std::int64_t c_offset, double beta = 0.0) {
  auto element = [](const std::vector<double>& x, std::int64_t offset, std::int64_t row, std::int64_t column,
                    std::int64_t ld) { return x.at(static_cast<std::size_t>(offset + row + column * ld)); };
  for (std::int64_t column = 0; column < g.n; ++column) {
    for (std::int64_t row = 0; row < g.m; ++row) {
      double sum = 0.0;
      for (std::int64_t l = 0; l < g.k; ++l) {
        const double op_a = g.transpose_a ? element(a, a_offset, l, row, g.lda) : element(a, a_offset, row, l, g.lda);
        const double op_b =
            g.transpose_b ? element(b, b_offset, column, l, g.ldb) : element(b, b_offset, l, column, g.ldb);
        sum += op_a * op_b;
      }
      double& result = c.at(static_cast<std::size_t>(c_offset + row + column * g.ldc));
      result = alpha * sum + (beta == 0.0 ? 0.0 : beta * result);
    }
  }
}

// Element offset of (b, s, h, x) of a [batch, seq, heads, dim] tensor, from the
// layout's definition (independent of strides_for).
std::int64_t tensor_offset(Layout layout, std::int64_t seqlen, std::int64_t heads, std::int64_t head_dim,
                           std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t x) {
  if (layout == Layout::bshd) return ((b * seqlen + s) * heads + h) * head_dim + x;
  return ((b * heads + h) * seqlen + s) * head_dim + x;
}

std::vector<double> normal_values(std::size_t count, std::mt19937_64& generator) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(count);
  for (double& value : values) value = normal(generator);
  return values;
}

// One query row (b, h, i), with its kv head and its GEMM batch entry.
struct QueryRow {
  std::int64_t b, h, hkv, z, i;
};

// Calls check(row) for every query row until a check fails fatally.
template <typename Check>
void for_each_query_row(const Problem& p, Check&& check) {
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
        check(QueryRow{b, h, h / (p.heads / p.kv_heads), b * p.heads + h, i});
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Batched GEMMs as cublas_attention.cu issues them: each GEMM entry e of
// [first, first + count), in the group-member-major order, reads and writes its
// operands at the offsets of its batch index (the pointer arrays' contents).
struct GemmEmulation {
  const Problem& p;
  AttentionParams params;

  std::int64_t offset(std::int64_t e, OperandKind kind) const {
    return operand_offset(batch_operand_offsets(params, gemm_entry_batch_index(params, e), score_head_elements(p)),
                          kind);
  }
  void run(const GemmShape& g, double alpha, const std::vector<double>& a, OperandKind a_kind,
           const std::vector<double>& b, OperandKind b_kind, std::vector<double>& c, OperandKind c_kind, double beta,
           std::int64_t first, std::int64_t count) const {
    for (std::int64_t e = first; e < first + count; ++e) {
      column_major_gemm(g, alpha, a, offset(e, a_kind), b, offset(e, b_kind), c, offset(e, c_kind), beta);
    }
  }
  // One GEMM over every entry, beta = 0.
  void all(const GemmShape& g, double alpha, const std::vector<double>& a, OperandKind a_kind,
           const std::vector<double>& b, OperandKind b_kind, std::vector<double>& c, OperandKind c_kind) const {
    run(g, alpha, a, a_kind, b, b_kind, c, c_kind, 0.0, 0, p.batch * p.heads);
  }
  // dV or dK: one GEMM per group member over its batch x kv_heads entries,
  // beta = 0 for the first member and 1 after.
  void key_gradient(double alpha, const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>& c) const {
    const std::int64_t member_entries = p.batch * p.kv_heads;
    for (std::int64_t g = 0; g < p.head_group(); ++g) {
      run(key_gradient_gemm_shape(p), alpha, a, OperandKind::query, b, OperandKind::score, c, OperandKind::key_value,
          g == 0 ? 0.0 : 1.0, g * member_entries, member_entries);
    }
  }
};

// Accessors of the test's tensors by (b, s, h, x) and of score-shaped arrays by
// query row and key, from the layouts' definitions.
struct TensorAccess {
  const Problem& p;
  double q(const std::vector<double>& t, const QueryRow& r, std::int64_t x) const {
    return t.at(static_cast<std::size_t>(tensor_offset(p.layout, p.seqlen_q, p.heads, p.head_dim, r.b, r.i, r.h, x)));
  }
  double kv(const std::vector<double>& t, const QueryRow& r, std::int64_t j, std::int64_t x) const {
    return t.at(
        static_cast<std::size_t>(tensor_offset(p.layout, p.seqlen_k, p.kv_heads, p.head_dim, r.b, j, r.hkv, x)));
  }
  double score(const std::vector<double>& t, const QueryRow& r, std::int64_t j) const {
    return t.at(static_cast<std::size_t>((r.z * p.seqlen_q + r.i) * score_row_stride(p) + j));
  }
};

// A score-shaped array of N(0, 1) values with NaN in the columns [Nk, stride),
// which no GEMM may read.
std::vector<double> score_operand(const Problem& p, std::mt19937_64& generator) {
  const std::int64_t stride = score_row_stride(p);
  std::vector<double> values =
      normal_values(static_cast<std::size_t>(p.batch * p.heads * score_head_elements(p)), generator);
  for (std::size_t e = 0; e < values.size(); ++e) {
    if (static_cast<std::int64_t>(e) % stride >= p.seqlen_k) values[e] = kNaN;
  }
  return values;
}

// Random operands for the GEMM checks: Q, K, V, dO N(0, 1); P~ and dS
// score-shaped with NaN in the columns no GEMM may read.
struct RandomOperands {
  std::vector<double> q, k, v, d_out, probabilities, d_scores;
  RandomOperands(const Problem& p, std::mt19937_64& generator)
      : q(normal_values(static_cast<std::size_t>(q_elements(p)), generator)),
        k(normal_values(static_cast<std::size_t>(kv_elements(p)), generator)),
        v(normal_values(static_cast<std::size_t>(kv_elements(p)), generator)),
        d_out(normal_values(static_cast<std::size_t>(q_elements(p)), generator)),
        probabilities(score_operand(p, generator)),
        d_scores(score_operand(p, generator)) {}
};

constexpr double kUntouched = -12345.0;

// A score-shaped result, all kUntouched, for a GEMM to write.
std::vector<double> untouched_scores(const Problem& p) {
  return std::vector<double>(static_cast<std::size_t>(p.batch * p.heads * score_head_elements(p)), kUntouched);
}

// got (score-shaped) = alpha A B^T per query row, A query-side (Q, dO) and B
// key-side (K, V); the columns in [Nk, stride) untouched.
void expect_score_products(const Problem& p, const char* what, const std::vector<double>& got, double alpha,
                           const std::vector<double>& a, const std::vector<double>& b) {
  const TensorAccess at{p};
  for_each_query_row(p, [&](const QueryRow& r) {
    for (std::int64_t j = 0; j < score_row_stride(p); ++j) {
      const double value = at.score(got, r, j);
      if (j >= p.seqlen_k) {
        ASSERT_EQ(value, kUntouched) << what << " column " << j << " beyond Nk written";
        continue;
      }
      double expected = 0.0;
      for (std::int64_t x = 0; x < p.head_dim; ++x) expected += at.q(a, r, x) * at.kv(b, r, j, x);
      ASSERT_NEAR(value, alpha * expected, 1e-12) << what << " b=" << r.b << " h=" << r.h << " i=" << r.i << " j=" << j;
    }
  });
}

// got (query-side) = alpha M B per query row, M score-shaped (P~, dS) and B
// key-side (V, K).
void expect_query_products(const Problem& p, const char* what, const std::vector<double>& got, double alpha,
                           const std::vector<double>& m, const std::vector<double>& b) {
  const TensorAccess at{p};
  for_each_query_row(p, [&](const QueryRow& r) {
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      double expected = 0.0;
      for (std::int64_t j = 0; j < p.seqlen_k; ++j) expected += at.score(m, r, j) * at.kv(b, r, j, x);
      ASSERT_NEAR(at.q(got, r, x), alpha * expected, 1e-12)
          << what << " b=" << r.b << " h=" << r.h << " i=" << r.i << " x=" << x;
    }
  });
}

// got (key-side) = alpha sum over the kv head's query heads h of M_h^T A_h, M
// score-shaped (P~, dS) and A query-side (dO, Q).
void expect_key_products(const Problem& p, const char* what, const std::vector<double>& got, double alpha,
                         const std::vector<double>& m, const std::vector<double>& a) {
  const TensorAccess at{p};
  const std::int64_t group = p.heads / p.kv_heads;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t hkv = 0; hkv < p.kv_heads; ++hkv) {
      for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
        for (std::int64_t x = 0; x < p.head_dim; ++x) {
          double expected = 0.0;
          for (std::int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
            for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
              const QueryRow r{b, h, hkv, b * p.heads + h, i};
              expected += at.score(m, r, j) * at.q(a, r, x);
            }
          }
          ASSERT_NEAR(at.kv(got, QueryRow{b, hkv * group, hkv, 0, 0}, j, x), alpha * expected, 1e-12)
              << what << " b=" << b << " hkv=" << hkv << " j=" << j << " x=" << x;
        }
      }
    }
  }
}

// The forward's two GEMMs: S = tau Q K^T and O = P~ V (O starts as NaN, so
// every element must be written).
void expect_gemms_compute_attention_products(const Problem& p) {
  SCOPED_TRACE(describe(p));
  std::mt19937_64 generator(static_cast<std::uint64_t>(p.seqlen_q * 1000 + p.seqlen_k));
  const RandomOperands in(p, generator);
  const double tau = p.softmax_scale();
  const GemmEmulation gemm{p, make_attention_params(p, nullptr)};
  ASSERT_TRUE(gemm_shape_valid(score_gemm_shape(p)));
  ASSERT_TRUE(gemm_shape_valid(output_gemm_shape(p)));

  std::vector<double> scores = untouched_scores(p);
  gemm.all(score_gemm_shape(p), tau, in.k, OperandKind::key_value, in.q, OperandKind::query, scores,
           OperandKind::score);
  expect_score_products(p, "S", scores, tau, in.q, in.k);
  std::vector<double> out(static_cast<std::size_t>(q_elements(p)), kNaN);
  gemm.all(output_gemm_shape(p), 1.0, in.v, OperandKind::key_value, in.probabilities, OperandKind::score, out,
           OperandKind::query);
  expect_query_products(p, "O", out, 1.0, in.probabilities, in.v);
}

// The backward's four GEMMs: dP = dO V^T, dQ = tau dS K, and dV = P~^T dO,
// dK = tau dS^T Q summed over each kv head's query heads (outputs start as NaN).
void expect_backward_gemms_compute_gradients(const Problem& p) {
  SCOPED_TRACE(describe(p) + " heads=" + std::to_string(p.heads) + " kv_heads=" + std::to_string(p.kv_heads));
  std::mt19937_64 generator(static_cast<std::uint64_t>(p.seqlen_q * 7919 + p.seqlen_k));
  const RandomOperands in(p, generator);
  const double tau = p.softmax_scale();
  const GemmEmulation gemm{p, make_attention_params(p, nullptr)};
  for (const GemmShape& g : {probability_gradient_gemm_shape(p), query_gradient_gemm_shape(p),
                             key_gradient_gemm_shape(p)}) {
    ASSERT_TRUE(gemm_shape_valid(g));
  }

  std::vector<double> d_probabilities = untouched_scores(p);
  gemm.all(probability_gradient_gemm_shape(p), 1.0, in.v, OperandKind::key_value, in.d_out, OperandKind::query,
           d_probabilities, OperandKind::score);
  expect_score_products(p, "dP", d_probabilities, 1.0, in.d_out, in.v);
  std::vector<double> d_q(static_cast<std::size_t>(q_elements(p)), kNaN);
  gemm.all(query_gradient_gemm_shape(p), tau, in.k, OperandKind::key_value, in.d_scores, OperandKind::score, d_q,
           OperandKind::query);
  expect_query_products(p, "dQ", d_q, tau, in.d_scores, in.k);
  std::vector<double> d_v(static_cast<std::size_t>(kv_elements(p)), kNaN);
  gemm.key_gradient(1.0, in.d_out, in.probabilities, d_v);
  expect_key_products(p, "dV", d_v, 1.0, in.probabilities, in.d_out);
  std::vector<double> d_k(static_cast<std::size_t>(kv_elements(p)), kNaN);
  gemm.key_gradient(tau, in.q, in.d_scores, d_k);
  expect_key_products(p, "dK", d_k, tau, in.d_scores, in.q);
}

TEST(CublasPlan, GemmEmulationReproducesScoresAndOutputInBothLayoutsWithGqa) {
  for (Layout layout : {Layout::bshd, Layout::bhsd}) {
    expect_gemms_compute_attention_products(gqa_problem(layout, 5, 11, 6));    // Nq < Nk, Nk not a multiple of 8
    expect_gemms_compute_attention_products(gqa_problem(layout, 13, 7, 8));    // Nq > Nk
    expect_gemms_compute_attention_products(gqa_problem(layout, 9, 17, 3));    // odd head dim
  }
}

TEST(CublasPlan, BackwardGemmEmulationReproducesGradientsInBothLayoutsWithAndWithoutGqa) {
  for (Layout layout : {Layout::bshd, Layout::bhsd}) {
    for (std::int64_t kv_heads : {2, 4, 1}) {  // group 2, no GQA, every query head on one kv head
      const auto with_kv_heads = [kv_heads](Problem p) {
        p.kv_heads = kv_heads;
        return p;
      };
      expect_backward_gemms_compute_gradients(with_kv_heads(gqa_problem(layout, 5, 11, 6)));  // Nq < Nk
      expect_backward_gemms_compute_gradients(with_kv_heads(gqa_problem(layout, 13, 7, 8)));  // Nq > Nk
      expect_backward_gemms_compute_gradients(with_kv_heads(gqa_problem(layout, 9, 17, 3)));  // odd head dim
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CublasPlan, OperandOffsetsFollowTheQueryHeadAndItsKvHead) {
  for (Layout layout : {Layout::bshd, Layout::bhsd}) {
    const Problem p = gqa_problem(layout, 5, 11, 6);
    const AttentionParams params = make_attention_params(p, nullptr);
    for (std::int64_t z = 0; z < p.batch * p.heads; ++z) {
      const std::int64_t b = z / p.heads, h = z % p.heads;
      const BatchOperandOffsets offsets = batch_operand_offsets(params, z, score_head_elements(p));
      EXPECT_EQ(offsets.q, tensor_offset(layout, 5, 4, 6, b, 0, h, 0));
      EXPECT_EQ(offsets.o, offsets.q);
      EXPECT_EQ(offsets.kv, tensor_offset(layout, 11, 2, 6, b, 0, h / 2, 0));
      EXPECT_EQ(offsets.score, z * score_head_elements(p));
    }
  }
}

TEST(CublasPlan, GemmShapeValidityFollowsCublasRules) {
  const GemmShape good = score_gemm_shape(gqa_problem(Layout::bshd, 5, 11, 6));
  EXPECT_TRUE(gemm_shape_valid(good));
  EXPECT_TRUE(gemm_shape_valid(output_gemm_shape(gqa_problem(Layout::bhsd, 5, 11, 6))));

  // Each change breaks one rule.
  auto valid_after = [&](void (*change)(GemmShape&)) {
    GemmShape g = good;
    change(g);
    return gemm_shape_valid(g);
  };
  EXPECT_FALSE(valid_after([](GemmShape& g) { g.lda = g.k - 1; })) << "transpose_a: A is stored k x m, lda >= k";
  EXPECT_FALSE(valid_after([](GemmShape& g) {
    g.transpose_a = false;
    g.lda = g.m - 1;
  })) << "A stored m x k: lda >= m";
  EXPECT_FALSE(valid_after([](GemmShape& g) { g.ldb = g.k - 1; })) << "B stored k x n: ldb >= k";
  EXPECT_FALSE(valid_after([](GemmShape& g) {
    g.transpose_b = true;
    g.ldb = g.n - 1;
  })) << "transpose_b: B is stored n x k, ldb >= n";
  EXPECT_FALSE(valid_after([](GemmShape& g) { g.ldc = g.m - 1; })) << "ldc >= m";
  EXPECT_FALSE(valid_after([](GemmShape& g) { g.k = 0; })) << "sizes are at least 1";
  EXPECT_FALSE(valid_after([](GemmShape& g) { g.n = std::int64_t{INT_MAX} + 1; })) << "sizes are int";
  EXPECT_FALSE(valid_after([](GemmShape& g) { g.lda = std::int64_t{INT_MAX} + 1; })) << "leading dimensions are int";

  // BSHD rows of 2^20 heads x 4096 dims: the leading dimension overflows int.
  Problem wide = gqa_problem(Layout::bshd, 4, 4, 4096);
  wide.heads = wide.kv_heads = std::int64_t{1} << 20;
  EXPECT_FALSE(gemm_shape_valid(score_gemm_shape(wide)));
  EXPECT_FALSE(gemm_shape_valid(output_gemm_shape(wide)));
  // The same problem in BHSD has row stride d and is fine.
  wide.layout = Layout::bhsd;
  EXPECT_TRUE(gemm_shape_valid(score_gemm_shape(wide)));
  EXPECT_TRUE(gemm_shape_valid(output_gemm_shape(wide)));
  // A key length beyond int.
  Problem long_keys = gqa_problem(Layout::bhsd, 4, std::int64_t{INT_MAX} + 1, 64);
  EXPECT_FALSE(gemm_shape_valid(score_gemm_shape(long_keys)));
  EXPECT_FALSE(gemm_shape_valid(output_gemm_shape(long_keys)));
}

// ---- Softmax rows against a direct fp64 softmax ---------------------------------

// One row of P~ and its LSE as the kernel computes them: `threads` workers'
// partial states, merged in worker order, then every worker's groups written.
struct RowResult {
  std::vector<float> values;  // the row's row_stride columns (P~ or dS); unwritten ones keep kUnwritten
  std::vector<int> stores;           // times each group of 4 was stored
  float lse = 0.0f;
};
constexpr float kUnwritten = 777.0f;

RowResult run_softmax_row(const std::vector<float>& scores, const SoftmaxRow& row, const DropoutRng& rng,
                          int threads) {
  SoftmaxRowState<float> state;
  MergeFactors<float> factors;
  for (int t = 0; t < threads; ++t) {
    state = online_softmax_merge(state, softmax_row_partial(scores.data(), row.visible, t, threads), factors);
  }
  RowResult result;
  result.values.assign(scores.size(), kUnwritten);
  result.stores.assign(scores.size() / 4, 0);
  for (int t = 0; t < threads; ++t) {
    softmax_row_write(scores.data(), row, state, rng, t, threads, [&](std::int64_t g, const ScoreGroup& p) {
      ++result.stores.at(static_cast<std::size_t>(g));
      for (int k = 0; k < 4; ++k) result.values.at(static_cast<std::size_t>(4 * g + k)) = p.value[k];
    });
  }
  result.lse = online_softmax_lse(state);
  return result;
}

struct RowCase {
  MaskSpec mask;
  std::int64_t seqlen_q, seqlen_k;  // the padded grid
  std::int64_t length_q, length_k;  // this batch element's valid lengths
  DropoutRng rng;
};

std::string describe(const RowCase& c, std::int64_t i, int threads) {
  return "causal=" + std::to_string(c.mask.causal) + " bottom_right=" + std::to_string(c.mask.bottom_right) +
         " window=(" + std::to_string(c.mask.window_left) + "," + std::to_string(c.mask.window_right) + ") Nq=" +
         std::to_string(c.seqlen_q) + " Nk=" + std::to_string(c.seqlen_k) + " Lq=" + std::to_string(c.length_q) +
         " Lk=" + std::to_string(c.length_k) + " dropout=" + std::to_string(c.rng.enabled) +
         " row=" + std::to_string(i) + " threads=" + std::to_string(threads);
}

constexpr std::uint32_t kBatch = 1, kHead = 2, kHeads = 3;
constexpr double kDropoutProbability = 0.3;

// A row of the padded grid (row_stride columns): `scale` x N(0, 1) where key j
// is visible to row i, garbage (NaN, inf, huge) everywhere else, padded
// columns included.
std::vector<float> row_with_garbage(const RowCase& c, std::int64_t i, std::int64_t row_stride, float scale,
                                    std::mt19937_64& generator) {
  std::normal_distribution<float> normal(0.0f, scale);
  const float garbage[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 3e38f, -3e38f};
  std::vector<float> row(static_cast<std::size_t>(row_stride));
  for (std::int64_t j = 0; j < row_stride; ++j) {
    row[static_cast<std::size_t>(j)] = is_visible(c.mask, i, j, c.length_q, c.length_k)
                                           ? normal(generator)
                                           : garbage[static_cast<std::size_t>(j) % std::size(garbage)];
  }
  return row;
}

// The direct fp64 softmax of row i from the definitions.
struct DirectSoftmax {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0.0;
  double lse() const { return sum > 0.0 ? max + std::log(sum) : -std::numeric_limits<double>::infinity(); }
  double probability(float score) const { return std::exp(double{score} - max) / sum; }
};

DirectSoftmax direct_softmax(const RowCase& c, std::int64_t i, const std::vector<float>& scores) {
  DirectSoftmax softmax;
  for (std::int64_t j = 0; j < c.seqlen_k; ++j) {
    if (is_visible(c.mask, i, j, c.length_q, c.length_k)) softmax.max = std::max(softmax.max, double{scores[j]});
  }
  for (std::int64_t j = 0; j < c.seqlen_k; ++j) {
    if (is_visible(c.mask, i, j, c.length_q, c.length_k)) softmax.sum += std::exp(double{scores[j]} - softmax.max);
  }
  return softmax;
}

// Z/(1-p) of element (kBatch, kHead, i, j) from the contract, in fp64.
double dropout_factor(const RowCase& c, std::int64_t i, std::int64_t j) {
  if (!dropout_keeps(c.rng, kBatch, kHead, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j))) return 0.0;
  return c.rng.enabled ? 1.0 / (1.0 - kDropoutProbability) : 1.0;
}

// Every group of 4 of the padded row stored exactly once, nothing beyond
// round_up(Nk, 4) written.
void expect_whole_row_written(const RowCase& c, const RowResult& result) {
  const std::int64_t written_columns = (c.seqlen_k + 3) / 4 * 4;
  for (std::size_t g = 0; g < result.stores.size(); ++g) {
    ASSERT_EQ(result.stores[g], static_cast<std::int64_t>(4 * g) < written_columns ? 1 : 0) << "group " << g;
  }
  for (std::size_t j = static_cast<std::size_t>(written_columns); j < result.values.size(); ++j) {
    ASSERT_EQ(result.values[j], kUnwritten) << "column " << j << " beyond round_up(Nk, 4) written";
  }
}

// Every row of the case, for every worker count, element by element.
void expect_rows_match_direct_softmax(const RowCase& c, std::mt19937_64& generator) {
  const std::int64_t row_stride = (c.seqlen_k + 7) / 8 * 8;
  for (std::int64_t i = 0; i < c.seqlen_q; ++i) {
    const std::vector<float> scores = row_with_garbage(c, i, row_stride, 3.0f, generator);
    const DirectSoftmax softmax = direct_softmax(c, i, scores);
    const SoftmaxRow row{visible_keys(c.mask, i, c.length_q, c.length_k), c.seqlen_k, kBatch, kHead,
                         static_cast<std::uint32_t>(i)};
    for (int threads : {1, 3, 32, 256}) {
      SCOPED_TRACE(describe(c, i, threads));
      const RowResult result = run_softmax_row(scores, row, c.rng, threads);
      if (softmax.sum == 0.0) {
        ASSERT_EQ(result.lse, -std::numeric_limits<float>::infinity()) << "a row with no visible key";
      } else {
        ASSERT_NEAR(result.lse, softmax.lse(), 1e-5 * (1.0 + std::abs(softmax.max)));
      }
      expect_whole_row_written(c, result);
      for (std::int64_t j = 0; j < (c.seqlen_k + 3) / 4 * 4; ++j) {
        const float got = result.values[static_cast<std::size_t>(j)];
        double expected = 0.0;
        if (j < c.seqlen_k && is_visible(c.mask, i, j, c.length_q, c.length_k)) {
          expected = softmax.probability(scores[j]) * dropout_factor(c, i, j);
        }
        if (expected == 0.0) {
          ASSERT_EQ(got, 0.0f) << "column " << j << " must be exactly zero";
        } else {
          ASSERT_NEAR(got, expected, 1e-5 * expected) << "column " << j;
        }
      }
    }
  }
}

std::vector<MaskSpec> every_mask() {
  std::vector<MaskSpec> masks;
  for (bool causal : {false, true}) {
    for (bool bottom_right : {false, true}) {
      for (std::int64_t left : {-1, 0, 3}) {
        for (std::int64_t right : {-1, 0, 2}) masks.push_back(MaskSpec{causal, bottom_right, left, right});
      }
    }
  }
  return masks;
}

// Calls check(case) for every mask, grid, valid lengths (full; shorter; no
// keys; no queries) and dropout off and on, until a check fails fatally.
template <typename Check>
void for_each_row_case(Check&& check) {
  const DropoutRng dropouts[] = {DropoutRng{}, make_dropout_rng(kDropoutProbability, 0x5eed0000feedull, 7, kHeads)};
  struct Grid {
    std::int64_t seqlen_q, seqlen_k;
  };
  const Grid grids[] = {{6, 1}, {5, 13}, {13, 5}, {9, 37}, {4, 130}, {3, 64}};
  for (const MaskSpec& mask : every_mask()) {
    for (const Grid& grid : grids) {
      struct Lengths {
        std::int64_t q, k;
      };
      const Lengths lengths[] = {{grid.seqlen_q, grid.seqlen_k},
                                 {std::max<std::int64_t>(grid.seqlen_q - 2, 0), std::max<std::int64_t>(grid.seqlen_k - 3, 0)},
                                 {grid.seqlen_q, 0},
                                 {0, grid.seqlen_k}};
      for (const Lengths& length : lengths) {
        for (const DropoutRng& rng : dropouts) {
          check(RowCase{mask, grid.seqlen_q, grid.seqlen_k, length.q, length.k, rng});
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(SoftmaxRow, MatchesDirectSoftmaxForEveryMaskLengthsDropoutAndWorkerCount) {
  std::mt19937_64 generator(2024);
  for_each_row_case([&](const RowCase& c) { expect_rows_match_direct_softmax(c, generator); });
}

// ---- Score-gradient rows against a direct fp64 dS ----------------------------------

TEST(ScoreGradientRow, RowDotPartialsSumToTheDotProduct) {
  std::mt19937_64 generator(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto to_float = [](float x) { return x; };
  for (std::int64_t head_dim : {1, 3, 64, 128, 300}) {
    std::vector<float> a(static_cast<std::size_t>(head_dim)), b(a.size());
    for (std::size_t x = 0; x < a.size(); ++x) {
      a[x] = normal(generator);
      b[x] = normal(generator);
    }
    double expected = 0.0, magnitude = 0.0;
    for (std::size_t x = 0; x < a.size(); ++x) {
      expected += double{a[x]} * double{b[x]};
      magnitude += std::abs(double{a[x]} * double{b[x]});
    }
    for (int threads : {1, 3, 32, 256}) {
      float sum = 0.0f;
      for (int t = 0; t < threads; ++t) sum += row_dot_partial(a.data(), b.data(), head_dim, t, threads, to_float);
      EXPECT_NEAR(sum, expected, 1e-6 * magnitude) << "d=" << head_dim << " threads=" << threads;
    }
  }
}

// One row of dS as the kernel writes it: every worker's groups.
RowResult run_score_gradient_row(const std::vector<float>& scores, const std::vector<float>& d_probabilities,
                                 const ScoreGradientRow& row, const DropoutRng& rng, int threads) {
  RowResult result;
  result.values.assign(scores.size(), kUnwritten);
  result.stores.assign(scores.size() / 4, 0);
  for (int t = 0; t < threads; ++t) {
    score_gradient_row_write(scores.data(), d_probabilities.data(), row, rng, t, threads,
                             [&](std::int64_t g, const ScoreGroup& d_score) {
                               ++result.stores.at(static_cast<std::size_t>(g));
                               for (int k = 0; k < 4; ++k) {
                                 result.values.at(static_cast<std::size_t>(4 * g + k)) = d_score.value[k];
                               }
                             });
  }
  return result;
}

// Every row of the case, for every worker count, element by element: dS from
// the definitions in fp64, P = softmax(S + mask) computed directly (not from
// the LSE the kernel is handed, which is the fp32 LSE the forward stores).
// Masked and padded columns of S and dP hold garbage.
void expect_rows_match_direct_score_gradient(const RowCase& c, std::mt19937_64& generator) {
  const std::int64_t row_stride = (c.seqlen_k + 7) / 8 * 8;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t i = 0; i < c.seqlen_q; ++i) {
    const std::vector<float> scores = row_with_garbage(c, i, row_stride, 3.0f, generator);
    const std::vector<float> d_probabilities = row_with_garbage(c, i, row_stride, 1.0f, generator);
    const DirectSoftmax softmax = direct_softmax(c, i, scores);
    const float d_out_dot_out = normal(generator);
    const ScoreGradientRow row{SoftmaxRow{visible_keys(c.mask, i, c.length_q, c.length_k), c.seqlen_k, kBatch, kHead,
                                          static_cast<std::uint32_t>(i)},
                               static_cast<float>(softmax.lse()), d_out_dot_out};
    for (int threads : {1, 3, 32, 256}) {
      SCOPED_TRACE(describe(c, i, threads));
      const RowResult result = run_score_gradient_row(scores, d_probabilities, row, c.rng, threads);
      expect_whole_row_written(c, result);
      for (std::int64_t j = 0; j < (c.seqlen_k + 3) / 4 * 4; ++j) {
        const float got = result.values[static_cast<std::size_t>(j)];
        if (j >= c.seqlen_k || !is_visible(c.mask, i, j, c.length_q, c.length_k)) {
          ASSERT_EQ(got, 0.0f) << "masked column " << j << " must be exactly zero";
          continue;
        }
        const double probability = softmax.probability(scores[j]);
        const double product = double{d_probabilities[j]} * dropout_factor(c, i, j);
        const double expected = probability * (product - double{d_out_dot_out});
        // fp32 arithmetic: P = exp(S - LSE) with |LSE| up to ~15 errs by ~1e-6.
        const double bound =
            4e-6 * (1.0 + std::abs(softmax.lse())) * probability * (std::abs(product) + std::abs(d_out_dot_out));
        ASSERT_NEAR(got, expected, bound + 1e-30) << "column " << j;
      }
    }
  }
}

TEST(ScoreGradientRow, MatchesDirectScoreGradientForEveryMaskLengthsDropoutAndWorkerCount) {
  std::mt19937_64 generator(2025);
  for_each_row_case([&](const RowCase& c) { expect_rows_match_direct_score_gradient(c, generator); });
}

// Padded query rows (i >= Lq) and rows the mask leaves empty (bottom-right
// causal with Nq > Nk, a window past Lk) write an all-zero P~ row and LSE =
// -inf in the forward, and an all-zero dS row in the backward (handed that
// LSE), whatever S and dP hold: never NaN.
TEST(RowLogic, RowsWithoutVisibleKeysAreZeroWithMinusInfinityLse) {
  const DropoutRng rng = make_dropout_rng(0.2, 99, 0, kHeads);
  const std::vector<float> garbage(16, std::numeric_limits<float>::quiet_NaN());
  struct EmptyRow {
    MaskSpec mask;
    std::int64_t row, length_q, length_k;
  };
  const EmptyRow empty_rows[] = {{MaskSpec{}, 9, 9, 13},                     // padded row i = Lq
                                 {MaskSpec{}, 2, 5, 0},                      // no valid key
                                 {MaskSpec{true, true, -1, -1}, 3, 20, 13},  // i + Lk - Lq < 0
                                 {MaskSpec{false, false, 0, -1}, 13, 20, 13}};  // window starts past Lk
  for (const EmptyRow& empty : empty_rows) {
    const SoftmaxRow row{visible_keys(empty.mask, empty.row, empty.length_q, empty.length_k), 13, kBatch, kHead,
                         static_cast<std::uint32_t>(empty.row)};
    ASSERT_TRUE(row.visible.empty());
    for (int threads : {1, 32}) {
      const RowResult probabilities = run_softmax_row(garbage, row, rng, threads);
      EXPECT_EQ(probabilities.lse, -std::numeric_limits<float>::infinity());
      const RowResult d_scores =
          run_score_gradient_row(garbage, garbage, ScoreGradientRow{row, probabilities.lse, 1.5f}, rng, threads);
      for (std::size_t j = 0; j < garbage.size(); ++j) {
        EXPECT_EQ(probabilities.values[j], 0.0f) << "P~ column " << j;
        EXPECT_EQ(d_scores.values[j], 0.0f) << "dS column " << j;
      }
    }
  }
}

// ---- The whole pipeline against the fp64 oracle -------------------------------------

struct PipelineOutputs {
  std::vector<double> out, lse, d_q, d_k, d_v;
};

// cuda.cublas's forward and backward as cublas_attention.cu composes them, on
// the CPU: the GEMMs through the emulation (fp64), the softmax and score-gradient
// rows through their row logic (fp32, 32 workers), P~ and dS kept in fp32 (the
// GPU rounds them to the input dtype).
PipelineOutputs emulate_cublas_attention(const Problem& p, const test::Inputs& in) {
  std::vector<std::int64_t> lengths(p.lengths_q);
  lengths.insert(lengths.end(), p.lengths_k.begin(), p.lengths_k.end());
  const AttentionParams params = make_attention_params(p, has_padding(p) ? lengths.data() : nullptr);
  const GemmEmulation gemm{p, params};
  const auto values = [](const test::OwnedBuffer& tensor) {
    std::vector<double> result(static_cast<std::size_t>(tensor.size()));
    for (std::int64_t e = 0; e < tensor.size(); ++e) result[static_cast<std::size_t>(e)] = tensor.at(e);
    return result;
  };
  const std::vector<double> q = values(in.q), k = values(in.k), v = values(in.v), d_out = values(in.d_out);
  const auto score_shaped = [&] {
    return std::vector<double>(static_cast<std::size_t>(p.batch * p.heads * score_head_elements(p)), kNaN);
  };
  const std::int64_t stride = score_row_stride(p);
  constexpr int kThreads = 32;
  const auto row_of = [&](const std::vector<double>& matrix, std::int64_t r) {
    return std::vector<float>(matrix.begin() + r * stride, matrix.begin() + (r + 1) * stride);
  };
  const auto position_of = [&](std::int64_t r) {
    const std::int64_t z = r / p.seqlen_q, i = r % p.seqlen_q, b = z / p.heads, h = z % p.heads;
    return SoftmaxRow{visible_keys(p.mask, i, params.length_q(b), params.length_k(b)), p.seqlen_k,
                      static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(i)};
  };
  const std::int64_t rows = p.batch * p.heads * p.seqlen_q;

  PipelineOutputs result;
  std::vector<double> scores = score_shaped();
  gemm.all(score_gemm_shape(p), params.scale, k, OperandKind::key_value, q, OperandKind::query, scores,
           OperandKind::score);
  std::vector<double> probabilities = score_shaped();
  result.lse.assign(static_cast<std::size_t>(lse_elements(p)), kNaN);
  for (std::int64_t r = 0; r < rows; ++r) {
    const RowResult row = run_softmax_row(row_of(scores, r), position_of(r), params.dropout, kThreads);
    for (std::int64_t j = 0; j < (p.seqlen_k + 3) / 4 * 4; ++j) {
      probabilities[static_cast<std::size_t>(r * stride + j)] = row.values[static_cast<std::size_t>(j)];
    }
    result.lse[static_cast<std::size_t>(r)] = row.lse;
  }
  result.out.assign(static_cast<std::size_t>(q_elements(p)), kNaN);
  gemm.all(output_gemm_shape(p), 1.0, v, OperandKind::key_value, probabilities, OperandKind::score, result.out,
           OperandKind::query);

  result.d_v.assign(static_cast<std::size_t>(kv_elements(p)), kNaN);
  gemm.key_gradient(1.0, d_out, probabilities, result.d_v);
  std::vector<double> d_probabilities = score_shaped();
  gemm.all(probability_gradient_gemm_shape(p), 1.0, v, OperandKind::key_value, d_out, OperandKind::query,
           d_probabilities, OperandKind::score);
  std::vector<double> d_scores = score_shaped();
  const auto to_float = [](double x) { return static_cast<float>(x); };
  for (std::int64_t r = 0; r < rows; ++r) {
    const SoftmaxRow position = position_of(r);
    const std::int64_t offset = params.q_offset(position.batch, position.row, position.head);
    float d_out_dot_out = 0.0f;
    for (int t = 0; t < kThreads; ++t) {
      d_out_dot_out += row_dot_partial(d_out.data() + offset, result.out.data() + offset, p.head_dim, t, kThreads,
                                       to_float);
    }
    const ScoreGradientRow row{position, static_cast<float>(result.lse[static_cast<std::size_t>(r)]), d_out_dot_out};
    const RowResult d_score_row = run_score_gradient_row(row_of(scores, r), row_of(d_probabilities, r), row,
                                                         params.dropout, kThreads);
    for (std::int64_t j = 0; j < (p.seqlen_k + 3) / 4 * 4; ++j) {
      d_scores[static_cast<std::size_t>(r * stride + j)] = d_score_row.values[static_cast<std::size_t>(j)];
    }
  }
  result.d_q.assign(static_cast<std::size_t>(q_elements(p)), kNaN);
  gemm.all(query_gradient_gemm_shape(p), params.scale, k, OperandKind::key_value, d_scores, OperandKind::score,
           result.d_q, OperandKind::query);
  result.d_k.assign(static_cast<std::size_t>(kv_elements(p)), kNaN);
  gemm.key_gradient(params.scale, q, d_scores, result.d_k);
  return result;
}

// Max abs error within `tolerance` x max(1, max |oracle|), and no NaN; infinite
// oracle values (LSE = -inf) exactly.
void expect_close(const char* what, const std::vector<double>& got, const test::OwnedBuffer& oracle,
                  double tolerance) {
  ASSERT_EQ(static_cast<std::int64_t>(got.size()), oracle.size()) << what;
  double scale = 1.0;
  for (std::int64_t e = 0; e < oracle.size(); ++e) {
    if (std::isfinite(oracle.at(e))) scale = std::max(scale, std::abs(oracle.at(e)));
  }
  for (std::int64_t e = 0; e < oracle.size(); ++e) {
    const double expected = oracle.at(e), value = got[static_cast<std::size_t>(e)];
    if (std::isinf(expected)) {
      ASSERT_EQ(value, expected) << what << " element " << e;
    } else {
      ASSERT_NEAR(value, expected, tolerance * scale) << what << " element " << e;
    }
  }
}

// docs/design.md §2.1: rows that see no key have exact-zero O and dQ rows; keys no row
// sees have exact-zero dK and dV rows.
void expect_exact_zeros(const Problem& p, const PipelineOutputs& got) {
  struct ZeroRow {
    const char* what;
    const std::vector<double>* tensor;
    std::int64_t first;  // offset of the row's first element
  };
  std::vector<ZeroRow> rows;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
      for (std::int64_t h = 0; h < p.heads && !test::row_sees_a_key(p, b, i); ++h) {
        rows.push_back({"O", &got.out, test::q_index(p, b, i, h, 0)});
        rows.push_back({"dQ", &got.d_q, test::q_index(p, b, i, h, 0)});
      }
    }
    for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
      for (std::int64_t hkv = 0; hkv < p.kv_heads && !test::key_ever_visible(p, b, j); ++hkv) {
        rows.push_back({"dK", &got.d_k, test::kv_index(p, b, j, hkv, 0)});
        rows.push_back({"dV", &got.d_v, test::kv_index(p, b, j, hkv, 0)});
      }
    }
  }
  EXPECT_FALSE(rows.empty()) << "every case has rows or keys nobody sees";
  for (const ZeroRow& row : rows) {
    for (std::int64_t x = 0; x < p.head_dim; ++x) {
      ASSERT_EQ(row.tensor->at(static_cast<std::size_t>(row.first + x)), 0.0) << row.what << " offset " << row.first;
    }
  }
}

TEST(CublasPipeline, ForwardAndBackwardMatchTheOracleForMasksDropoutPaddingAndGqa) {
  struct PipelineCase {
    const char* name;
    Layout layout;
    std::int64_t kv_heads, seqlen_q, seqlen_k, head_dim;
    MaskSpec mask;
    double dropout;
    std::vector<std::int64_t> lengths_q, lengths_k;  // empty: unpadded
  };
  const PipelineCase cases[] = {
      {"bshd gqa causal bottom-right dropout padded", Layout::bshd, 2, 13, 21, 8, MaskSpec{true, true, -1, -1}, 0.2,
       {13, 6}, {17, 21}},
      {"bhsd mha window top-left", Layout::bhsd, 4, 21, 13, 8, MaskSpec{false, false, 3, 2}, 0.0, {}, {}},
      {"bshd one kv head dropout padded", Layout::bshd, 1, 9, 9, 5, MaskSpec{}, 0.1, {9, 7}, {9, 6}},
      {"bhsd gqa causal bottom-right Nq > Nk padded dropout", Layout::bhsd, 2, 19, 11, 8,
       MaskSpec{true, true, -1, -1}, 0.15, {19, 12}, {11, 4}},
  };
  for (const PipelineCase& c : cases) {
    SCOPED_TRACE(c.name);
    Problem p = test::make_problem(2, 4, c.kv_heads, c.seqlen_q, c.seqlen_k, c.head_dim);
    p.layout = c.layout;
    p.mask = c.mask;
    p.dropout = DropoutSpec{c.dropout, 0x5eed1234ull, 5};
    if (!c.lengths_q.empty()) {
      p.padding.kind = PaddingSpec::Kind::explicit_lengths;
      p.lengths_q = c.lengths_q;
      p.lengths_k = c.lengths_k;
    }
    const test::Inputs in = test::make_inputs(p, 4242);
    const test::Outputs oracle = test::run(test::implementation("cpu.reference"), p, in, 1);
    const PipelineOutputs got = emulate_cublas_attention(p, in);
    expect_close("O", got.out, oracle.out, 1e-5);
    expect_close("LSE", got.lse, oracle.lse, 1e-5);
    expect_close("dQ", got.d_q, oracle.d_q, 1e-5);
    expect_close("dK", got.d_k, oracle.d_k, 1e-5);
    expect_close("dV", got.d_v, oracle.d_v, 1e-5);
    expect_exact_zeros(p, got);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace attnbench
