// The workload model of docs/design.md §2: one attention problem, resolved and
// checked, with its exact FLOP count, its compulsory-bytes model and its
// tensor geometry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/dropout.hpp"
#include "kernels/common/mask.hpp"
#include "harness/dtype.hpp"

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

// Where the valid lengths came from: none (every batch element has the full
// lengths), a list per side, or a seeded draw per batch element.
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
// implementation's default (kDefaultBlock, but 512 keys for cpu.flash), which
// it records in its configuration. CUDA kernels use their compiled tiles and
// ignore it.
struct TileHint {
  static constexpr std::int64_t kDefaultBlock = 64;
  std::int64_t block_q = 0;
  std::int64_t block_k = 0;
};

// The documented limits of a problem's sizes (docs/scenarios.md), checked by
// check_problem before anything is allocated or iterated.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxHeads = std::int64_t{1} << 16;  // heads and kv_heads
inline constexpr std::int64_t kMaxSeqlen = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxHeadDim = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxBlock = std::int64_t{1} << 16;  // block_q, block_k
inline constexpr int kMaxTensorElementsLog2 = 50;                 // Q, K, V, O and their gradients, each
inline constexpr int kMaxScoreElementsLog2 = 60;                  // the score matrices of all (batch, head)

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
  // Valid lengths per batch element: the explicit lists as given, or every
  // element's once resolve_lengths() has filled them; otherwise empty, and
  // length_q / length_k derive them from `padding`, so a scenario of large
  // batches holds no per-element arrays.
  std::vector<std::int64_t> lengths_q;
  std::vector<std::int64_t> lengths_k;
  DropoutSpec dropout;
  std::optional<double> scale;  // softmax scale; default 1/sqrt(head_dim)
  Direction direction = Direction::fwd;
  InputSpec input;
  TileHint tile;

  double softmax_scale() const;
  std::int64_t head_group() const { return heads / kv_heads; }  // query heads per kv head
  std::int64_t kv_head_of(std::int64_t head) const { return head / head_group(); }
  std::int64_t length_q(std::int64_t b) const;  // valid query length of batch element b
  std::int64_t length_k(std::int64_t b) const;  // valid key length of batch element b
};

// The dropout RNG contract (docs/design.md §2.3) instantiated for this problem.
DropoutRng dropout_rng(const Problem& problem);

// Fills lengths_q / lengths_k for every batch element from the padding spec
// (full lengths without padding; explicit lists are kept), for code that needs
// the arrays themselves, such as an upload to a device. A case about to run is
// resolved (CaseData); scenarios keep their cases unresolved.
void resolve_lengths(Problem& problem);

// Batch elements that share valid lengths: one entry per distinct (Lq, Lk),
// in increasing order, with how many elements have it. One entry without padding.
struct LengthGroup {
  std::int64_t length_q = 0;
  std::int64_t length_k = 0;
  std::int64_t count = 0;
};
std::vector<LengthGroup> length_groups(const Problem& problem);

// Problems found invalid, as (key, message) pairs; empty when the problem is
// valid. The documented limits of every size are checked first, and nothing
// proportional to the batch is iterated or allocated unless they hold.
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

// Number of visible (i, j) pairs over every batch element and query head, in
// O(1) per distinct pair of valid lengths (harness/common/mask_sums.hpp).
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
