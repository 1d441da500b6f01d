// cpu.standard: materializing attention in fp32, the paper's Algorithm 0
// (arXiv 2205.14135) and its backward, on the CPU. It writes the full Nq x Nk
// score and probability matrices of every head to full-size arrays (the "HBM"
// of the paper's model), as a cuBLAS GEMM -> softmax -> GEMM pipeline does, and
// counts every byte it moves between those arrays and its tile buffers.
//
// Forward, per (b, h), in parallel over (b, h):
//   1. S = tau Q K^T over the whole padded grid, masked pairs included: for each
//      block_q rows of Q (loaded once), for each block_k rows of K, compute the
//      S tile and write it.
//   2. Softmax, row by row: read the S row, apply the mask, write the row of P
//      (un-dropped; kept in the workspace for the backward) and LSE.
//   3. O = dropout(P) V: for each Q block, for each K block, load the P tile,
//      regenerate its dropout factors, load the V tile, accumulate the O tile;
//      write the O tile once.
// Backward, in parallel over (b, kv head), the group's query heads in sequence
// (dK and dV accumulate over them):
//   D = rowsum(dO o O), row by row;  dP~ = dO V^T written in full (as step 1);
//   dS = P o (dP~ o Z/(1-p) - D), row by row, overwriting dP~ in place;
//   dV += P~^T dO and dK += tau dS^T Q: for each K block, accumulate a dV/dK
//   tile over the Q blocks (starting from the stored one after the group's first
//   head) and write it;  dQ = tau dS K: for each Q block, over the K blocks.
// Tiles are problem.tile.block_q x block_k (64 x 64 by default).
//
// Assumes: input buffers hold finite values over the whole padded grid (masked
// products are computed and then multiplied by 0); O, dQ, dK, dV and LSE are
// fp32 buffers.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "harness/host_tensor.hpp"
#include "harness/implementation.hpp"
#include "../kernels/common/dropout.hpp"
#include "../kernels/common/mask.hpp"
#include "../kernels/cpu_tiles.hpp"

namespace attnbench {
namespace {

using namespace cpu_tiles;

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// One thread's working memory.
struct StandardScratch {
  float* scores;           // Nq x Nk: S (forward); dP~, then dS in place (backward)
  float* row_d;            // Nq: D
  float* score_row;        // Nk
  float* probability_row;  // Nk
  float* factor_row;       // Nk: Z/(1-p)
  float* query_tile;       // block_q x d
  float* key_tile;         // block_k x d
  float* score_tile;       // block_q x block_k
  float* query_acc;        // block_q x d
  float* key_acc;          // block_k x d

  static StandardScratch carve(const Problem& p, const TileShape& shape, WorkspaceCarver& carver) {
    const std::int64_t d = p.head_dim;
    StandardScratch s{};
    s.scores = carver.floats(p.seqlen_q * p.seqlen_k);
    s.row_d = carver.floats(p.seqlen_q);
    s.score_row = carver.floats(p.seqlen_k);
    s.probability_row = carver.floats(p.seqlen_k);
    s.factor_row = carver.floats(p.seqlen_k);
    s.query_tile = carver.floats(shape.block_q * d);
    s.key_tile = carver.floats(shape.block_k * d);
    s.score_tile = carver.floats(shape.block_q * shape.block_k);
    s.query_acc = carver.floats(shape.block_q * d);
    s.key_acc = carver.floats(shape.block_k * d);
    return s;
  }
};

// Workspace: P of every head, [B, H, Nq, Nk] fp32, kept from forward to backward;
// then one StandardScratch per thread.
struct StandardWorkspace {
  float* probabilities;
  std::byte* scratch;
  std::size_t scratch_bytes;

