// cpu.standard: materializing attention in fp32, the paper's Algorithm 0
// (arXiv 2205.14135) and its backward, on the CPU. It writes the full Nq x Nk
// score and probability matrices of every head to full-size arrays (the "HBM"
// of the paper's model), as a cuBLAS GEMM -> softmax -> GEMM pipeline does, and
// counts every byte it moves between those arrays and its tile buffers. Its
// matrix products are BLAS GEMMs (harness/blas.hpp), each on one thread, of a
// block of query rows (or a panel of key columns) against a whole head: the
// inputs are loaded once per head into fp32 operand buffers, and a GEMM counts
// each full-size array it reads or writes (S, P, dP, dS, O, dQ, dK, dV) once,
// as the paper's model counts a matrix product.
//
// Forward: K and V of every (b, kv head) are loaded once; then, in parallel
// over (b, h, Q block of block_q rows), blocks independent:
//   1. load the Q block; S_i = sign(tau) Q_i K^T over the whole padded key
//      range, masked pairs included, written into the block's rows of the P
//      array by the GEMM (by a tile, panel by panel, when the head dimension
//      is summed in parts: cpu_tiles.hpp, depth_split_abt);
//   2. softmax of |tau| S, row by row (the factor applied inside the
//      exponential, ScoreScale): read the S row, apply the mask, write the row of P
//      (un-dropped; kept in the workspace for the backward) and LSE;
//   3. O_i = dropout(P_i) V: the GEMM reads the P rows (through a tile that
//      takes the dropout factors when there is dropout) and V, and writes O_i
//      (its keys summed in parts: depth_split_ab).
// Backward, in parallel over (b, kv head), the group's query heads in sequence
// (dK and dV accumulate over them): K and V are loaded once per kv head, Q and
// dO once per query head; then two phases:
//   A. per Q block: D_i = rowsum(dO_i o O_i) on chip; dP~_i = dO_i V^T written
//      in full (as step 1); dS = P o (dP~ o Z/(1-p) - D), row by row, in place;
//      dQ_i = tau dS_i K written once;
//   B. per K block of block_k keys: dV_j += P~_{:,j}^T dO and dK_j +=
//      tau dS_{:,j}^T Q over all query rows at once (from the stored dV_j and
//      dK_j after the group's first head), written once.
// Every task (a forward block, a backward kv head) runs its GEMMs on its thread,
// so the result does not depend on the thread count, bit for bit.
//
// Assumes: input buffers hold finite values over the whole padded grid (masked
// products are computed and then multiplied by 0); O, dQ, dK, dV and LSE are
// fp32 buffers.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "harness/cpu_implementation.hpp"
#include "harness/host_tensor.hpp"
#include "harness/measure/traffic_model.hpp"
#include "../kernels/common/dropout.hpp"
#include "../kernels/common/mask.hpp"
#include "../kernels/cpu_tiles.hpp"

namespace attnbench {
namespace {

using namespace cpu_tiles;

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// Blocks where the problem gives no hint: 64 query rows, 64 keys.
constexpr TileShape kDefaultTiles{TileHint::kDefaultBlock, TileHint::kDefaultBlock};

// Keys per panel of S summed in a tile (a head dimension of more than one
// kHeadDimPart).
constexpr std::int64_t kScorePanel = 512;

// One thread's tile buffers.
struct StandardTiles {
  float* rows;           // block_q x d: a Q block, or O beside dO (backward)
  float* scores;         // block_q x min(Nk, kScorePanel): a panel of S (d > kHeadDimPart only)
  float* probabilities;  // max(block_q x Nk, Nq x block_k): P~ rows or a column panel of P~ (dropout only)
  float* result;         // max(block_q, block_k) x d: an O, dQ, dK or dV block
  float* row_d;          // block_q: D

