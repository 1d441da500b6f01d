// The workload model of docs/design.md §2: one attention problem, resolved and
// checked, with its exact FLOP count, its compulsory-bytes model and its
// tensor geometry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../kernels/common/dropout.hpp"
#include "../kernels/common/mask.hpp"
#include "dtype.hpp"

namespace attnbench {

enum class InputDType { fp16, bf16 };
enum class Layout { bshd, bhsd };
enum class Direction { fwd, bwd, fwd_bwd };
enum class Distribution { normal, uniform };

ElementType element_type(InputDType dtype);
std::string to_string(InputDType dtype);
std::string to_string(Layout layout);
std::string to_string(Direction direction);
std::string to_string(Distribution distribution);
bool has_forward(Direction direction);
bool has_backward(Direction direction);

struct DropoutSpec {
  double probability = 0.0;
  std::uint64_t seed = 0;
  std::uint32_t offset = 0;
};

// How Q, K, V and dO are filled. normal: mean `a`, standard deviation `b`;
// uniform: [a, b). Each tensor draws its own Philox stream keyed by `seed`.
struct InputSpec {
  Distribution distribution = Distribution::normal;
  double a = 0.0;
  double b = 1.0;
  std::uint64_t seed = 0;
};

// Where the valid lengths came from; the lengths themselves are always resolved
// into Problem::lengths_q / lengths_k.
struct PaddingSpec {
  enum class Kind { none, explicit_lengths, random };
  Kind kind = Kind::none;
  // Kind::random: Lq = Nq - u and Lk = Nk - u with u uniform in
  // [shortfall_min, shortfall_max] per batch element (clamped at 0), drawn from
  // `seed`; one draw serves both sides, as in self-attention over one sequence.
  std::int64_t shortfall_min = 0;
  std::int64_t shortfall_max = 0;
  std::uint64_t seed = 0;
};

// Tile sizes for the implementations that tile on the CPU; 0 means the
// default, kDefaultBlock. CUDA kernels use their compiled tiles and ignore it.
struct TileHint {
  static constexpr std::int64_t kDefaultBlock = 64;
  std::int64_t block_q = 0;
  std::int64_t block_k = 0;
  // The block size that runs for a hint (0: the default).
  static std::int64_t configured(std::int64_t hint) { return hint > 0 ? hint : kDefaultBlock; }
};

struct Problem {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;  // divides heads
  std::int64_t seqlen_q = 1;
  std::int64_t seqlen_k = 1;
  std::int64_t head_dim = 64;
  InputDType dtype = InputDType::fp16;
  Layout layout = Layout::bshd;
  MaskSpec mask;
  PaddingSpec padding;
  std::vector<std::int64_t> lengths_q;  // valid query length per batch element
  std::vector<std::int64_t> lengths_k;  // valid key length per batch element
  DropoutSpec dropout;
  std::optional<double> scale;  // softmax scale; default 1/sqrt(head_dim)
  Direction direction = Direction::fwd;
  InputSpec input;
  TileHint tile;

  double softmax_scale() const;
  std::int64_t head_group() const { return heads / kv_heads; }  // query heads per kv head
  std::int64_t kv_head_of(std::int64_t head) const { return head / head_group(); }
  std::int64_t length_q(std::int64_t b) const { return lengths_q[static_cast<std::size_t>(b)]; }
  std::int64_t length_k(std::int64_t b) const { return lengths_k[static_cast<std::size_t>(b)]; }
};

// The dropout RNG contract (docs/design.md §2.3) instantiated for this problem.
DropoutRng dropout_rng(const Problem& problem);

// Fills lengths_q / lengths_k from the padding spec (full lengths without padding).
void resolve_lengths(Problem& problem);

// Problems found invalid, as (key, message) pairs; empty when the problem is valid.
struct ProblemIssue {
  std::string key;
  std::string message;
};
std::vector<ProblemIssue> check_problem(const Problem& problem);

// ---- Geometry ---------------------------------------------------------------

// Element strides of a [batch, seq, heads, dim] tensor stored in `layout`; the
// dim stride is 1 in both layouts.
struct TensorStrides {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t head = 0;
  std::int64_t offset(std::int64_t b, std::int64_t s, std::int64_t h) const {
    return b * batch + s * seq + h * head;
  }
};
TensorStrides strides_for(Layout layout, std::int64_t seqlen, std::int64_t heads,
                          std::int64_t head_dim);

std::int64_t q_elements(const Problem& p);    // also O, dO, dQ
std::int64_t kv_elements(const Problem& p);   // each of K, V, dK, dV
std::int64_t lse_elements(const Problem& p);  // [batch, heads, seqlen_q], fp32
TensorStrides q_strides(const Problem& p);
TensorStrides kv_strides(const Problem& p);
// Index of LSE element (b, h, i) in the [batch, heads, seqlen_q] array.
inline std::int64_t lse_index(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t i) {
  return (b * p.heads + h) * p.seqlen_q + i;
}

// ---- FLOPs (docs/design.md §2.4: count visible pairs exactly) ---------------------------

// Number of visible (i, j) pairs over every batch element and query head.
std::int64_t visible_pairs(const Problem& p);
struct FlopCount {
  double forward = 0;   // 4 * d * pairs
  double backward = 0;  // 2.5 * forward
  double total = 0;     // what one call in the problem's direction performs
};
FlopCount flop_count(const Problem& p);

// ---- Compulsory bytes ------------------------------------------------------------

// Every input read once and every output written once, in full, at its storage
// width (inputs and O/dQ/dK/dV in the problem's dtype, LSE fp32). For fwd+bwd both
// passes are counted: O and LSE leave the forward and enter the backward.
struct ByteCount {
  double read = 0;
  double write = 0;
  double total() const { return read + write; }
};
ByteCount compulsory_bytes(const Problem& p);

// ---- Identity ---------------------------------------------------------------------

// A readable key that identifies the problem (every field that changes what is
// computed or how it is tiled), stable across runs: compare and --resume match on it.
std::string case_key(const Problem& p);

}  // namespace attnbench
