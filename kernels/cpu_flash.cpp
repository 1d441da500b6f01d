// cpu.flash: fused attention in fp32 on the CPU, with the loop order of the
// FlashAttention paper (arXiv 2205.14135): Algorithm 2 for the forward and
// Algorithm 4 for the backward, recomputing P from the stored LSE. It never
// writes S or P; it counts every byte it moves between its full-size arrays
// (the "HBM" of the paper's model: Q, K, V, O, dO, dQ, dK, dV, LSE, l, m) and
// its tile buffers (the on-chip memory), so the counts reproduce the paper's
// HBM-access model (Theorem 2, Figure 2 middle) for any block size.
//
// Forward, per (b, h), in parallel over (b, h):
//   O = 0, l = 0, m = -inf in full-size arrays;
//   for each K/V block j (loaded once into tiles):
//     for each Q block i whose rows can see block j:
//       load Q_i, O_i, l_i, m_i;  S = tau Q_i K_j^T (masked -> -inf);
//       m~ = rowmax S, P~ = exp(S - m~), l~ = rowsum P~;
//       m_new = max(m_i, m~), l_new = e^(m_i - m_new) l_i + e^(m~ - m_new) l~;
//       O_i = (l_i e^(m_i - m_new) O_i + e^(m~ - m_new) dropout(P~) V_j) / l_new;
//       write O_i, l_i = l_new, m_i = m_new.
//   LSE = m + log l (-inf where l = 0). A row that sees no key keeps l = 0, so
//   its update is skipped and its O row stays the initial 0.
// Backward, per (b, kv head), in parallel over (b, kv head): dQ = 0; for each
// K/V block j (dK_j, dV_j accumulated in tiles), for each query head of the
// group, for each Q block i whose rows can see block j: load Q_i, O_i, dO_i,
// dQ_i, LSE_i; D_i = rowsum(dO_i o O_i); P = exp(S - LSE_i); dV_j += P~^T dO_i;
// dP~ = dO_i V_j^T; dS = P o (dP~ o Z/(1-p) - D_i); dQ_i += tau dS K_j (written
// back); dK_j += tau dS^T Q_i. Then dK_j, dV_j are written (zeros for a block no
// row sees).
// Dropout (docs/design.md §2.3) is regenerated from the RNG contract where it is needed.
// Tile pairs that are wholly masked (visible_key_bound) are skipped; partial
// ones are predicated per element. Tiles are problem.tile.block_q x block_k
// (64 x 512 by default). The tile products are BLAS GEMMs on the calling thread
// (harness/blas.hpp); the exponentials, row maxima, dropout words and input
// conversions are the vectorized loops of cpu_vector.hpp.
//
// Assumes: input buffers hold finite values over the whole padded grid; O, dQ,
// dK, dV and LSE are fp32 buffers.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "harness/cpu_implementation.hpp"
#include "harness/host_tensor.hpp"
#include "harness/measure/traffic_model.hpp"
#include "common/dropout.hpp"
#include "common/mask.hpp"
#include "common/online_softmax.hpp"
#include "cpu_tiles.hpp"