  static StandardTiles carve(const Problem& p, const TileShape& shape, WorkspaceCarver& carver) {
    const std::int64_t d = p.head_dim;
    StandardTiles t{};
    t.rows = carver.floats(shape.block_q * d);
    t.scores = carver.floats(d > kHeadDimPart ? shape.block_q * std::min(p.seqlen_k, kScorePanel) : 0);
    t.probabilities = carver.floats(p.dropout.probability > 0.0
                                        ? std::max(shape.block_q * p.seqlen_k, p.seqlen_q * shape.block_k)
                                        : 0);
    t.result = carver.floats(std::max(shape.block_q, shape.block_k) * d);
    t.row_d = carver.floats(shape.block_q);
    return t;
  }
};

// The GEMMs' fp32 operands, each loaded once from the inputs: the forward's K
// and V of every (b, kv head), [B, kv_heads, Nk, d] each; a backward task's K
// and V of its kv head and Q and dO of its query head, one set per thread.
struct Operands {
  float* key;
  float* value;
  float* query;
  float* d_out;

  static std::int64_t forward_floats(const Problem& p) { return 2 * p.batch * p.kv_heads * p.seqlen_k * p.head_dim; }
  static std::int64_t backward_floats(const Problem& p) { return 2 * (p.seqlen_k + p.seqlen_q) * p.head_dim; }
  static Operands forward_of(const Problem& p, float* base) {
    const std::int64_t heads = p.batch * p.kv_heads * p.seqlen_k * p.head_dim;
    return Operands{base, base + heads, nullptr, nullptr};
  }
  static Operands backward_of(const Problem& p, float* base) {
    const std::int64_t keys = p.seqlen_k * p.head_dim;
    return Operands{base, base + keys, base + 2 * keys, base + 2 * keys + p.seqlen_q * p.head_dim};
  }
  // The forward's K or V of (b, hkv).
  static float* of_head(const Problem& p, float* all, std::int64_t b, std::int64_t hkv) {
    return all + (b * p.kv_heads + hkv) * p.seqlen_k * p.head_dim;
  }
};

// Workspace: P of every head, [B, H, Nq, Nk] fp32, kept from forward to backward;
// the operands (the forward's, or one backward set per thread, whichever is
// larger); when the direction has a backward, one Nq x Nk score-gradient array
// (dP~, then dS) per thread; then one StandardTiles per thread.
struct StandardWorkspace {
  float* probabilities;
  float* operands;
  float* score_gradients;
  std::byte* tiles;
  std::size_t tile_bytes;

  static std::size_t probabilities_bytes(const Problem& p) {
    return WorkspaceCarver::round_up(
        static_cast<std::size_t>(p.batch * p.heads * p.seqlen_q * p.seqlen_k) * sizeof(float));
  }
  static std::size_t operand_bytes(const Problem& p, int threads) {
    const std::int64_t backward = has_backward(p.direction) ? threads * Operands::backward_floats(p) : 0;
    return WorkspaceCarver::round_up(
        static_cast<std::size_t>(std::max(Operands::forward_floats(p), backward)) * sizeof(float));
  }
  static std::size_t score_gradient_bytes(const Problem& p, int threads) {
    if (!has_backward(p.direction)) return 0;
    return static_cast<std::size_t>(threads) *
           WorkspaceCarver::round_up(static_cast<std::size_t>(p.seqlen_q * p.seqlen_k) * sizeof(float));
  }
  static std::size_t tile_bytes_for(const Problem& p) {
    WorkspaceCarver measure;
    StandardTiles::carve(p, tile_shape(p, kDefaultTiles), measure);
    return measure.used();
  }
  static std::size_t bytes(const Problem& p, int threads) {
    return probabilities_bytes(p) + operand_bytes(p, threads) + score_gradient_bytes(p, threads) +
           static_cast<std::size_t>(threads) * tile_bytes_for(p);
  }
  static StandardWorkspace of(const Problem& p, const TensorBuffer& workspace, int threads) {
    auto* base = static_cast<std::byte*>(workspace.data);
    const std::size_t operands = probabilities_bytes(p);
    const std::size_t gradients = operands + operand_bytes(p, threads);
    const std::size_t tiles = gradients + score_gradient_bytes(p, threads);
    return StandardWorkspace{reinterpret_cast<float*>(base), reinterpret_cast<float*>(base + operands),
                             reinterpret_cast<float*>(base + gradients), base + tiles, tile_bytes_for(p)};
  }
  float* head_probabilities(const Problem& p, std::int64_t b, std::int64_t h) const {
    return probabilities + (b * p.heads + h) * p.seqlen_q * p.seqlen_k;
  }
  // The calling thread's backward operands and score-gradient array.
  Operands thread_operands(const Problem& p) const {
    return Operands::backward_of(p, operands + omp_get_thread_num() * Operands::backward_floats(p));
  }
  float* thread_score_gradients(const Problem& p) const {
    const std::size_t per_thread =
        WorkspaceCarver::round_up(static_cast<std::size_t>(p.seqlen_q * p.seqlen_k) * sizeof(float));
    return score_gradients + static_cast<std::size_t>(omp_get_thread_num()) * per_thread / sizeof(float);
  }
  StandardTiles thread_tiles(const Problem& p) const {
    WorkspaceCarver carver(tiles + static_cast<std::size_t>(omp_get_thread_num()) * tile_bytes);
    return StandardTiles::carve(p, tile_shape(p, kDefaultTiles), carver);
  }
};

// What one head's passes share.
struct HeadContext {
  const Problem& p;
  TileShape shape;
  DropoutRng rng;
  ScoreScale scale;
  std::int64_t b;
  std::int64_t h;
  const StandardTiles& t;
  const Operands& operands;  // K, V (and Q, dO in the backward) of this head
  TrafficSlot& traffic;