  static std::size_t probabilities_bytes(const Problem& p) {
    return WorkspaceCarver::round_up(
        static_cast<std::size_t>(p.batch * p.heads * p.seqlen_q * p.seqlen_k) * sizeof(float));
  }
  static std::size_t scratch_bytes_for(const Problem& p) {
    WorkspaceCarver measure;
    StandardScratch::carve(p, tile_shape(p), measure);
    return measure.used();
  }
  static StandardWorkspace of(const Problem& p, const TensorBuffer& workspace) {
    auto* base = static_cast<std::byte*>(workspace.data);
    return StandardWorkspace{reinterpret_cast<float*>(base), base + probabilities_bytes(p),
                             scratch_bytes_for(p)};
  }
  float* head_probabilities(const Problem& p, std::int64_t b, std::int64_t h) const {
    return probabilities + (b * p.heads + h) * p.seqlen_q * p.seqlen_k;
  }
  StandardScratch thread_scratch(const Problem& p) const {
    WorkspaceCarver carver(scratch +
                           static_cast<std::size_t>(omp_get_thread_num()) * scratch_bytes);
    return StandardScratch::carve(p, tile_shape(p), carver);
  }
};

// What one head's passes share.
struct HeadContext {
  const Problem& p;
  TileShape shape;
  DropoutRng rng;
  std::int64_t b;
  std::int64_t h;
  const StandardScratch& s;
  TrafficSlot& traffic;
};

// full (Nq x Nk) = alpha * A B^T, with A the rows of a query-side tensor (Q or dO)
// and B those of a key-side tensor (K or V): S = tau Q K^T and dP~ = dO V^T.
void materialize_abt(const HeadContext& c, const HeadSlice& a, const HeadSlice& b, float alpha,
                     float* full) {
  const Problem& p = c.p;
  for (std::int64_t i0 = 0; i0 < p.seqlen_q; i0 += c.shape.block_q) {
    const std::int64_t rows = std::min(c.shape.block_q, p.seqlen_q - i0);
    load_rows(a, i0, rows, c.s.query_tile, c.traffic);
    for (std::int64_t j0 = 0; j0 < p.seqlen_k; j0 += c.shape.block_k) {
      const std::int64_t cols = std::min(c.shape.block_k, p.seqlen_k - j0);
      load_rows(b, j0, cols, c.s.key_tile, c.traffic);
      multiply_abt(c.s.query_tile, c.s.key_tile, rows, cols, p.head_dim, alpha, c.s.score_tile);
      store_block(full, p.seqlen_k, i0, rows, j0, cols, c.s.score_tile, c.traffic);
    }
  }
}

// out (query-side, Nq rows) = alpha * dropout(full) B, with full an Nq x Nk array
// and B the rows of a key-side tensor: O = dropout(P) V and dQ = tau dS K (whose
// `rng` is disabled).
void materialize_ab(const HeadContext& c, const float* full, const DropoutRng& rng,
                    const HeadSlice& b, float alpha, const HeadSlice& out) {
  const Problem& p = c.p;
  for (std::int64_t i0 = 0; i0 < p.seqlen_q; i0 += c.shape.block_q) {
    const std::int64_t rows = std::min(c.shape.block_q, p.seqlen_q - i0);
    std::fill(c.s.query_acc, c.s.query_acc + rows * p.head_dim, 0.0f);
    for (std::int64_t j0 = 0; j0 < p.seqlen_k; j0 += c.shape.block_k) {
      const std::int64_t cols = std::min(c.shape.block_k, p.seqlen_k - j0);
      load_block(full, p.seqlen_k, i0, rows, j0, cols, c.s.score_tile, c.traffic);
      apply_dropout(rng, c.b, c.h, i0, rows, j0, cols, c.s.score_tile);
      load_rows(b, j0, cols, c.s.key_tile, c.traffic);
      accumulate_ab(c.s.score_tile, c.s.key_tile, rows, cols, p.head_dim, alpha, c.s.query_acc);
    }
    store_rows(out, i0, rows, c.s.query_acc, c.traffic);
  }
}

// out (key-side, Nk rows) += alpha * dropout(full)^T A, with A the rows of a
// query-side tensor: dV += P~^T dO and dK += tau dS^T Q. With `accumulate` false
// the sum starts from zero instead of the stored tile.
void materialize_atb(const HeadContext& c, const float* full, const DropoutRng& rng,
                     const HeadSlice& a, float alpha, const HeadSlice& out, bool accumulate) {
  const Problem& p = c.p;
  for (std::int64_t j0 = 0; j0 < p.seqlen_k; j0 += c.shape.block_k) {
    const std::int64_t cols = std::min(c.shape.block_k, p.seqlen_k - j0);
    if (accumulate) {
      load_rows(out, j0, cols, c.s.key_acc, c.traffic);
    } else {
      std::fill(c.s.key_acc, c.s.key_acc + cols * p.head_dim, 0.0f);
    }
    for (std::int64_t i0 = 0; i0 < p.seqlen_q; i0 += c.shape.block_q) {
      const std::int64_t rows = std::min(c.shape.block_q, p.seqlen_q - i0);
      load_block(full, p.seqlen_k, i0, rows, j0, cols, c.s.score_tile, c.traffic);
      apply_dropout(rng, c.b, c.h, i0, rows, j0, cols, c.s.score_tile);
      load_rows(a, i0, rows, c.s.query_tile, c.traffic);
      accumulate_atb(c.s.score_tile, c.s.query_tile, rows, cols, p.head_dim, alpha, c.s.key_acc);
    }
    store_rows(out, j0, cols, c.s.key_acc, c.traffic);
  }
}

// P = softmax(S + mask) and LSE, one row at a time; a row that sees no key gets
// P = 0 and LSE = -inf.
void softmax_rows(const HeadContext& c, const float* scores, float* probabilities, float* lse) {
  const Problem& p = c.p;
  const std::int64_t len_q = p.length_q(c.b);
  const std::int64_t len_k = p.length_k(c.b);
  float* row = c.s.score_row;
  for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
    load_block(scores, p.seqlen_k, i, 1, 0, p.seqlen_k, row, c.traffic);
    const KeyRange visible = visible_keys(p.mask, i, len_q, len_k);
    float row_lse = kNegativeInfinity;
    if (visible.empty()) {
      std::fill(row, row + p.seqlen_k, 0.0f);
    } else {
      const float row_max = *std::max_element(row + visible.begin, row + visible.end);
      float sum = 0.0f;
      for (std::int64_t j = visible.begin; j < visible.end; ++j) {
        row[j] = std::exp(row[j] - row_max);
        sum += row[j];
      }
      std::fill(row, row + visible.begin, 0.0f);
      std::fill(row + visible.end, row + p.seqlen_k, 0.0f);
      for (std::int64_t j = visible.begin; j < visible.end; ++j) row[j] /= sum;
      row_lse = row_max + std::log(sum);
    }
    store_block(probabilities, p.seqlen_k, i, 1, 0, p.seqlen_k, row, c.traffic);
    store_span(lse + i, 1, &row_lse, c.traffic);
  }
}

// D_i = dO_i . O_i for every row.
void write_row_d(const HeadContext& c, const HeadSlice& d_out, const HeadSlice& out) {
  const Problem& p = c.p;
  for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
    load_rows(d_out, i, 1, c.s.query_tile, c.traffic);
    load_rows(out, i, 1, c.s.query_acc, c.traffic);
    const float row_d = dot(c.s.query_tile, c.s.query_acc, p.head_dim);
    store_span(c.s.row_d + i, 1, &row_d, c.traffic);
  }
}