namespace attnbench {
namespace {

using namespace cpu_tiles;

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// Blocks where the problem gives no hint: 64 query rows, 512 keys. With four
// query tiles a step, a step's GEMMs (256 x 512 x d and 256 x d x 512) run
// near the BLAS's rate, its score tile (512 KiB) stays in a core's L2, and the
// query and output tiles are moved once per 512 keys.
constexpr TileShape kDefaultTiles{TileHint::kDefaultBlock, 512};

// Query tiles that see one K/V block are processed kQueryTilesPerStep at a
// time: their rows stacked in the tile buffers below, so each GEMM covers all
// of them. Every tile is still loaded and stored on its own, so the bytes moved
// are those of one tile at a time.
constexpr std::int64_t kQueryTilesPerStep = 4;

// One thread's tile buffers; "rows" is kQueryTilesPerStep * block_q. Those only
// the backward uses are carved only when the direction has a backward.
struct FlashTiles {
  float* key;          // block_k x d: K_j
  float* value;        // block_k x d: V_j
  float* d_key;        // block_k x d: dK_j accumulator
  float* d_value;      // block_k x d: dV_j accumulator
  float* query;        // rows x d: Q_i
  float* out;          // rows x d: O_i
  float* d_out;        // rows x d: dO_i
  float* d_query;      // rows x d: dQ_i
  float* update;       // rows x d: dropout(P~) V_j
  float* scores;       // rows x block_k: S, then P
  float* d_scores;     // rows x block_k: P~, dP~, then dS
  float* factors;      // rows x block_k: Z/(1-p)
  float* row_max;      // rows: m_i
  float* row_sum;      // rows: l_i
  float* row_lse;      // rows: LSE_i
  float* row_d;        // rows: D_i
  float* row_tile_max; // rows: m~, the row maxima of a tile of scores
  double* row_shift;   // rows: what a row's scaled scores are exponentiated relative to
  float* row_tile_sum; // rows: l~, the row sums of a tile's exponentials
  float* row_carried;  // rows: l_i e^(m_i - m_new), the weight of the O_i carried over
  float* row_weight;   // rows: e^(m~ - m_new), the weight of the tile's update

  static FlashTiles carve(const Problem& p, const TileShape& shape, WorkspaceCarver& carver) {
    const std::int64_t d = p.head_dim;
    const std::int64_t rows = kQueryTilesPerStep * shape.block_q;
    FlashTiles t{};
    for (float** key_side : {&t.key, &t.value}) *key_side = carver.floats(shape.block_k * d);
    for (float** query_side : {&t.query, &t.out, &t.update}) *query_side = carver.floats(rows * d);
    t.scores = carver.floats(rows * shape.block_k);
    for (float** row : {&t.row_max, &t.row_sum, &t.row_lse, &t.row_tile_max, &t.row_tile_sum, &t.row_carried,
                        &t.row_weight}) {
      *row = carver.floats(rows);
    }
    t.row_shift = carver.doubles(rows);
    if (!has_backward(p.direction)) return t;
    for (float** key_side : {&t.d_key, &t.d_value}) *key_side = carver.floats(shape.block_k * d);
    for (float** query_side : {&t.d_out, &t.d_query}) *query_side = carver.floats(rows * d);
    for (float** score_tile : {&t.d_scores, &t.factors}) *score_tile = carver.floats(rows * shape.block_k);
    t.row_d = carver.floats(rows);
    return t;
  }
};

// Workspace: the full-size m and l arrays ([B, H, Nq] fp32 each, indexed like
// LSE; used by the forward only), then one FlashTiles per thread.
struct FlashWorkspace {
  float* row_max;
  float* row_sum;
  std::byte* tiles;
  std::size_t tile_bytes;

  static std::size_t state_bytes(const Problem& p) {
    return WorkspaceCarver::round_up(static_cast<std::size_t>(lse_elements(p)) * sizeof(float));
  }
  static std::size_t tile_bytes_for(const Problem& p) {
    WorkspaceCarver measure;
    FlashTiles::carve(p, tile_shape(p, kDefaultTiles), measure);
    return measure.used();
  }
  static FlashWorkspace of(const Problem& p, const TensorBuffer& workspace) {
    auto* base = static_cast<std::byte*>(workspace.data);
    return FlashWorkspace{reinterpret_cast<float*>(base),
                          reinterpret_cast<float*>(base + state_bytes(p)),
                          base + 2 * state_bytes(p), tile_bytes_for(p)};
  }
  FlashTiles thread_tiles(const Problem& p) const {
    WorkspaceCarver carver(tiles + static_cast<std::size_t>(omp_get_thread_num()) * tile_bytes);
    return FlashTiles::carve(p, tile_shape(p, kDefaultTiles), carver);
  }
};

// What the passes over one head (forward) or kv head (backward) share.
struct HeadContext {
  const Problem& p;
  TileShape shape;
  DropoutRng rng;
  ScoreScale scale;
  float tau;
  std::int64_t b;
  const FlashTiles& t;
  TrafficSlot& traffic;

