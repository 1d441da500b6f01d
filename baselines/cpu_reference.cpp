// cpu.reference: exact attention in fp64, the oracle every other implementation
// is checked against (docs/design.md §1-2).
//
// Everything is computed one query row at a time. For row i of query head
// (b, h), with kv head hkv = kv_head_of(h), tau the softmax scale and
// Z_ij / (1 - p) the dropout factor of the RNG contract:
//   P_i   = softmax_j(tau q_i . k_j) over the visible keys (0 elsewhere), LSE_i
//   O_i   = sum_j P_ij Z_ij/(1-p) v_j
//   D_i   = dO_i . O_i
//   dS_ij = P_ij (Z_ij/(1-p) dO_i . v_j - D_i)
//   dQ_i  = tau sum_j dS_ij k_j
//   dV_j += P_ij Z_ij/(1-p) dO_i,   dK_j += tau dS_ij q_i   (over the group's heads)
// The mask is evaluated with is_visible, the definition of mask.hpp, so the
// oracle does not share the interval arithmetic the tiled implementations use.
// There is no tiling: a head's K and V are converted to double once, then each
// row is one pass over the keys. The forward runs in parallel over (b, h), the
// backward over (b, kv head) with the group's query heads in sequence.
//
// Assumes: input buffers hold finite values over the whole padded grid; O, dQ,
// dK and dV are fp64 buffers, LSE an fp32 buffer.
#include "cpu_reference.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness/cpu_implementation.hpp"
#include "harness/host_tensor.hpp"
#include "harness/measure/traffic_model.hpp"
#include "../kernels/common/dropout.hpp"
#include "../kernels/common/mask.hpp"

namespace attnbench {
namespace {

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

// What every row of one problem shares: the scale and the dropout contract.
struct Oracle {
  explicit Oracle(const Problem& problem)
      : p(problem),
        tau(problem.softmax_scale()),
        keep_scale(1.0 / (1.0 - problem.dropout.probability)),
        rng(dropout_rng(problem)) {}

  // Z_ij / (1 - p) of element (b, h, i, j): 0 when dropped, 1 without dropout.
  double dropout_factor(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) const {
    return dropout_keeps(rng, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
                         static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j))
               ? keep_scale
               : 0.0;
  }

  const Problem& p;
  double tau;
  double keep_scale;
  DropoutRng rng;
};

double dot(const double* a, const double* b, std::int64_t n) {
  double sum = 0.0;
  for (std::int64_t x = 0; x < n; ++x) sum += a[x] * b[x];
  return sum;
}

// y += alpha * x
void add_scaled(double* y, double alpha, const double* x, std::int64_t n) {
  for (std::int64_t c = 0; c < n; ++c) y[c] += alpha * x[c];
}

// Working memory of one head: the kv head's K and V in double (seqlen_k x d
// each), vectors for one row, and, for the key-side gradients only, dK and dV
// accumulators (seqlen_k x d each).
struct HeadScratch {
  double* k;
  double* v;
  double* q_row;          // d
  double* out_row;        // d
  double* d_out_row;      // d
  double* d_q_row;        // d
  double* probabilities;  // seqlen_k
  double* d_scores;       // seqlen_k
  double* d_k;            // null without key gradients
  double* d_v;            // null without key gradients

  static std::size_t doubles(const Problem& p, bool key_gradients) {
    const std::int64_t matrices = key_gradients ? 4 : 2;
    return static_cast<std::size_t>(matrices * p.seqlen_k * p.head_dim + 4 * p.head_dim +
                                    2 * p.seqlen_k);
  }

