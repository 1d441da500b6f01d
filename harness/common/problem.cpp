#include "harness/common/problem.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

#include "kernels/common/philox.hpp"
#include "harness/common/mask_sums.hpp"

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

namespace {

// Kind::random: the shortfall u of batch element b, uniform in [min, max].
std::int64_t random_shortfall(const PaddingSpec& padding, std::int64_t b) {
  const std::uint64_t span = static_cast<std::uint64_t>(padding.shortfall_max - padding.shortfall_min) + 1;
  const PhiloxBlock draw = philox4x32_10(PhiloxBlock{{static_cast<std::uint32_t>(b), 0, 0, 0}},
                                         static_cast<std::uint32_t>(padding.seed),
                                         static_cast<std::uint32_t>(padding.seed >> 32));
  return padding.shortfall_min + static_cast<std::int64_t>(draw.word[0] % span);
}

bool random_padding_valid(const PaddingSpec& padding) {
  return 0 <= padding.shortfall_min && padding.shortfall_min <= padding.shortfall_max;
}

}  // namespace

std::int64_t Problem::length_q(std::int64_t b) const {
  if (!lengths_q.empty()) return lengths_q[static_cast<std::size_t>(b)];
  if (padding.kind == PaddingSpec::Kind::random && random_padding_valid(padding)) {
    return std::max<std::int64_t>(0, seqlen_q - random_shortfall(padding, b));
  }
  return seqlen_q;
}

std::int64_t Problem::length_k(std::int64_t b) const {
  if (!lengths_k.empty()) return lengths_k[static_cast<std::size_t>(b)];
  if (padding.kind == PaddingSpec::Kind::random && random_padding_valid(padding)) {
    return std::max<std::int64_t>(0, seqlen_k - random_shortfall(padding, b));
  }
  return seqlen_k;
}

void resolve_lengths(Problem& problem) {
  if (problem.batch < 1 || problem.padding.kind == PaddingSpec::Kind::explicit_lengths) return;
  const auto batch = static_cast<std::size_t>(problem.batch);
  std::vector<std::int64_t> lengths_q(batch), lengths_k(batch);
  problem.lengths_q.clear();
  problem.lengths_k.clear();
  for (std::size_t b = 0; b < batch; ++b) {
    lengths_q[b] = problem.length_q(static_cast<std::int64_t>(b));
    lengths_k[b] = problem.length_k(static_cast<std::int64_t>(b));
  }
  problem.lengths_q = std::move(lengths_q);
  problem.lengths_k = std::move(lengths_k);
}

std::vector<LengthGroup> length_groups(const Problem& p) {
  if (p.batch < 1) return {};
  const bool uniform = p.lengths_q.empty() && p.lengths_k.empty() && p.padding.kind != PaddingSpec::Kind::random;
  if (uniform) return {LengthGroup{p.seqlen_q, p.seqlen_k, p.batch}};
  std::vector<std::pair<std::int64_t, std::int64_t>> lengths(static_cast<std::size_t>(p.batch));
  for (std::int64_t b = 0; b < p.batch; ++b) lengths[static_cast<std::size_t>(b)] = {p.length_q(b), p.length_k(b)};
  std::sort(lengths.begin(), lengths.end());
  std::vector<LengthGroup> groups;
  for (const auto& [length_q, length_k] : lengths) {
    if (groups.empty() || groups.back().length_q != length_q || groups.back().length_k != length_k) {
      groups.push_back(LengthGroup{length_q, length_k, 0});
    }
    ++groups.back().count;
  }
  return groups;
}

namespace {

__extension__ using WideCount = unsigned __int128;  // exact products of the documented limits (< 2^84)

std::string decimal(WideCount value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return digits;
}

// "1125899906842624 (2^50)"; the power only when the value is one.
std::string count_text(WideCount value) {
  std::string text = decimal(value);
  if (value != 0 && (value & (value - 1)) == 0) {
    int exponent = 0;
    while ((value >>= 1) != 0) ++exponent;
    text += " (2^" + std::to_string(exponent) + ")";
  }
  return text;
}

WideCount product(std::initializer_list<std::int64_t> factors) {
  WideCount result = 1;
  for (const std::int64_t factor : factors) result *= static_cast<WideCount>(factor);
  return result;
}

}  // namespace