  std::int64_t len_q() const { return p.length_q(b); }
  std::int64_t len_k() const { return p.length_k(b); }
  std::int64_t rows_at(std::int64_t i0) const { return std::min(shape.block_q, p.seqlen_q - i0); }
  std::int64_t cols_at(std::int64_t j0) const { return std::min(shape.block_k, p.seqlen_k - j0); }
  // Whether any row of Q block [i0, i0 + rows) sees a key of block [j0, j0 + cols).
  bool tile_visible(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols) const {
    return overlaps(visible_key_bound(p.mask, i0, i0 + rows, len_q(), len_k()), j0, j0 + cols);
  }
};

// Query tiles processed together against K/V block j0: tile g holds rows
// [start[g], start[g] + rows[g]) of the head, at rows [offset[g], ...) of the
// tile buffers.
struct QueryGroup {
  std::int64_t start[kQueryTilesPerStep];
  std::int64_t rows[kQueryTilesPerStep];
  std::int64_t offset[kQueryTilesPerStep];
  std::int64_t count = 0;
  std::int64_t total_rows = 0;

  void add(std::int64_t i0, std::int64_t tile_rows) {
    start[count] = i0;
    rows[count] = tile_rows;
    offset[count] = total_rows;
    total_rows += tile_rows;
    ++count;
  }
};

// Calls step(group) for the query tiles that see K/V block j0, in order,
// kQueryTilesPerStep at a time.
template <typename Step>
void for_each_query_group(const HeadContext& c, std::int64_t j0, std::int64_t cols, Step&& step) {
  QueryGroup group;
  for (std::int64_t i0 = 0; i0 < c.p.seqlen_q; i0 += c.shape.block_q) {
    const std::int64_t rows = c.rows_at(i0);
    if (!c.tile_visible(i0, rows, j0, cols)) continue;
    group.add(i0, rows);
    if (group.count == kQueryTilesPerStep) {
      step(group);
      group = QueryGroup{};
    }
  }
  if (group.count > 0) step(group);
}

// scores = sign(tau) Q K_j^T over the group's rows (ScoreScale), with -inf at
// the pairs the mask hides.
void masked_scores(const HeadContext& c, const QueryGroup& group, std::int64_t j0, std::int64_t cols) {
  depth_split_abt(c.t.query, c.t.key, group.total_rows, cols, c.p.head_dim, c.scale.gemm, c.t.scores, cols);
  for (std::int64_t g = 0; g < group.count; ++g) {
    const std::int64_t i0 = group.start[g];
    if (tile_fully_visible(c.p.mask, i0, i0 + group.rows[g], j0, j0 + cols, c.len_q(), c.len_k())) continue;
    for (std::int64_t r = 0; r < group.rows[g]; ++r) {
      const KeyRange visible = visible_keys(c.p.mask, i0 + r, c.len_q(), c.len_k());
      float* row = c.t.scores + (group.offset[g] + r) * cols;
      for (std::int64_t k = 0; k < cols; ++k) {
        const std::int64_t j = j0 + k;
        if (j < visible.begin || j >= visible.end) row[k] = kNegativeInfinity;
      }
    }
  }
}

// ---- Forward -------------------------------------------------------------------

// O = 0, l = 0, m = -inf for every row of head h, written block by block.
void initialise_state(const HeadContext& c, const HeadSlice& out, float* row_max, float* row_sum) {
  for (std::int64_t i0 = 0; i0 < c.p.seqlen_q; i0 += c.shape.block_q) {
    const std::int64_t rows = c.rows_at(i0);
    std::fill(c.t.out, c.t.out + rows * c.p.head_dim, 0.0f);
    std::fill(c.t.row_max, c.t.row_max + rows, kNegativeInfinity);
    std::fill(c.t.row_sum, c.t.row_sum + rows, 0.0f);
    store_rows(out, i0, rows, c.t.out, c.traffic);
    store_span(row_max + i0, rows, c.t.row_max, c.traffic);
    store_span(row_sum + i0, rows, c.t.row_sum, c.traffic);
  }
}

// The online-softmax update of the group's O, m, l tiles by K/V block j0;
// c.t.scores holds the masked scores and is consumed.
void update_output_tiles(const HeadContext& c, std::int64_t h, const QueryGroup& group, std::int64_t j0,
                         std::int64_t cols) {
  const std::int64_t d = c.p.head_dim;
  const std::int64_t rows = group.total_rows;
  cpu_vector::row_maxima(c.t.scores, rows, cols, cols, c.t.row_tile_max);
  for (std::int64_t r = 0; r < rows; ++r) {
    c.t.row_tile_max[r] = static_cast<float>(c.scale.exponent * c.t.row_tile_max[r]);
    c.t.row_shift[r] = exp_reference(c.t.row_tile_max[r]);
  }
  cpu_vector::exp_scaled(c.t.scores, rows, cols, cols, c.scale.exponent, c.t.row_shift, c.t.row_tile_sum);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float tile_max = c.t.row_tile_max[r];
    SoftmaxRowState<float> state{c.t.row_max[r], c.t.row_sum[r]};
    const float old_sum = state.sum;
    const float old_scale = online_softmax_advance(state, tile_max);  // e^(m_i - m_new)
    const float tile_scale = rescale_factor(tile_max, state.max);     // e^(m~ - m_new)
    state.sum += tile_scale * c.t.row_tile_sum[r];                    // l_new
    c.t.row_max[r] = state.max;
    c.t.row_sum[r] = state.sum;
    c.t.row_carried[r] = old_sum * old_scale;
    c.t.row_weight[r] = tile_scale;
  }
  for (std::int64_t g = 0; g < group.count; ++g) {
    apply_dropout(c.rng, c.b, h, group.start[g], group.rows[g], j0, cols, c.t.scores + group.offset[g] * cols, cols);
  }
  depth_split_ab(c.t.scores, cols, c.t.value, rows, cols, d, 1.0f, 0.0f, c.t.update);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float sum = c.t.row_sum[r];
    if (!(sum > 0.0f)) continue;  // no visible key yet: O_i stays 0
    const float carried = c.t.row_carried[r];
    const float weight = c.t.row_weight[r];
    float* o_row = c.t.out + r * d;
    const float* update = c.t.update + r * d;
#pragma omp simd
    for (std::int64_t x = 0; x < d; ++x) o_row[x] = (carried * o_row[x] + weight * update[x]) / sum;
  }
}

