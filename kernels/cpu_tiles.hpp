// Building blocks shared by the CPU tiled implementations (cpu.standard in
// baselines/, cpu.flash here): tile sizes, per-thread workspace carving, the
// traffic-counted moves between full-size arrays (the "HBM" of the paper's
// model) and dense fp32 tile buffers (its on-chip memory), the dropout factors
// of a tile, and the tile products both algorithms are built from (BLAS GEMMs
// on the calling thread).
//
// Every move counts the bytes it transfers at the width of the full-size array:
// an input tensor at its element size, every fp32 array (O, dQ, dK, dV, S, P,
// dP, dS, l, m, LSE) at 4 bytes. Tile products move nothing; a GEMM that reads
// or writes a full-size array itself (cpu.standard's S, P, dP, dS) is counted
// by its caller, each operand once, as the paper's model counts a matrix product.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "harness/blas.hpp"
#include "harness/dtype.hpp"
#include "harness/host_tensor.hpp"
#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"
#include "harness/traffic.hpp"
#include "common/dropout.hpp"
#include "common/mask.hpp"
#include "cpu_vector.hpp"

namespace attnbench::cpu_tiles {

// Rows of Q (block_q) and of K (block_k) per tile: the problem's hint, or the
// implementation's default where the hint is 0, never more than the sequence.
struct TileShape {
  std::int64_t block_q = TileHint::kDefaultBlock;
  std::int64_t block_k = TileHint::kDefaultBlock;
};

inline std::int64_t configured_block(std::int64_t hint, std::int64_t fallback) { return hint > 0 ? hint : fallback; }

// The blocks that run for a problem's hint, before clamping to the sequence.
inline TileShape configured_shape(const Problem& p, const TileShape& defaults) {
  return TileShape{configured_block(p.tile.block_q, defaults.block_q),
                   configured_block(p.tile.block_k, defaults.block_k)};
}

// What the results file records about a tiled run.
inline nlohmann::ordered_json tile_configuration(const Problem& p, const ExecutionContext& context,
                                                 const TileShape& defaults) {
  const TileShape configured = configured_shape(p, defaults);
  return {{"block_q", configured.block_q}, {"block_k", configured.block_k}, {"threads", context.thread_count()}};
}

inline TileShape tile_shape(const Problem& p, const TileShape& defaults) {
  const TileShape configured = configured_shape(p, defaults);
  return TileShape{std::min(configured.block_q, p.seqlen_q), std::min(configured.block_k, p.seqlen_k)};
}

// Hands out consecutive 64-byte-aligned fp32 arrays from a workspace region.
// Without a base it only measures, so one carve function gives both the layout
// and its size.
class WorkspaceCarver {
 public:
  static constexpr std::size_t kAlignment = 64;

  explicit WorkspaceCarver(void* base = nullptr) : base_(static_cast<std::byte*>(base)) {}

  float* floats(std::int64_t count) { return array<float>(count); }
  double* doubles(std::int64_t count) { return array<double>(count); }
  std::size_t used() const { return used_; }

  static std::size_t round_up(std::size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

 private:
  template <typename T>
  T* array(std::int64_t count) {
    T* at = base_ != nullptr ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += round_up(static_cast<std::size_t>(count) * sizeof(T));
    return at;
  }

  std::byte* base_;
  std::size_t used_ = 0;
};

// One thread's slot of the traffic counter.
class TrafficSlot {
 public:
  TrafficSlot(TrafficCounter& counter, int slot) : counter_(counter), slot_(slot) {}
  void read(std::int64_t bytes) { counter_.add_read(slot_, static_cast<std::uint64_t>(bytes)); }
  void write(std::int64_t bytes) { counter_.add_write(slot_, static_cast<std::uint64_t>(bytes)); }