  std::int64_t rows_at(std::int64_t i0) const { return std::min(shape.block_q, p.seqlen_q - i0); }
  std::int64_t cols_at(std::int64_t j0) const { return std::min(shape.block_k, p.seqlen_k - j0); }
};

// P = softmax(S + mask) and LSE for rows [i0, i0 + rows), in place in `scores`
// (row stride Nk): a row that sees no key gets P = 0 and LSE = -inf.
void softmax_rows(const HeadContext& c, std::int64_t i0, std::int64_t rows, float* scores, float* lse) {
  const Problem& p = c.p;
  const std::int64_t len_q = p.length_q(c.b);
  const std::int64_t len_k = p.length_k(c.b);
  for (std::int64_t i = i0; i < i0 + rows; ++i) {
    float* row = scores + i * p.seqlen_k;
    c.traffic.read(p.seqlen_k * static_cast<std::int64_t>(sizeof(float)));
    const KeyRange visible = visible_keys(p.mask, i, len_q, len_k);
    float row_lse = kNegativeInfinity;
    if (visible.empty()) {
      std::fill(row, row + p.seqlen_k, 0.0f);
    } else {
      float row_max, sum;
      cpu_vector::row_maxima(row + visible.begin, 1, visible.size(), visible.size(), &row_max);
      const double shift = c.scale.exponent * row_max;
      cpu_vector::exp_scaled(row + visible.begin, 1, visible.size(), visible.size(), c.scale.exponent, &shift, &sum);
      std::fill(row, row + visible.begin, 0.0f);
      std::fill(row + visible.end, row + p.seqlen_k, 0.0f);
      for (std::int64_t j = visible.begin; j < visible.end; ++j) row[j] /= sum;
      row_lse = static_cast<float>(shift + std::log(static_cast<double>(sum)));
    }
    c.traffic.write(p.seqlen_k * static_cast<std::int64_t>(sizeof(float)));
    store_span(lse + i, 1, &row_lse, c.traffic);
  }
}

// Rows [i0, i0 + rows) of P (row stride Nk) as the GEMM should read them:
// read in place without dropout, through the probability tile with it.
const float* dropped_probability_rows(const HeadContext& c, const float* probabilities, std::int64_t i0,
                                      std::int64_t rows) {
  const std::int64_t nk = c.p.seqlen_k;
  if (!c.rng.enabled) {
    c.traffic.read(rows * nk * static_cast<std::int64_t>(sizeof(float)));
    return probabilities + i0 * nk;
  }
  load_block(probabilities, nk, i0, rows, 0, nk, c.t.probabilities, c.traffic);
  apply_dropout(c.rng, c.b, c.h, i0, rows, 0, nk, c.t.probabilities, nk);
  return c.t.probabilities;
}

// S = sign(tau) Q_i K^T (ScoreScale) for the rows of Q block i0, loaded in
// c.t.rows, into the block's rows of `probabilities`, written once: by the GEMM
// when the head dimension is one part (depth_split_abt), else panel by panel
// through the score tile, where the parts are summed.
void score_rows(const HeadContext& c, std::int64_t i0, std::int64_t rows, float* probabilities) {
  const std::int64_t d = c.p.head_dim;
  const std::int64_t nk = c.p.seqlen_k;
  if (d <= kHeadDimPart) {
    blas::sgemm(blas::Op::none, blas::Op::transpose, rows, nk, d, c.scale.gemm, c.t.rows, d, c.operands.key, d, 0.0f,
                probabilities + i0 * nk, nk);
    c.traffic.write(rows * nk * static_cast<std::int64_t>(sizeof(float)));
    return;
  }
  for (std::int64_t j0 = 0; j0 < nk; j0 += kScorePanel) {
    const std::int64_t cols = std::min(kScorePanel, nk - j0);
    depth_split_abt(c.t.rows, c.operands.key + j0 * d, rows, cols, d, c.scale.gemm, c.t.scores, cols);
    store_block(probabilities, nk, i0, rows, j0, cols, c.t.scores, c.traffic);
  }
}

// Steps 1-3 of the forward for Q block i0 of head (b, h).
void forward_block(const HeadContext& c, const AttentionBuffers& buffers, std::int64_t i0,
                   float* probabilities) {
  const Problem& p = c.p;
  const std::int64_t d = p.head_dim;
  const std::int64_t nk = p.seqlen_k;
  const std::int64_t rows = c.rows_at(i0);

  load_rows(query_slice(p, buffers.q, c.b, c.h), i0, rows, c.t.rows, c.traffic);
  score_rows(c, i0, rows, probabilities);

  softmax_rows(c, i0, rows, probabilities, static_cast<float*>(buffers.lse.data) + lse_index(p, c.b, c.h, 0));

  const float* dropped = dropped_probability_rows(c, probabilities, i0, rows);
  depth_split_ab(dropped, nk, c.operands.value, rows, nk, d, 1.0f, 0.0f, c.t.result);
  store_rows(query_slice(p, buffers.out, c.b, c.h), i0, rows, c.t.result, c.traffic);
}

// Phase A of the backward for Q block i0 of head (b, h): dP~, dS and dQ.
void score_gradient_block(const HeadContext& c, const AttentionBuffers& buffers, std::int64_t i0,
                          const float* probabilities, float* score_gradients) {
  const Problem& p = c.p;
  const std::int64_t d = p.head_dim;
  const std::int64_t nk = p.seqlen_k;
  const std::int64_t rows = c.rows_at(i0);
  const float* d_out = c.operands.d_out + i0 * d;

  load_rows(query_slice(p, buffers.out, c.b, c.h), i0, rows, c.t.rows, c.traffic);
  for (std::int64_t r = 0; r < rows; ++r) c.t.row_d[r] = dot(d_out + r * d, c.t.rows + r * d, d);

  float* d_scores = score_gradients + i0 * nk;
  blas::sgemm(blas::Op::none, blas::Op::transpose, rows, nk, d, 1.0f, d_out, d, c.operands.value, d, 0.0f,
              d_scores, nk);
  c.traffic.write(rows * nk * static_cast<std::int64_t>(sizeof(float)));

  // dS = P o (dP~ o Z/(1-p) - D), row by row, over dP~ in place.
  constexpr std::int64_t kChunk = 256;
  float factors[kChunk];
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* p_row = probabilities + (i0 + r) * nk;
    float* ds_row = d_scores + r * nk;
    c.traffic.read(2 * nk * static_cast<std::int64_t>(sizeof(float)));
    for (std::int64_t j0 = 0; j0 < nk; j0 += kChunk) {
      const std::int64_t count = std::min(kChunk, nk - j0);
      dropout_factors(c.rng, c.b, c.h, i0 + r, 1, j0, count, factors);
      for (std::int64_t j = 0; j < count; ++j) {
        ds_row[j0 + j] = p_row[j0 + j] * (ds_row[j0 + j] * factors[j] - c.t.row_d[r]);
      }
    }
    c.traffic.write(nk * static_cast<std::int64_t>(sizeof(float)));
  }