// LSE = m + log l for every row of head h (-inf where l = 0).
void write_lse(const HeadContext& c, const float* row_max, const float* row_sum, float* lse) {
  for (std::int64_t i0 = 0; i0 < c.p.seqlen_q; i0 += c.shape.block_q) {
    const std::int64_t rows = c.rows_at(i0);
    load_span(row_max + i0, rows, c.t.row_max, c.traffic);
    load_span(row_sum + i0, rows, c.t.row_sum, c.traffic);
    for (std::int64_t r = 0; r < rows; ++r) {
      c.t.row_lse[r] = online_softmax_lse(SoftmaxRowState<float>{c.t.row_max[r], c.t.row_sum[r]});
    }
    store_span(lse + i0, rows, c.t.row_lse, c.traffic);
  }
}

// Algorithm 2 for query head (b, h).
void forward_head(const HeadContext& c, const AttentionBuffers& buffers, std::int64_t h,
                  float* row_max, float* row_sum) {
  const Problem& p = c.p;
  const std::int64_t hkv = p.kv_head_of(h);
  const HeadSlice q = query_slice(p, buffers.q, c.b, h);
  const HeadSlice out = query_slice(p, buffers.out, c.b, h);
  const HeadSlice k = key_slice(p, buffers.k, c.b, hkv);
  const HeadSlice v = key_slice(p, buffers.v, c.b, hkv);

  initialise_state(c, out, row_max, row_sum);
  const KeyRange head_keys = visible_key_bound(p.mask, 0, p.seqlen_q, c.len_q(), c.len_k());
  const std::int64_t d = p.head_dim;
  for (std::int64_t j0 = 0; j0 < p.seqlen_k; j0 += c.shape.block_k) {
    const std::int64_t cols = c.cols_at(j0);
    if (!overlaps(head_keys, j0, j0 + cols)) continue;
    load_rows(k, j0, cols, c.t.key, c.traffic);
    load_rows(v, j0, cols, c.t.value, c.traffic);
    for_each_query_group(c, j0, cols, [&](const QueryGroup& group) {
      const std::int64_t next = group.start[group.count - 1] + group.rows[group.count - 1];
      prefetch_rows(q, next, group.total_rows, p.seqlen_q);
      prefetch_rows(out, next, group.total_rows, p.seqlen_q);
      for (std::int64_t g = 0; g < group.count; ++g) {
        const std::int64_t i0 = group.start[g], rows = group.rows[g], at = group.offset[g];
        load_rows(q, i0, rows, c.t.query + at * d, c.traffic);
        load_rows(out, i0, rows, c.t.out + at * d, c.traffic);
        load_span(row_max + i0, rows, c.t.row_max + at, c.traffic);
        load_span(row_sum + i0, rows, c.t.row_sum + at, c.traffic);
      }
      masked_scores(c, group, j0, cols);
      update_output_tiles(c, h, group, j0, cols);
      for (std::int64_t g = 0; g < group.count; ++g) {
        const std::int64_t i0 = group.start[g], rows = group.rows[g], at = group.offset[g];
        store_rows(out, i0, rows, c.t.out + at * d, c.traffic);
        store_span(row_max + i0, rows, c.t.row_max + at, c.traffic);
        store_span(row_sum + i0, rows, c.t.row_sum + at, c.traffic);
      }
    });
  }
  write_lse(c, row_max, row_sum, static_cast<float*>(buffers.lse.data) + lse_index(p, c.b, h, 0));
}