 private:
  TrafficCounter& counter_;
  int slot_;
};

// ---- Moves between full-size arrays and tiles (counted) -----------------------

inline std::int64_t row_bytes(const HeadSlice& full) {
  return full.head_dim * static_cast<std::int64_t>(element_size(full.buffer->type));
}

// Rows [row_begin, row_begin + rows) of one head of a tensor -> dense rows x d tile.
inline void load_rows(const HeadSlice& full, std::int64_t row_begin, std::int64_t rows, float* tile,
                      TrafficSlot& traffic) {
  cpu_vector::load_floats(full.buffer->data, full.buffer->type, static_cast<std::size_t>(full.index(row_begin, 0)),
                          full.strides.seq, rows, full.head_dim, tile);
  traffic.read(rows * row_bytes(full));
}

// Asks the CPU to start fetching rows [row_begin, row_begin + rows) of one head
// of a tensor (clamped to the sequence) into its caches: a hint that moves and
// counts nothing.
inline void prefetch_rows(const HeadSlice& full, std::int64_t row_begin, std::int64_t rows, std::int64_t seqlen) {
  constexpr std::int64_t kLine = 64;
  const auto* data = static_cast<const char*>(full.buffer->data);
  const std::int64_t element = static_cast<std::int64_t>(element_size(full.buffer->type));
  for (std::int64_t r = row_begin; r < std::min(row_begin + rows, seqlen); ++r) {
    const char* row = data + full.index(r, 0) * element;
    for (std::int64_t byte = 0; byte < full.head_dim * element; byte += kLine) __builtin_prefetch(row + byte);
  }
}

// Dense rows x d tile -> rows [row_begin, row_begin + rows) of one head of a tensor.
inline void store_rows(const HeadSlice& full, std::int64_t row_begin, std::int64_t rows,
                       const float* tile, TrafficSlot& traffic) {
  if (full.buffer->type == ElementType::f32) {
    auto* data = static_cast<float*>(full.buffer->data);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy(tile + r * full.head_dim, tile + (r + 1) * full.head_dim, data + full.index(row_begin + r, 0));
    }
  } else {
    full.store_rows(row_begin, rows, tile);
  }
  traffic.write(rows * row_bytes(full));
}

// Block [row_begin, +rows) x [col_begin, +cols) of a row-major fp32 matrix with
// `columns` columns -> dense rows x cols tile.
inline void load_block(const float* full, std::int64_t columns, std::int64_t row_begin,
                       std::int64_t rows, std::int64_t col_begin, std::int64_t cols, float* tile,
                       TrafficSlot& traffic) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* src = full + (row_begin + r) * columns + col_begin;
    std::copy(src, src + cols, tile + r * cols);
  }
  traffic.read(rows * cols * static_cast<std::int64_t>(sizeof(float)));
}

// Dense rows x cols tile -> block [row_begin, +rows) x [col_begin, +cols) of a
// row-major fp32 matrix with `columns` columns.
inline void store_block(float* full, std::int64_t columns, std::int64_t row_begin,
                        std::int64_t rows, std::int64_t col_begin, std::int64_t cols,
                        const float* tile, TrafficSlot& traffic) {
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy(tile + r * cols, tile + (r + 1) * cols, full + (row_begin + r) * columns + col_begin);
  }
  traffic.write(rows * cols * static_cast<std::int64_t>(sizeof(float)));
}

// `count` consecutive elements of an fp32 vector (l, m, LSE) -> tile.
inline void load_span(const float* full, std::int64_t count, float* tile, TrafficSlot& traffic) {
  load_block(full, count, 0, 1, 0, count, tile, traffic);
}

inline void store_span(float* full, std::int64_t count, const float* tile, TrafficSlot& traffic) {
  store_block(full, count, 0, 1, 0, count, tile, traffic);
}

// ---- Dropout -----------------------------------------------------------------

// tile (rows x cols, row stride ld; rows from row_begin, keys from key_begin)
// *= Z/(1-p). Without dropout it does nothing.
inline void apply_dropout(const DropoutRng& rng, std::int64_t b, std::int64_t h, std::int64_t row_begin,
                          std::int64_t rows, std::int64_t key_begin, std::int64_t cols, float* tile,
                          std::int64_t ld) {
  if (!rng.enabled) return;
  constexpr std::int64_t kChunk = 256;
  float factors[kChunk];
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = tile + r * ld;
    for (std::int64_t c0 = 0; c0 < cols; c0 += kChunk) {
      const std::int64_t count = std::min(kChunk, cols - c0);
      cpu_vector::dropout_factors(rng, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
                                  static_cast<std::uint32_t>(row_begin + r), key_begin + c0, count, factors);
      for (std::int64_t c = 0; c < count; ++c) row[c0 + c] *= factors[c];
    }
  }
}