// dS = P o (dP~ o Z/(1-p) - D), one row at a time, overwriting dP~ in `scores`.
void score_gradient_rows(const HeadContext& c, const float* probabilities, float* scores) {
  const Problem& p = c.p;
  for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
    load_block(probabilities, p.seqlen_k, i, 1, 0, p.seqlen_k, c.s.probability_row, c.traffic);
    load_block(scores, p.seqlen_k, i, 1, 0, p.seqlen_k, c.s.score_row, c.traffic);
    float row_d;
    load_span(c.s.row_d + i, 1, &row_d, c.traffic);
    dropout_factors(c.rng, c.b, c.h, i, 1, 0, p.seqlen_k, c.s.factor_row);
    for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
      c.s.score_row[j] = c.s.probability_row[j] * (c.s.score_row[j] * c.s.factor_row[j] - row_d);
    }
    store_block(scores, p.seqlen_k, i, 1, 0, p.seqlen_k, c.s.score_row, c.traffic);
  }
}

class CpuStandard final : public Implementation {
 public:
  std::string_view name() const override { return "cpu.standard"; }
  std::string_view device() const override { return "cpu"; }
  std::string_view summary() const override {
    return "materializing fp32 attention (Algorithm 0: S and P written in full), tiled GEMMs";
  }
  Verdict supports(const Problem&) const override { return Verdict::yes(); }
  ElementType output_type(const Problem&) const override { return ElementType::f32; }
  // S, P (and dP, dS) are fp32 arrays of the full padded grid.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    return standard_traffic(p, StandardWidths{static_cast<int>(element_size(element_type(p.dtype))), 4, 4, 4});
  }
  bool counts_traffic() const override { return true; }

  std::size_t workspace_bytes(const Problem& problem,
                              const ExecutionContext& context) const override {
    return StandardWorkspace::probabilities_bytes(problem) +
           static_cast<std::size_t>(context.thread_count()) *
               StandardWorkspace::scratch_bytes_for(problem);
  }

  void forward(const Problem& p, const AttentionBuffers& buffers,
               ExecutionContext& context) override {
    const StandardWorkspace workspace = StandardWorkspace::of(p, buffers.workspace);
    const DropoutRng rng = dropout_rng(p);
    const auto tau = static_cast<float>(p.softmax_scale());
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.heads; ++task) {
      const std::int64_t b = task / p.heads;
      const std::int64_t h = task % p.heads;
      const StandardScratch s = workspace.thread_scratch(p);
      TrafficSlot traffic(*context.traffic, omp_get_thread_num());
      const HeadContext c{p, tile_shape(p), rng, b, h, s, traffic};
      float* probabilities = workspace.head_probabilities(p, b, h);
      const std::int64_t hkv = p.kv_head_of(h);

      materialize_abt(c, query_slice(p, buffers.q, b, h), key_slice(p, buffers.k, b, hkv), tau,
                      s.scores);
      softmax_rows(c, s.scores, probabilities,
                   static_cast<float*>(buffers.lse.data) + lse_index(p, b, h, 0));
      materialize_ab(c, probabilities, rng, key_slice(p, buffers.v, b, hkv), 1.0f,
                     query_slice(p, buffers.out, b, h));
    }
  }

  void backward(const Problem& p, const AttentionBuffers& buffers,
                ExecutionContext& context) override {
    const StandardWorkspace workspace = StandardWorkspace::of(p, buffers.workspace);
    const DropoutRng rng = dropout_rng(p);
    const DropoutRng no_dropout{};
    const auto tau = static_cast<float>(p.softmax_scale());
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.kv_heads; ++task) {
      const std::int64_t b = task / p.kv_heads;
      const std::int64_t hkv = task % p.kv_heads;
      const StandardScratch s = workspace.thread_scratch(p);
      TrafficSlot traffic(*context.traffic, omp_get_thread_num());
      const HeadSlice k = key_slice(p, buffers.k, b, hkv);
      const HeadSlice v = key_slice(p, buffers.v, b, hkv);
      const HeadSlice d_k = key_slice(p, buffers.d_k, b, hkv);
      const HeadSlice d_v = key_slice(p, buffers.d_v, b, hkv);
      for (std::int64_t g = 0; g < p.head_group(); ++g) {
        const std::int64_t h = hkv * p.head_group() + g;
        const HeadContext c{p, tile_shape(p), rng, b, h, s, traffic};
        const float* probabilities = workspace.head_probabilities(p, b, h);
        const HeadSlice q = query_slice(p, buffers.q, b, h);
        const HeadSlice d_out = query_slice(p, buffers.d_out, b, h);
        const bool accumulate = g > 0;

        write_row_d(c, d_out, query_slice(p, buffers.out, b, h));
        materialize_abt(c, d_out, v, 1.0f, s.scores);
        score_gradient_rows(c, probabilities, s.scores);
        materialize_atb(c, probabilities, rng, d_out, 1.0f, d_v, accumulate);
        materialize_ab(c, s.scores, no_dropout, k, tau, query_slice(p, buffers.d_q, b, h));
        materialize_atb(c, s.scores, no_dropout, q, tau, d_k, accumulate);
      }
    }
  }

  nlohmann::ordered_json configuration(const Problem& p,
                                       const ExecutionContext& context) const override {
    return tile_configuration(p, context);
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CpuStandard>(); }};

}  // namespace
}  // namespace attnbench
