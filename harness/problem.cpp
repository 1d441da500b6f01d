#include "problem.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "../kernels/common/philox.hpp"

namespace attnbench {

ElementType element_type(InputDType dtype) {
  return dtype == InputDType::fp16 ? ElementType::f16 : ElementType::bf16;
}

std::string to_string(InputDType dtype) { return dtype == InputDType::fp16 ? "fp16" : "bf16"; }
std::string to_string(Layout layout) { return layout == Layout::bshd ? "bshd" : "bhsd"; }
std::string to_string(Direction direction) {
  switch (direction) {
    case Direction::fwd:
      return "fwd";
    case Direction::bwd:
      return "bwd";
    case Direction::fwd_bwd:
      return "fwd+bwd";
  }
  throw std::logic_error("unknown direction");
}
std::string to_string(Distribution distribution) {
  return distribution == Distribution::normal ? "normal" : "uniform";
}
bool has_forward(Direction direction) { return direction != Direction::bwd; }
bool has_backward(Direction direction) { return direction != Direction::fwd; }

double Problem::softmax_scale() const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

DropoutRng dropout_rng(const Problem& problem) {
  return make_dropout_rng(problem.dropout.probability, problem.dropout.seed, problem.dropout.offset,
                          static_cast<std::uint32_t>(problem.heads));
}

void resolve_lengths(Problem& problem) {
  if (problem.batch < 1) return;  // check_problem reports it
  const auto batch = static_cast<std::size_t>(problem.batch);
  switch (problem.padding.kind) {
    case PaddingSpec::Kind::none:
      problem.lengths_q.assign(batch, problem.seqlen_q);
      problem.lengths_k.assign(batch, problem.seqlen_k);
      return;
    case PaddingSpec::Kind::explicit_lengths:
      return;  // given by the scenario; check_problem verifies them
    case PaddingSpec::Kind::random: {
      if (problem.padding.shortfall_min < 0 ||
          problem.padding.shortfall_max < problem.padding.shortfall_min) {
        return;  // check_problem reports it
      }
      problem.lengths_q.resize(batch);
      problem.lengths_k.resize(batch);
      const auto seed = problem.padding.seed;
      const std::uint64_t span =
          static_cast<std::uint64_t>(problem.padding.shortfall_max - problem.padding.shortfall_min) +
          1;
      for (std::size_t b = 0; b < batch; ++b) {
        const PhiloxBlock draw =
            philox4x32_10(PhiloxBlock{{static_cast<std::uint32_t>(b), 0, 0, 0}},
                          static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
        const auto shortfall =
            problem.padding.shortfall_min + static_cast<std::int64_t>(draw.word[0] % span);
        problem.lengths_q[b] = std::max<std::int64_t>(0, problem.seqlen_q - shortfall);
        problem.lengths_k[b] = std::max<std::int64_t>(0, problem.seqlen_k - shortfall);
      }
      return;
    }
  }
}

namespace {

// Tensors larger than this many elements cannot be indexed safely or allocated
// on any machine we target; they are refused as impossible rather than attempted.
constexpr double kMaxTensorElements = 1125899906842624.0;  // 2^50

}  // namespace

std::vector<ProblemIssue> check_problem(const Problem& p) {
  std::vector<ProblemIssue> issues;
  auto require_positive = [&](const char* key, std::int64_t value) {
    if (value < 1) issues.push_back({key, "must be at least 1, got " + std::to_string(value)});
  };
  require_positive("batch", p.batch);
  require_positive("heads", p.heads);
  require_positive("kv_heads", p.kv_heads);
  require_positive("seqlen_q", p.seqlen_q);
  require_positive("seqlen_k", p.seqlen_k);
  require_positive("head_dim", p.head_dim);
  if (!issues.empty()) return issues;

  if (p.heads % p.kv_heads != 0) {
    issues.push_back({"kv_heads", "must divide heads (" + std::to_string(p.heads) + "), got " +
                                      std::to_string(p.kv_heads)});
  }
  const double q_count = static_cast<double>(p.batch) * static_cast<double>(p.seqlen_q) *
                         static_cast<double>(p.heads) * static_cast<double>(p.head_dim);
  const double kv_count = static_cast<double>(p.batch) * static_cast<double>(p.seqlen_k) *
                          static_cast<double>(p.kv_heads) * static_cast<double>(p.head_dim);
  const double score_count = static_cast<double>(p.batch) * static_cast<double>(p.heads) *
                             static_cast<double>(p.seqlen_q) * static_cast<double>(p.seqlen_k);
  if (q_count > kMaxTensorElements || kv_count > kMaxTensorElements ||
      score_count > kMaxTensorElements * 1024.0) {
    issues.push_back({"batch", "the problem is impossibly large (Q has " +
                                   std::to_string(q_count) + " elements, K " +
                                   std::to_string(kv_count) + "; at most 2^50 are allowed)"});
  }
  if (!(p.dropout.probability >= 0.0 && p.dropout.probability < 1.0)) {
    issues.push_back({"dropout", "probability must be in [0, 1), got " +
                                     std::to_string(p.dropout.probability)});
  }
  if (p.scale && !std::isfinite(*p.scale)) {
    issues.push_back({"scale", "must be a finite number"});
  }
  if (p.input.distribution == Distribution::normal && !(p.input.b > 0.0 && std::isfinite(p.input.b))) {
    issues.push_back({"input.std", "must be positive and finite (inputs are never all zeros)"});
  }
  if (p.input.distribution == Distribution::uniform && !(p.input.a < p.input.b)) {
    issues.push_back({"input.high", "must be greater than input.low"});
  }
  // Inputs must be representable in the dtype, and their scores in fp32, where
  // every implementation accumulates.
  const double largest_input = p.input.distribution == Distribution::normal
                                   ? std::abs(p.input.a) + 8.0 * std::abs(p.input.b)
                                   : std::max(std::abs(p.input.a), std::abs(p.input.b));
  const double dtype_max = p.dtype == InputDType::fp16 ? 65504.0 : 3.3895313892515355e38;
  if (largest_input > dtype_max) {
    issues.push_back({"input", "values reach about " + std::to_string(largest_input) + ", beyond the largest finite " +
                                   to_string(p.dtype) + " (" + std::to_string(dtype_max) + ")"});
  } else if (std::abs(p.softmax_scale()) * largest_input * largest_input * static_cast<double>(p.head_dim) > 1e37) {
    issues.push_back({"input", "scores (scale x |q| x |k| x head_dim) would overflow fp32"});
  }
  if (p.padding.kind == PaddingSpec::Kind::random &&
      !(0 <= p.padding.shortfall_min && p.padding.shortfall_min <= p.padding.shortfall_max)) {
    issues.push_back({"padding.shortfall", "needs 0 <= min <= max"});
  }
  auto check_lengths = [&](const char* key, const std::vector<std::int64_t>& lengths,
                           std::int64_t full) {
    if (static_cast<std::int64_t>(lengths.size()) != p.batch) {
      issues.push_back({key, "needs one length per batch element (" + std::to_string(p.batch) +
                                 "), got " + std::to_string(lengths.size())});
      return;
    }
    for (std::size_t b = 0; b < lengths.size(); ++b) {
      if (lengths[b] < 0 || lengths[b] > full) {
        issues.push_back({std::string(key) + "[" + std::to_string(b) + "]",
                          "must be in [0, " + std::to_string(full) + "], got " +
                              std::to_string(lengths[b])});
      }
    }
  };
  check_lengths("padding.lengths_q", p.lengths_q, p.seqlen_q);
  check_lengths("padding.lengths_k", p.lengths_k, p.seqlen_k);
  if (p.tile.block_q < 0 || p.tile.block_k < 0) {
    issues.push_back({"tile", "block sizes must be positive (or 0 for the default)"});
  }
  return issues;
}

TensorStrides strides_for(Layout layout, std::int64_t seqlen, std::int64_t heads,
                          std::int64_t head_dim) {
  if (layout == Layout::bshd) {
    return TensorStrides{seqlen * heads * head_dim, heads * head_dim, head_dim};
  }
  return TensorStrides{heads * seqlen * head_dim, head_dim, seqlen * head_dim};
}

std::int64_t q_elements(const Problem& p) { return p.batch * p.seqlen_q * p.heads * p.head_dim; }
std::int64_t kv_elements(const Problem& p) {
  return p.batch * p.seqlen_k * p.kv_heads * p.head_dim;
}
std::int64_t lse_elements(const Problem& p) { return p.batch * p.heads * p.seqlen_q; }
TensorStrides q_strides(const Problem& p) {
  return strides_for(p.layout, p.seqlen_q, p.heads, p.head_dim);
}
TensorStrides kv_strides(const Problem& p) {
  return strides_for(p.layout, p.seqlen_k, p.kv_heads, p.head_dim);
}

std::int64_t visible_pairs(const Problem& p) {
  // Batch elements with the same valid lengths see the same pairs: count each
  // distinct (Lq, Lk) once, so the cost is O(distinct lengths x Nq), not O(B x Nq).
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> per_lengths;
  std::int64_t pairs = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const auto lengths = std::make_pair(p.length_q(b), p.length_k(b));
    auto [entry, inserted] = per_lengths.emplace(lengths, 0);
    if (inserted) {
      for (std::int64_t i = 0; i < lengths.first; ++i) {
        entry->second += visible_keys(p.mask, i, lengths.first, lengths.second).size();
      }
    }
    pairs += entry->second;
  }
  return pairs * p.heads;
}

FlopCount flop_count(const Problem& p) {
  FlopCount count;
  count.forward = 4.0 * static_cast<double>(p.head_dim) * static_cast<double>(visible_pairs(p));
  count.backward = 2.5 * count.forward;
  switch (p.direction) {
    case Direction::fwd:
      count.total = count.forward;
      break;
    case Direction::bwd:
      count.total = count.backward;
      break;
    case Direction::fwd_bwd:
      count.total = count.forward + count.backward;
      break;
  }
  return count;
}

ByteCount compulsory_bytes(const Problem& p) {
  const double width = static_cast<double>(element_size(element_type(p.dtype)));
  const double q = static_cast<double>(q_elements(p)) * width;
  const double kv = static_cast<double>(kv_elements(p)) * width;
  const double lse = static_cast<double>(lse_elements(p)) * 4.0;
  ByteCount forward{q + 2 * kv, q + lse};                // read Q, K, V; write O, LSE
  ByteCount backward{3 * q + 2 * kv + lse, q + 2 * kv};  // read Q, K, V, O, dO, LSE; write dQ, dK, dV
  switch (p.direction) {
    case Direction::fwd:
      return forward;
    case Direction::bwd:
      return backward;
    case Direction::fwd_bwd:
      return ByteCount{forward.read + backward.read, forward.write + backward.write};
  }
  throw std::logic_error("unknown direction");
}

namespace {

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string join_lengths(const std::vector<std::int64_t>& lengths) {
  std::string out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(lengths[i]);
  }
  return out;
}

}  // namespace