  c.traffic.read(rows * nk * static_cast<std::int64_t>(sizeof(float)));
  blas::sgemm(blas::Op::none, blas::Op::none, rows, d, nk, static_cast<float>(p.softmax_scale()), d_scores, nk,
              c.operands.key, d, 0.0f, c.t.result, d);
  store_rows(query_slice(p, buffers.d_q, c.b, c.h), i0, rows, c.t.result, c.traffic);
}

// out_j (key-side block j0) (+)= alpha * columns^T A, with `columns` the
// block's Nq x cols column panel (row stride ld) of an Nq x Nk array and A an
// Nq x d operand: dV_j += P~_{:,j}^T dO and dK_j += tau dS_{:,j}^T Q. With
// `accumulate` false the sum starts from zero instead of the stored block.
void key_gradient_block(const HeadContext& c, std::int64_t j0, const float* columns, std::int64_t ld,
                        const float* a, float alpha, const HeadSlice& out, bool accumulate) {
  const Problem& p = c.p;
  const std::int64_t d = p.head_dim;
  const std::int64_t cols = c.cols_at(j0);
  if (accumulate) load_rows(out, j0, cols, c.t.result, c.traffic);
  c.traffic.read(p.seqlen_q * cols * static_cast<std::int64_t>(sizeof(float)));
  blas::sgemm(blas::Op::transpose, blas::Op::none, cols, d, p.seqlen_q, alpha, columns, ld, a, d,
              accumulate ? 1.0f : 0.0f, c.t.result, d);
  store_rows(out, j0, cols, c.t.result, c.traffic);
}

// Phase B of the backward for K block j0 of head (b, h): dV_j and dK_j.
void key_gradients(const HeadContext& c, const AttentionBuffers& buffers, std::int64_t j0,
                   const float* probabilities, const float* score_gradients, bool accumulate) {
  const Problem& p = c.p;
  const std::int64_t nk = p.seqlen_k;
  const std::int64_t cols = c.cols_at(j0);
  const std::int64_t hkv = p.kv_head_of(c.h);

  const float* dropped = probabilities + j0;
  std::int64_t ld = nk;
  if (c.rng.enabled) {  // P~ column panel through the probability tile (counted as the GEMM's read)
    for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
      std::copy(probabilities + i * nk + j0, probabilities + i * nk + j0 + cols, c.t.probabilities + i * cols);
    }
    apply_dropout(c.rng, c.b, c.h, 0, p.seqlen_q, j0, cols, c.t.probabilities, cols);
    dropped = c.t.probabilities;
    ld = cols;
  }
  key_gradient_block(c, j0, dropped, ld, c.operands.d_out, 1.0f, key_slice(p, buffers.d_v, c.b, hkv), accumulate);
  key_gradient_block(c, j0, score_gradients + j0, nk, c.operands.query, static_cast<float>(p.softmax_scale()),
                     key_slice(p, buffers.d_k, c.b, hkv), accumulate);
}