  static HeadScratch carve(const Problem& p, double* memory, bool key_gradients) {
    const std::int64_t matrix = p.seqlen_k * p.head_dim;
    HeadScratch s{};
    s.k = memory;
    s.v = s.k + matrix;
    s.q_row = s.v + matrix;
    s.out_row = s.q_row + p.head_dim;
    s.d_out_row = s.out_row + p.head_dim;
    s.d_q_row = s.d_out_row + p.head_dim;
    s.probabilities = s.d_q_row + p.head_dim;
    s.d_scores = s.probabilities + p.seqlen_k;
    if (key_gradients) {
      s.d_k = s.d_scores + p.seqlen_k;
      s.d_v = s.d_k + matrix;
    }
    return s;
  }
};

void load_key_value_head(const Problem& p, const AttentionBuffers& inputs, std::int64_t b,
                         std::int64_t hkv, const HeadScratch& s) {
  key_slice(p, inputs.k, b, hkv).load_rows(0, p.seqlen_k, s.k);
  key_slice(p, inputs.v, b, hkv).load_rows(0, p.seqlen_k, s.v);
}

// The per-row primitive: the un-dropped softmax probabilities of row i of a query
// head in batch element b against every key (0 where masked), and the row's LSE
// (-inf, with all probabilities 0, when the row sees no key).
double row_probabilities(const Oracle& o, std::int64_t b, std::int64_t i, const double* q_row,
                         const double* k, double* probabilities) {
  const std::int64_t len_q = o.p.length_q(b);
  const std::int64_t len_k = o.p.length_k(b);
  const std::int64_t d = o.p.head_dim;
  double row_max = kNegativeInfinity;
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) {
    probabilities[j] = is_visible(o.p.mask, i, j, len_q, len_k) ? o.tau * dot(q_row, k + j * d, d)
                                                                : kNegativeInfinity;
    row_max = std::max(row_max, probabilities[j]);
  }
  if (row_max == kNegativeInfinity) {
    std::fill(probabilities, probabilities + o.p.seqlen_k, 0.0);
    return kNegativeInfinity;
  }
  double sum = 0.0;
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) {
    probabilities[j] = std::exp(probabilities[j] - row_max);
    sum += probabilities[j];
  }
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) probabilities[j] /= sum;
  return row_max + std::log(sum);
}

// Forward of row i of query head (b, h): fills s.probabilities and s.out_row from
// s.q_row; returns the LSE.
double row_forward(const Oracle& o, std::int64_t b, std::int64_t h, std::int64_t i,
                   const HeadScratch& s) {
  const std::int64_t d = o.p.head_dim;
  const double lse = row_probabilities(o, b, i, s.q_row, s.k, s.probabilities);
  std::fill(s.out_row, s.out_row + d, 0.0);
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) {
    if (s.probabilities[j] == 0.0) continue;
    add_scaled(s.out_row, s.probabilities[j] * o.dropout_factor(b, h, i, j), s.v + j * d, d);
  }
  return lse;
}

// Backward of row i after row_forward: fills s.d_scores (dS row i) from
// s.probabilities, s.out_row and s.d_out_row.
void row_score_gradients(const Oracle& o, std::int64_t b, std::int64_t h, std::int64_t i,
                         const HeadScratch& s) {
  const std::int64_t d = o.p.head_dim;
  const double row_d = dot(s.d_out_row, s.out_row, d);
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) {
    const double p_ij = s.probabilities[j];
    s.d_scores[j] =
        p_ij == 0.0
            ? 0.0
            : p_ij * (o.dropout_factor(b, h, i, j) * dot(s.d_out_row, s.v + j * d, d) - row_d);
  }
}

// dQ_i = tau sum_j dS_ij k_j into s.d_q_row.
void row_query_gradient(const Oracle& o, const HeadScratch& s) {
  std::fill(s.d_q_row, s.d_q_row + o.p.head_dim, 0.0);
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) {
    if (s.d_scores[j] == 0.0) continue;
    add_scaled(s.d_q_row, o.tau * s.d_scores[j], s.k + j * o.p.head_dim, o.p.head_dim);
  }
}