std::string case_key(const Problem& p) {
  std::ostringstream key;
  key << "b" << p.batch << "-h" << p.heads << "-kv" << p.kv_heads << "-q" << p.seqlen_q << "-k"
      << p.seqlen_k << "-d" << p.head_dim << "-" << to_string(p.dtype) << "-" << to_string(p.layout)
      << "-" << to_string(p.direction);
  const char* align = p.mask.bottom_right ? "br" : "tl";
  if (p.mask.causal) key << "-causal." << align;
  if (p.mask.window_left >= 0 || p.mask.window_right >= 0) {
    key << "-window." << align << "(" << p.mask.window_left << "," << p.mask.window_right << ")";
  }
  switch (p.padding.kind) {
    case PaddingSpec::Kind::none:
      break;
    case PaddingSpec::Kind::explicit_lengths:
      key << "-pad(q=" << join_lengths(p.lengths_q) << ";k=" << join_lengths(p.lengths_k) << ")";
      break;
    case PaddingSpec::Kind::random:
      key << "-pad.random(" << p.padding.shortfall_min << ".." << p.padding.shortfall_max << ",s"
          << p.padding.seed << ")";
      break;
  }
  if (p.dropout.probability > 0.0) {
    key << "-dropout(" << format_number(p.dropout.probability) << ",s" << p.dropout.seed << ",o"
        << p.dropout.offset << ")";
  }
  if (p.scale) key << "-scale(" << format_number(*p.scale) << ")";
  key << "-in." << to_string(p.input.distribution) << "(" << format_number(p.input.a) << ","
      << format_number(p.input.b) << ",s" << p.input.seed << ")";
  // The tile that runs, when it is not the default (an unset size is the default).
  const std::int64_t block_q = TileHint::configured(p.tile.block_q), block_k = TileHint::configured(p.tile.block_k);
  if (block_q != TileHint::kDefaultBlock || block_k != TileHint::kDefaultBlock) {
    key << "-tile(" << block_q << "x" << block_k << ")";
  }
  return key.str();
}

}  // namespace attnbench