// ---- Backward ------------------------------------------------------------------

// dQ = 0 for every row of head h, written block by block.
void zero_query_gradient(const HeadContext& c, const HeadSlice& d_q) {
  for (std::int64_t i0 = 0; i0 < c.p.seqlen_q; i0 += c.shape.block_q) {
    const std::int64_t rows = c.rows_at(i0);
    std::fill(c.t.d_query, c.t.d_query + rows * c.p.head_dim, 0.0f);
    store_rows(d_q, i0, rows, c.t.d_query, c.traffic);
  }
}

// The contribution of the group's query tiles of head h against K/V block j0:
// updates the dK_j, dV_j accumulators and c.t.d_query (the group's dQ) from the
// loaded tiles.
void backward_tiles(const HeadContext& c, std::int64_t h, const QueryGroup& group, std::int64_t j0,
                    std::int64_t cols) {
  const std::int64_t d = c.p.head_dim;
  const std::int64_t rows = group.total_rows;
  const std::int64_t n = rows * cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    c.t.row_d[r] = dot(c.t.d_out + r * d, c.t.out + r * d, d);  // D_i
  }
  masked_scores(c, group, j0, cols);
  for (std::int64_t r = 0; r < rows; ++r) c.t.row_shift[r] = exp_reference(c.t.row_lse[r]);
  cpu_vector::exp_scaled(c.t.scores, rows, cols, cols, c.scale.exponent, c.t.row_shift, nullptr);  // P = exp(S - LSE_i)
  for (std::int64_t g = 0; g < group.count; ++g) {
    dropout_factors(c.rng, c.b, h, group.start[g], group.rows[g], j0, cols, c.t.factors + group.offset[g] * cols);
  }