// factors (rows x cols) = Z/(1-p) of the tile's elements; 1 without dropout.
inline void dropout_factors(const DropoutRng& rng, std::int64_t b, std::int64_t h,
                            std::int64_t row_begin, std::int64_t rows, std::int64_t key_begin,
                            std::int64_t cols, float* factors) {
  for (std::int64_t r = 0; r < rows; ++r) {
    cpu_vector::dropout_factors(rng, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
                                static_cast<std::uint32_t>(row_begin + r), key_begin, cols, factors + r * cols);
  }
}

// ---- Tile products (on-chip, nothing counted): the BLAS on the calling thread --

// The softmax scale tau, split between the score GEMM and the exponential: the
// GEMM computes sign(tau) Q K^T (a factor that rounds nothing) and the
// exponential multiplies by |tau| in fp64 (cpu_vector::exp_scaled), so a score
// is rounded once, by its GEMM. tau = 0 gives scores of 0 and a factor of 1.
struct ScoreScale {
  float gemm = 1.0f;     // alpha of the score GEMM: 1, -1 or 0
  double exponent = 1.0;  // what the exponential multiplies the scores by: |tau|, or 1 when tau = 0

  static ScoreScale of(double tau) {
    if (tau == 0.0) return ScoreScale{0.0f, 1.0};
    return ScoreScale{tau > 0.0 ? 1.0f : -1.0f, tau > 0.0 ? tau : -tau};
  }
};

inline float dot(const float* a, const float* b, std::int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t x = 0; x < n; ++x) sum += a[x] * b[x];
  return sum;
}

// c (rows x cols) = alpha * a (rows x d) * b^T (b: cols x d)
inline void multiply_abt(const float* a, const float* b, std::int64_t rows, std::int64_t cols,
                         std::int64_t d, float alpha, float* c) {
  blas::sgemm(blas::Op::none, blas::Op::transpose, rows, cols, d, alpha, a, d, b, d, 0.0f, c, cols);
}

// A BLAS accumulates each dot product of a GEMM along one chain of fused
// multiply-adds as long as the GEMM's depth, and its rounding grows with that
// length; the products the outputs depend on most are therefore summed in
// parts, a GEMM each, added into the result in turn: the scores' depth (head
// dimension, kHeadDimPart columns a part: their rounding is what the softmax's
// exponentials pass on) and those over keys (P V, and dS K in the backward;
// kKeyPart a part).
inline constexpr std::int64_t kHeadDimPart = 64;
inline constexpr std::int64_t kKeyPart = 128;

// c (rows x cols, row stride ldc) = alpha * a (rows x d) * b^T (b: cols x d, row
// stride d), in parts of kHeadDimPart columns.
inline void depth_split_abt(const float* a, const float* b, std::int64_t rows, std::int64_t cols, std::int64_t d,
                            float alpha, float* c, std::int64_t ldc) {
  for (std::int64_t x = 0; x < d; x += kHeadDimPart) {
    blas::sgemm(blas::Op::none, blas::Op::transpose, rows, cols, std::min(kHeadDimPart, d - x), alpha, a + x, d,
                b + x, d, x == 0 ? 0.0f : 1.0f, c, ldc);
  }
}

// c (rows x d) = alpha * a (rows x depth, row stride lda) * b (depth x d) +
// beta * c, in parts of kKeyPart rows of b.
inline void depth_split_ab(const float* a, std::int64_t lda, const float* b, std::int64_t rows, std::int64_t depth,
                           std::int64_t d, float alpha, float beta, float* c) {
  for (std::int64_t k = 0; k < depth; k += kKeyPart) {
    blas::sgemm(blas::Op::none, blas::Op::none, rows, d, std::min(kKeyPart, depth - k), alpha, a + k, lda,
                b + k * d, d, k == 0 ? beta : 1.0f, c, d);
  }
}

// c (cols x d) += alpha * a^T (a: rows x cols, row stride lda) * b (rows x d)
inline void accumulate_atb(const float* a, std::int64_t lda, const float* b, std::int64_t rows,
                           std::int64_t cols, std::int64_t d, float alpha, float* c) {
  blas::sgemm(blas::Op::transpose, blas::Op::none, cols, d, rows, alpha, a, lda, b, d, 1.0f, c, d);
}

// ---- Masks -----------------------------------------------------------------------

// True when the key interval `bound` meets the key block [key_begin, key_end).
inline bool overlaps(const KeyRange& bound, std::int64_t key_begin, std::int64_t key_end) {
  return !bound.empty() && bound.begin < key_end && bound.end > key_begin;
}

}  // namespace attnbench::cpu_tiles