std::vector<ProblemIssue> check_problem(const Problem& p) {
  std::vector<ProblemIssue> issues;
  const auto require_range = [&](const char* key, std::int64_t value, std::int64_t limit) {
    if (value < 1) {
      issues.push_back({key, "must be at least 1, got " + std::to_string(value)});
    } else if (value > limit) {
      issues.push_back({key, "must be at most " + count_text(static_cast<WideCount>(limit)) + ", got " +
                                 std::to_string(value)});
    }
  };
  require_range("batch", p.batch, kMaxBatch);
  require_range("heads", p.heads, kMaxHeads);
  require_range("kv_heads", p.kv_heads, kMaxHeads);
  require_range("seqlen_q", p.seqlen_q, kMaxSeqlen);
  require_range("seqlen_k", p.seqlen_k, kMaxSeqlen);
  require_range("head_dim", p.head_dim, kMaxHeadDim);
  if (p.tile.block_q < 0 || p.tile.block_k < 0) {
    issues.push_back({"tile", "block sizes must be positive (or 0 for the default)"});
  } else if (p.tile.block_q > kMaxBlock || p.tile.block_k > kMaxBlock) {
    issues.push_back({"tile", "block sizes must be at most " + count_text(kMaxBlock)});
  }
  if (!issues.empty()) return issues;

  if (p.heads % p.kv_heads != 0) {
    issues.push_back({"kv_heads", "must divide heads (" + std::to_string(p.heads) + "), got " +
                                      std::to_string(p.kv_heads)});
  }
  const struct {
    const char* what;
    WideCount count;
    int limit_log2;
  } sizes[] = {
      {"Q and O (batch x seqlen_q x heads x head_dim)", product({p.batch, p.seqlen_q, p.heads, p.head_dim}),
       kMaxTensorElementsLog2},
      {"K and V (batch x seqlen_k x kv_heads x head_dim)", product({p.batch, p.seqlen_k, p.kv_heads, p.head_dim}),
       kMaxTensorElementsLog2},
      {"the score matrices (batch x heads x seqlen_q x seqlen_k)", product({p.batch, p.heads, p.seqlen_q, p.seqlen_k}),
       kMaxScoreElementsLog2},
  };
  for (const auto& size : sizes) {
    const WideCount limit = WideCount{1} << size.limit_log2;
    if (size.count > limit) {
      issues.push_back({"batch", std::string("the problem is impossibly large: ") + size.what + " would hold " +
                                     count_text(size.count) + " elements, more than the " + count_text(limit) +
                                     " allowed"});
    }
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
  if (p.padding.kind == PaddingSpec::Kind::random && !random_padding_valid(p.padding)) {
    issues.push_back({"padding.shortfall", "needs 0 <= min <= max"});
  }
  // Explicit lengths: one per batch element, each within its side's length;
  // the first one out of range is named, with how many others are.
  const auto check_lengths = [&](const char* key, const std::vector<std::int64_t>& lengths, std::int64_t full) {
    if (static_cast<std::int64_t>(lengths.size()) != p.batch) {
      issues.push_back({key, "needs one length per batch element (" + std::to_string(p.batch) + "), got " +
                                 std::to_string(lengths.size())});
      return;
    }
    std::size_t first_bad = lengths.size(), bad = 0;
    for (std::size_t b = 0; b < lengths.size(); ++b) {
      if (lengths[b] >= 0 && lengths[b] <= full) continue;
      if (bad++ == 0) first_bad = b;
    }
    if (bad == 0) return;
    issues.push_back({std::string(key) + "[" + std::to_string(first_bad) + "]",
                      "must be in [0, " + std::to_string(full) + "], got " + std::to_string(lengths[first_bad]) +
                          (bad > 1 ? " (and " + std::to_string(bad - 1) + " more lengths out of range)" : "")});
  };
  if (p.padding.kind == PaddingSpec::Kind::explicit_lengths || !p.lengths_q.empty() || !p.lengths_k.empty()) {
    check_lengths("padding.lengths_q", p.lengths_q, p.seqlen_q);
    check_lengths("padding.lengths_k", p.lengths_k, p.seqlen_k);
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
  std::int64_t pairs = 0;
  for (const LengthGroup& group : length_groups(p)) {
    pairs += group.count * visible_pair_count(p.mask, group.length_q, group.length_k);
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
  // The tile hints, when one is given; an unset size is written "default" (each
  // CPU tiled implementation's own).
  if (p.tile.block_q > 0 || p.tile.block_k > 0) {
    const auto size = [](std::int64_t hint) { return hint > 0 ? std::to_string(hint) : std::string("default"); };
    key << "-tile(" << size(p.tile.block_q) << "x" << size(p.tile.block_k) << ")";
  }
  return key.str();
}

}  // namespace attnbench