#pragma omp simd
  for (std::int64_t e = 0; e < n; ++e) c.t.d_scores[e] = c.t.scores[e] * c.t.factors[e];  // P~
  accumulate_atb(c.t.d_scores, cols, c.t.d_out, rows, cols, d, 1.0f, c.t.d_value);  // dV_j += P~^T dO_i

  multiply_abt(c.t.d_out, c.t.value, rows, cols, d, 1.0f, c.t.d_scores);  // dP~ = dO_i V_j^T
  for (std::int64_t r = 0; r < rows; ++r) {  // dS = P o (dP~ o Z/(1-p) - D_i)
    const float row_d = c.t.row_d[r];
#pragma omp simd
    for (std::int64_t k = 0; k < cols; ++k) {
      const std::int64_t e = r * cols + k;
      c.t.d_scores[e] = c.t.scores[e] * (c.t.d_scores[e] * c.t.factors[e] - row_d);
    }
  }
  depth_split_ab(c.t.d_scores, cols, c.t.key, rows, cols, d, c.tau, 1.0f, c.t.d_query);  // dQ_i += tau dS K_j
  accumulate_atb(c.t.d_scores, cols, c.t.query, rows, cols, d, c.tau, c.t.d_key);  // dK_j += tau dS^T Q_i
}

// Algorithm 4 (P recomputed from LSE) for kv head (b, hkv) and its query heads.
void backward_kv_head(const HeadContext& c, const AttentionBuffers& buffers, std::int64_t hkv) {
  const Problem& p = c.p;
  const std::int64_t d = p.head_dim;
  const std::int64_t first_head = hkv * p.head_group();
  const std::int64_t end_head = first_head + p.head_group();
  const HeadSlice k = key_slice(p, buffers.k, c.b, hkv);
  const HeadSlice v = key_slice(p, buffers.v, c.b, hkv);
  const HeadSlice d_k = key_slice(p, buffers.d_k, c.b, hkv);
  const HeadSlice d_v = key_slice(p, buffers.d_v, c.b, hkv);

  for (std::int64_t h = first_head; h < end_head; ++h) {
    zero_query_gradient(c, query_slice(p, buffers.d_q, c.b, h));
  }
  const KeyRange head_keys = visible_key_bound(p.mask, 0, p.seqlen_q, c.len_q(), c.len_k());
  for (std::int64_t j0 = 0; j0 < p.seqlen_k; j0 += c.shape.block_k) {
    const std::int64_t cols = c.cols_at(j0);
    std::fill(c.t.d_key, c.t.d_key + cols * d, 0.0f);
    std::fill(c.t.d_value, c.t.d_value + cols * d, 0.0f);
    if (overlaps(head_keys, j0, j0 + cols)) {
      load_rows(k, j0, cols, c.t.key, c.traffic);
      load_rows(v, j0, cols, c.t.value, c.traffic);
      for (std::int64_t h = first_head; h < end_head; ++h) {
        const HeadSlice q = query_slice(p, buffers.q, c.b, h);
        const HeadSlice out = query_slice(p, buffers.out, c.b, h);
        const HeadSlice d_out = query_slice(p, buffers.d_out, c.b, h);
        const HeadSlice d_q = query_slice(p, buffers.d_q, c.b, h);
        const float* lse = static_cast<const float*>(buffers.lse.data) + lse_index(p, c.b, h, 0);
        for_each_query_group(c, j0, cols, [&](const QueryGroup& group) {
          const std::int64_t next = group.start[group.count - 1] + group.rows[group.count - 1];
          for (const HeadSlice* slice : {&q, &out, &d_out, &d_q}) prefetch_rows(*slice, next, group.total_rows, p.seqlen_q);
          for (std::int64_t g = 0; g < group.count; ++g) {
            const std::int64_t i0 = group.start[g], rows = group.rows[g], at = group.offset[g];
            load_rows(q, i0, rows, c.t.query + at * d, c.traffic);
            load_rows(out, i0, rows, c.t.out + at * d, c.traffic);
            load_rows(d_out, i0, rows, c.t.d_out + at * d, c.traffic);
            load_rows(d_q, i0, rows, c.t.d_query + at * d, c.traffic);
            load_span(lse + i0, rows, c.t.row_lse + at, c.traffic);
          }
          backward_tiles(c, h, group, j0, cols);
          for (std::int64_t g = 0; g < group.count; ++g) {
            store_rows(d_q, group.start[g], group.rows[g], c.t.d_query + group.offset[g] * d, c.traffic);
          }
        });
      }
    }
    store_rows(d_k, j0, cols, c.t.d_key, c.traffic);
    store_rows(d_v, j0, cols, c.t.d_value, c.traffic);
  }
}