// dV_j += P_ij Z_ij/(1-p) dO_i and dK_j += tau dS_ij q_i for every key j.
void accumulate_key_gradients(const Oracle& o, std::int64_t b, std::int64_t h, std::int64_t i,
                              const HeadScratch& s) {
  const std::int64_t d = o.p.head_dim;
  for (std::int64_t j = 0; j < o.p.seqlen_k; ++j) {
    if (s.probabilities[j] == 0.0) continue;
    add_scaled(s.d_v + j * d, s.probabilities[j] * o.dropout_factor(b, h, i, j), s.d_out_row, d);
    add_scaled(s.d_k + j * d, o.tau * s.d_scores[j], s.q_row, d);
  }
}

// dK and dV of kv head (b, hkv) into s.d_k and s.d_v, summed over the group's
// query heads. With d_q non-null, also stores every query row's dQ in it.
void key_head_backward(const Oracle& o, const AttentionBuffers& inputs, std::int64_t b,
                       std::int64_t hkv, const HeadScratch& s, const TensorBuffer* d_q) {
  const Problem& p = o.p;
  load_key_value_head(p, inputs, b, hkv, s);
  std::fill(s.d_k, s.d_k + p.seqlen_k * p.head_dim, 0.0);
  std::fill(s.d_v, s.d_v + p.seqlen_k * p.head_dim, 0.0);
  for (std::int64_t h = hkv * p.head_group(); h < (hkv + 1) * p.head_group(); ++h) {
    const HeadSlice q = query_slice(p, inputs.q, b, h);
    const HeadSlice d_out = query_slice(p, inputs.d_out, b, h);
    for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
      q.load_rows(i, 1, s.q_row);
      d_out.load_rows(i, 1, s.d_out_row);
      row_forward(o, b, h, i, s);
      row_score_gradients(o, b, h, i, s);
      accumulate_key_gradients(o, b, h, i, s);
      if (d_q != nullptr) {
        row_query_gradient(o, s);
        query_slice(p, *d_q, b, h).store_rows(i, 1, s.d_q_row);
      }
    }
  }
}

void require_index(const char* what, std::int64_t value, std::int64_t limit) {
  if (value < 0 || value >= limit) {
    throw std::out_of_range(std::string("reference oracle: ") + what + " " + std::to_string(value) +
                            " is outside [0, " + std::to_string(limit) + ")");
  }
}

class CpuReference final : public CpuImplementation {
 public:
  std::string_view name() const override { return "cpu.reference"; }
  std::string_view summary() const override {
    return "exact attention in fp64, row by row: the accuracy oracle";
  }
  ElementType output_type(const Problem&) const override { return ElementType::f64; }
  // It never stores S or P (one row at a time); the standard model with fp64
  // widths says what the same algorithm would move if it materialized them.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    return standard_traffic(p, StandardWidths{static_cast<int>(element_size(element_type(p.dtype))), 8, 8, 8});
  }
  bool is_oracle() const override { return true; }

  // One HeadScratch per thread; nothing is kept from forward to backward.
  std::size_t workspace_bytes(const Problem& problem,
                              const ExecutionContext& context) const override {
    return static_cast<std::size_t>(context.thread_count()) * HeadScratch::doubles(problem, true) *
           sizeof(double);
  }

  void forward(const Problem& p, const AttentionBuffers& buffers,
               ExecutionContext& context) override {
    const Oracle oracle(p);
    auto* workspace = static_cast<double*>(buffers.workspace.data);
    const std::size_t per_thread = HeadScratch::doubles(p, true);
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.heads; ++task) {
      const std::int64_t b = task / p.heads;
      const std::int64_t h = task % p.heads;
      const HeadScratch s = HeadScratch::carve(
          p, workspace + static_cast<std::size_t>(omp_get_thread_num()) * per_thread, true);
      load_key_value_head(p, buffers, b, p.kv_head_of(h), s);
      const HeadSlice q = query_slice(p, buffers.q, b, h);
      const HeadSlice out = query_slice(p, buffers.out, b, h);
      for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
        q.load_rows(i, 1, s.q_row);
        const double lse = row_forward(oracle, b, h, i, s);
        out.store_rows(i, 1, s.out_row);
        store_from_double(buffers.lse.data, buffers.lse.type,
                          static_cast<std::size_t>(lse_index(p, b, h, i)), lse);
      }
    }
  }

  void backward(const Problem& p, const AttentionBuffers& buffers,
                ExecutionContext& context) override {
    const Oracle oracle(p);
    auto* workspace = static_cast<double*>(buffers.workspace.data);
    const std::size_t per_thread = HeadScratch::doubles(p, true);
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.kv_heads; ++task) {
      const std::int64_t b = task / p.kv_heads;
      const std::int64_t hkv = task % p.kv_heads;
      const HeadScratch s = HeadScratch::carve(
          p, workspace + static_cast<std::size_t>(omp_get_thread_num()) * per_thread, true);
      key_head_backward(oracle, buffers, b, hkv, s, &buffers.d_q);
      key_slice(p, buffers.d_k, b, hkv).store_rows(0, p.seqlen_k, s.d_k);
      key_slice(p, buffers.d_v, b, hkv).store_rows(0, p.seqlen_k, s.d_v);
    }
  }

  nlohmann::ordered_json configuration(const Problem&,
                                       const ExecutionContext& context) const override {
    return {{"threads", context.thread_count()}};
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CpuReference>(); }};

}  // namespace