// K and V of every (b, kv head) into the forward's operands, one task each
// across the team (an orphaned worksharing loop: the whole team calls it; its
// barrier ends it).
void load_forward_operands(const Problem& p, const AttentionBuffers& buffers, const Operands& all,
                           TrafficSlot& traffic) {
#pragma omp for schedule(dynamic)
  for (std::int64_t task = 0; task < 2 * p.batch * p.kv_heads; ++task) {
    const std::int64_t b = task / 2 / p.kv_heads;
    const std::int64_t hkv = task / 2 % p.kv_heads;
    const bool key = task % 2 == 0;
    load_rows(key_slice(p, key ? buffers.k : buffers.v, b, hkv), 0, p.seqlen_k,
              Operands::of_head(p, key ? all.key : all.value, b, hkv), traffic);
  }
}

class CpuStandard final : public CpuBlasImplementation {
 public:
  std::string_view name() const override { return "cpu.standard"; }
  std::string_view summary() const override {
    return "materializing fp32 attention (Algorithm 0: S and P written in full), BLAS GEMMs";
  }
  // S, P (and dP, dS) are fp32 arrays of the full padded grid.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    return standard_traffic(p, StandardWidths{static_cast<int>(element_size(element_type(p.dtype))), 4, 4, 4});
  }
  bool counts_traffic() const override { return true; }

  std::size_t workspace_bytes(const Problem& problem, const ExecutionContext& context) const override {
    return StandardWorkspace::bytes(problem, context.thread_count());
  }

  void forward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const StandardWorkspace workspace = StandardWorkspace::of(p, buffers.workspace, context.thread_count());
    const Operands all = Operands::forward_of(p, workspace.operands);
    const DropoutRng rng = dropout_rng(p);
    const TileShape shape = tile_shape(p, kDefaultTiles);
    const std::int64_t blocks = (p.seqlen_q + shape.block_q - 1) / shape.block_q;