class CpuFlash final : public CpuBlasImplementation {
 public:
  std::string_view name() const override { return "cpu.flash"; }
  std::string_view summary() const override {
    return "fused fp32 attention: tiled online softmax (Algorithms 2 and 4), configurable blocks";
  }
  // Its loop order is the paper's Algorithm 1 (key tiles outer), with O, l, m
  // and dQ carried in its fp32 arrays between tiles.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    const TileShape shape = tile_shape(p, kDefaultTiles);
    FusedTiling tiling;
    tiling.forward_order = FusedLoopOrder::key_outer;
    tiling.block_m = shape.block_q;
    tiling.block_n = shape.block_k;
    tiling.input = static_cast<int>(element_size(element_type(p.dtype)));
    tiling.output = tiling.accumulator = 4;
    // Its on-chip set (fp32): K, V, dK, dV tiles and, for each of the query tiles
    // it processes together, Q, O, dO, dQ and update tiles, three score tiles
    // and nine row vectors, one of them fp64 (the exponentials' shifts).
    const std::int64_t rows = kQueryTilesPerStep * shape.block_q;
    tiling.shared_bytes = 4 * (p.head_dim * (5 * rows + 4 * shape.block_k) + 3 * rows * shape.block_k + 10 * rows);
    return fused_traffic(p, tiling);
  }
  std::string_view accuracy_baseline() const override { return "cpu.standard"; }
  bool counts_traffic() const override { return true; }

  std::size_t workspace_bytes(const Problem& problem,
                              const ExecutionContext& context) const override {
    return 2 * FlashWorkspace::state_bytes(problem) +
           static_cast<std::size_t>(context.thread_count()) *
               FlashWorkspace::tile_bytes_for(problem);
  }

  void forward(const Problem& p, const AttentionBuffers& buffers,
               ExecutionContext& context) override {
    const FlashWorkspace workspace = FlashWorkspace::of(p, buffers.workspace);
    const DropoutRng rng = dropout_rng(p);
    const auto tau = static_cast<float>(p.softmax_scale());
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.heads; ++task) {
      const std::int64_t b = task / p.heads;
      const std::int64_t h = task % p.heads;
      const FlashTiles tiles = workspace.thread_tiles(p);
      TrafficSlot traffic(*context.traffic, omp_get_thread_num());
      const HeadContext c{p, tile_shape(p, kDefaultTiles), rng, ScoreScale::of(p.softmax_scale()), tau, b, tiles, traffic};
      const std::int64_t state_offset = lse_index(p, b, h, 0);
      forward_head(c, buffers, h, workspace.row_max + state_offset,
                   workspace.row_sum + state_offset);
    }
  }

  void backward(const Problem& p, const AttentionBuffers& buffers,
                ExecutionContext& context) override {
    const FlashWorkspace workspace = FlashWorkspace::of(p, buffers.workspace);
    const DropoutRng rng = dropout_rng(p);
    const auto tau = static_cast<float>(p.softmax_scale());
#pragma omp parallel for num_threads(context.thread_count()) schedule(dynamic)
    for (std::int64_t task = 0; task < p.batch * p.kv_heads; ++task) {
      const std::int64_t b = task / p.kv_heads;
      const std::int64_t hkv = task % p.kv_heads;
      const FlashTiles tiles = workspace.thread_tiles(p);
      TrafficSlot traffic(*context.traffic, omp_get_thread_num());
      const HeadContext c{p, tile_shape(p, kDefaultTiles), rng, ScoreScale::of(p.softmax_scale()), tau, b, tiles, traffic};
      backward_kv_head(c, buffers, hkv);
    }
  }

  nlohmann::ordered_json configuration(const Problem& p,
                                       const ExecutionContext& context) const override {
    return tile_configuration(p, context, kDefaultTiles);
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CpuFlash>(); }};

}  // namespace
}  // namespace attnbench