ReferenceRows reference_query_rows(const Problem& p, const AttentionBuffers& inputs, std::int64_t b,
                                   std::int64_t h, const std::vector<std::int64_t>& rows,
                                   bool with_backward) {
  require_index("batch element", b, p.batch);
  require_index("head", h, p.heads);
  for (const std::int64_t i : rows) require_index("row", i, p.seqlen_q);

  const Oracle oracle(p);
  std::vector<double> memory(HeadScratch::doubles(p, false));
  const HeadScratch s = HeadScratch::carve(p, memory.data(), false);
  load_key_value_head(p, inputs, b, p.kv_head_of(h), s);
  const HeadSlice q = query_slice(p, inputs.q, b, h);

  const auto d = static_cast<std::size_t>(p.head_dim);
  ReferenceRows result;
  result.out.resize(rows.size() * d);
  result.lse.resize(rows.size());
  if (with_backward) result.d_q.resize(rows.size() * d);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t i = rows[r];
    q.load_rows(i, 1, s.q_row);
    result.lse[r] = row_forward(oracle, b, h, i, s);
    std::copy(s.out_row, s.out_row + d, result.out.begin() + static_cast<std::ptrdiff_t>(r * d));
    if (with_backward) {
      query_slice(p, inputs.d_out, b, h).load_rows(i, 1, s.d_out_row);
      row_score_gradients(oracle, b, h, i, s);
      row_query_gradient(oracle, s);
      std::copy(s.d_q_row, s.d_q_row + d, result.d_q.begin() + static_cast<std::ptrdiff_t>(r * d));
    }
  }
  return result;
}

ReferenceKeyGradients reference_key_gradients(const Problem& p, const AttentionBuffers& inputs,
                                              std::int64_t b, std::int64_t hkv) {
  require_index("batch element", b, p.batch);
  require_index("kv head", hkv, p.kv_heads);

  const Oracle oracle(p);
  std::vector<double> memory(HeadScratch::doubles(p, true));
  const HeadScratch s = HeadScratch::carve(p, memory.data(), true);
  key_head_backward(oracle, inputs, b, hkv, s, nullptr);
  const std::size_t matrix = static_cast<std::size_t>(p.seqlen_k * p.head_dim);
  return ReferenceKeyGradients{std::vector<double>(s.d_k, s.d_k + matrix),
                               std::vector<double>(s.d_v, s.d_v + matrix)};
}

}  // namespace attnbench