#pragma omp parallel num_threads(context.thread_count())
    {
      const StandardTiles tiles = workspace.thread_tiles(p);
      TrafficSlot traffic(*context.traffic, omp_get_thread_num());
      load_forward_operands(p, buffers, all, traffic);
#pragma omp for schedule(dynamic)
      for (std::int64_t task = 0; task < p.batch * p.heads * blocks; ++task) {
        const std::int64_t b = task / blocks / p.heads;
        const std::int64_t h = task / blocks % p.heads;
        const std::int64_t hkv = p.kv_head_of(h);
        const Operands head{Operands::of_head(p, all.key, b, hkv), Operands::of_head(p, all.value, b, hkv), nullptr,
                            nullptr};
        const HeadContext c{p, shape, rng, ScoreScale::of(p.softmax_scale()), b, h, tiles, head, traffic};
        forward_block(c, buffers, (task % blocks) * shape.block_q, workspace.head_probabilities(p, b, h));
      }
    }
  }

  // In parallel over (b, kv head), the group's query heads in sequence, each
  // task on its own thread's operands and score-gradient array.
  void backward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const StandardWorkspace workspace = StandardWorkspace::of(p, buffers.workspace, context.thread_count());
    const DropoutRng rng = dropout_rng(p);
    const TileShape shape = tile_shape(p, kDefaultTiles);
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.kv_heads; ++task) {
      const std::int64_t b = task / p.kv_heads;
      const std::int64_t hkv = task % p.kv_heads;
      const StandardTiles tiles = workspace.thread_tiles(p);
      const Operands operands = workspace.thread_operands(p);
      float* score_gradients = workspace.thread_score_gradients(p);
      TrafficSlot traffic(*context.traffic, omp_get_thread_num());
      load_rows(key_slice(p, buffers.k, b, hkv), 0, p.seqlen_k, operands.key, traffic);
      load_rows(key_slice(p, buffers.v, b, hkv), 0, p.seqlen_k, operands.value, traffic);
      for (std::int64_t g = 0; g < p.head_group(); ++g) {
        const std::int64_t h = hkv * p.head_group() + g;
        load_rows(query_slice(p, buffers.q, b, h), 0, p.seqlen_q, operands.query, traffic);
        load_rows(query_slice(p, buffers.d_out, b, h), 0, p.seqlen_q, operands.d_out, traffic);
        const HeadContext c{p, shape, rng, ScoreScale::of(p.softmax_scale()), b, h, tiles, operands, traffic};
        const float* probabilities = workspace.head_probabilities(p, b, h);
        for (std::int64_t i0 = 0; i0 < p.seqlen_q; i0 += shape.block_q) {
          score_gradient_block(c, buffers, i0, probabilities, score_gradients);
        }
        for (std::int64_t j0 = 0; j0 < p.seqlen_k; j0 += shape.block_k) {
          key_gradients(c, buffers, j0, probabilities, score_gradients, g > 0);
        }
      }
    }
  }

  nlohmann::ordered_json configuration(const Problem& p, const ExecutionContext& context) const override {
    return tile_configuration(p, context, kDefaultTiles);
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CpuStandard>(); }};

}  // namespace
}  // namespace attnbench
