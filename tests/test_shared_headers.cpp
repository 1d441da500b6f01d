// The logic shared by host and device (kernels/common/): Philox, the dropout
// keying contract, the mask predicates and the online-softmax step, plus the
// host's fp16/bf16 conversions and input generation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "harness/dtype.hpp"
#include "kernels/common/dropout.hpp"
#include "kernels/common/input_distribution.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/common/philox.hpp"

namespace attnbench {
namespace {

// ---- Philox4x32-10: the known-answer vectors of docs/design.md §2.3 (Random123) ----

TEST(Philox, KnownAnswerZeroCounterZeroKey) {
  const PhiloxBlock out = philox4x32_10(PhiloxBlock{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(out.word[0], 0x6627e8d5u);
  EXPECT_EQ(out.word[1], 0xe169c58du);
  EXPECT_EQ(out.word[2], 0xbc57ac4cu);
  EXPECT_EQ(out.word[3], 0x9b00dbd8u);
}

TEST(Philox, KnownAnswerAllOnes) {
  const PhiloxBlock out =
      philox4x32_10(PhiloxBlock{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(out.word[0], 0x408f276du);
  EXPECT_EQ(out.word[1], 0x41c83b0eu);
  EXPECT_EQ(out.word[2], 0xa20bc7c6u);
  EXPECT_EQ(out.word[3], 0x6d5451fdu);
}

// ---- Dropout keying ----

TEST(Dropout, ThresholdIsFloorOfPTimes2To32Saturated) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(0.5), 0x80000000u);
  EXPECT_EQ(dropout_threshold(0.1), 429496729u);  // floor(0.1 * 2^32) = 429496729.6 -> 429496729
  EXPECT_EQ(dropout_threshold(1.0), 0xffffffffu);
  EXPECT_EQ(dropout_threshold(0.9999999999), 0xffffffffu);
}

TEST(Dropout, KeyAndCounterFollowTheContract) {
  const std::uint64_t seed = 0x0123456789abcdefull;
  const DropoutRng rng = make_dropout_rng(0.3, seed, 17, 6);
  EXPECT_EQ(rng.key0, 0x89abcdefu);
  EXPECT_EQ(rng.key1, 0x01234567u);
  EXPECT_TRUE(rng.enabled);
  EXPECT_FLOAT_EQ(rng.keep_scale, static_cast<float>(1.0 / 0.7));
  // Element (b=2, h=5, i=9, j=14): counter {14/4, 9, 2*6+5, offset}, word 14 % 4.
  const PhiloxBlock expected = philox4x32_10(PhiloxBlock{{3, 9, 17, 17}}, 0x89abcdefu, 0x01234567u);
  const PhiloxBlock words = dropout_words(rng, 2, 5, 9, 3);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(words.word[w], expected.word[w]);
  EXPECT_EQ(dropout_keeps(rng, 2, 5, 9, 14), expected.word[2] >= rng.threshold);
}

TEST(Dropout, ZeroProbabilityKeepsEverythingUnscaled) {
  const DropoutRng rng = make_dropout_rng(0.0, 99, 0, 4);
  EXPECT_FALSE(rng.enabled);
  EXPECT_EQ(rng.keep_scale, 1.0f);
  for (std::uint32_t j = 0; j < 64; ++j) EXPECT_TRUE(dropout_keeps(rng, 0, 1, 2, j));
}

TEST(Dropout, KeptFractionMatchesProbability) {
  for (double p : {0.1, 0.5, 0.9}) {
    const DropoutRng rng = make_dropout_rng(p, 7, 0, 2);
    const int n = 200000;
    int kept = 0;
    for (int e = 0; e < n; ++e) kept += dropout_keeps(rng, 0, 1, static_cast<std::uint32_t>(e / 512), e % 512) ? 1 : 0;
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(static_cast<double>(kept) / n, 1 - p, 5 * sigma) << "p = " << p;
  }
}

// ---- Mask predicates ----

struct MaskCase {
  MaskSpec mask;
  std::int64_t len_q, len_k;
};

std::vector<MaskCase> mask_cases() {
  std::vector<MaskCase> cases;
  const std::int64_t lengths[][2] = {{1, 1}, {1, 9}, {9, 1}, {7, 7}, {13, 29}, {29, 13}, {0, 5}, {5, 0}, {16, 16}};
  for (bool causal : {false, true}) {
    for (bool bottom_right : {false, true}) {
      for (std::int64_t left : {-1, 0, 3, 40}) {
        for (std::int64_t right : {-1, 0, 2}) {
          for (const auto& l : lengths) {
            cases.push_back({MaskSpec{causal, bottom_right, left, right}, l[0], l[1]});
          }
        }
      }
    }
  }
  return cases;
}

// The definition of docs/design.md §2.1, written out independently of mask.hpp.
bool visible_by_definition(const MaskCase& c, std::int64_t i, std::int64_t j) {
  if (i >= c.len_q || j >= c.len_k) return false;
  const std::int64_t shift = c.mask.bottom_right ? c.len_k - c.len_q : 0;
  bool visible = true;
  if (c.mask.causal) visible = visible && j <= i + shift;
  if (c.mask.window_left >= 0) visible = visible && i + shift - c.mask.window_left <= j;
  if (c.mask.window_right >= 0) visible = visible && j <= i + shift + c.mask.window_right;
  return visible;
}

TEST(Mask, PredicateMatchesTheDefinition) {
  for (const MaskCase& c : mask_cases()) {
    for (std::int64_t i = 0; i < 32; ++i) {
      for (std::int64_t j = 0; j < 32; ++j) {
        ASSERT_EQ(is_visible(c.mask, i, j, c.len_q, c.len_k), visible_by_definition(c, i, j))
            << "i=" << i << " j=" << j << " Lq=" << c.len_q << " Lk=" << c.len_k << " causal=" << c.mask.causal
            << " br=" << c.mask.bottom_right << " window=(" << c.mask.window_left << "," << c.mask.window_right << ")";
      }
    }
  }
}

TEST(Mask, VisibleKeysIsExactlyTheVisibleInterval) {
  for (const MaskCase& c : mask_cases()) {
    for (std::int64_t i = 0; i < 32; ++i) {
      const KeyRange range = visible_keys(c.mask, i, c.len_q, c.len_k);
      for (std::int64_t j = -2; j < 34; ++j) {
        const bool in_range = j >= range.begin && j < range.end;
        ASSERT_EQ(in_range, visible_by_definition(c, i, j) && j >= 0) << "i=" << i << " j=" << j;
      }
    }
  }
}

TEST(Mask, KeyBoundCoversEveryVisibleKeyAndIsEmptyOnlyForDeadBlocks) {
  for (const MaskCase& c : mask_cases()) {
    for (std::int64_t block : {1, 3, 4, 16}) {
      for (std::int64_t row_begin = 0; row_begin < std::max<std::int64_t>(c.len_q, 1); row_begin += block) {
        const std::int64_t row_end = row_begin + block;
        const KeyRange bound = visible_key_bound(c.mask, row_begin, row_end, c.len_q, c.len_k);
        bool any_visible = false;
        std::int64_t lowest = std::numeric_limits<std::int64_t>::max(), highest = -1;
        for (std::int64_t i = row_begin; i < row_end; ++i) {
          for (std::int64_t j = 0; j < c.len_k; ++j) {
            if (!visible_by_definition(c, i, j)) continue;
            any_visible = true;
            lowest = std::min(lowest, j);
            highest = std::max(highest, j);
          }
        }
        ASSERT_EQ(bound.empty(), !any_visible) << "rows [" << row_begin << "," << row_end << ")";
        if (any_visible) {
          // The bound is tight: it starts at the first visible key and ends after the last.
          EXPECT_EQ(bound.begin, lowest);
          EXPECT_EQ(bound.end, highest + 1);
        }
      }
    }
  }
}

TEST(Mask, FullyVisibleTilesHaveNoMaskedElement) {
  for (const MaskCase& c : mask_cases()) {
    for (std::int64_t rb = 0; rb < c.len_q; rb += 3) {
      for (std::int64_t kb = 0; kb < c.len_k; kb += 2) {
        const std::int64_t re = std::min(rb + 3, c.len_q), ke = std::min(kb + 2, c.len_k);
        bool all = true;
        for (std::int64_t i = rb; i < re; ++i) {
          for (std::int64_t j = kb; j < ke; ++j) all = all && visible_by_definition(c, i, j);
        }
        ASSERT_EQ(tile_fully_visible(c.mask, rb, re, kb, ke, c.len_q, c.len_k), all);
      }
    }
  }
}

// ---- Online softmax ----

TEST(OnlineSoftmax, TileByTileEqualsDirectSoftmax) {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0, 4);
  std::vector<double> scores(57), values(57);
  for (auto& s : scores) s = normal(rng);
  for (auto& v : values) v = normal(rng);
  scores[5] = -std::numeric_limits<double>::infinity();  // a masked key

  double max = -std::numeric_limits<double>::infinity();
  for (double s : scores) max = std::max(max, s);
  double sum = 0, weighted = 0;
  for (std::size_t j = 0; j < scores.size(); ++j) {
    sum += std::exp(scores[j] - max);
    weighted += std::exp(scores[j] - max) * values[j];
  }

  for (std::size_t tile : {1u, 4u, 16u, 57u}) {
    SoftmaxRowState<double> state;
    double accumulator = 0;
    for (std::size_t start = 0; start < scores.size(); start += tile) {
      const std::size_t end = std::min(start + tile, scores.size());
      double tile_max = -std::numeric_limits<double>::infinity();
      for (std::size_t j = start; j < end; ++j) tile_max = std::max(tile_max, scores[j]);
      accumulator *= online_softmax_advance(state, tile_max);
      for (std::size_t j = start; j < end; ++j) {
        const double weight = std::exp(scores[j] - exp_reference(state.max));
        state.sum += weight;
        accumulator += weight * values[j];
      }
    }
    EXPECT_NEAR(accumulator / state.sum, weighted / sum, 1e-12) << "tile " << tile;
    EXPECT_NEAR(online_softmax_lse(state), max + std::log(sum), 1e-12);
  }
}

TEST(OnlineSoftmax, MaskedPrefixNeverProducesNaN) {
  SoftmaxRowState<float> state;
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  float accumulator = 0;
  accumulator *= online_softmax_advance(state, minus_infinity);  // a wholly masked tile
  EXPECT_EQ(state.max, minus_infinity);
  EXPECT_EQ(state.sum, 0.0f);
  EXPECT_EQ(std::exp(minus_infinity - exp_reference(state.max)), 0.0f);
  EXPECT_EQ(online_softmax_lse(state), minus_infinity);
  const float factor = online_softmax_advance(state, 2.0f);  // the first visible key
  EXPECT_EQ(factor, 0.0f);
  EXPECT_FALSE(std::isnan(accumulator * factor));
}

TEST(OnlineSoftmax, MergeEqualsSequentialAndHandlesEmptyStates) {
  SoftmaxRowState<double> a{3.0, 2.0}, b{5.0, 1.5};
  MergeFactors<double> factors;
  const SoftmaxRowState<double> merged = online_softmax_merge(a, b, factors);
  EXPECT_DOUBLE_EQ(merged.max, 5.0);
  EXPECT_DOUBLE_EQ(factors.first, std::exp(-2.0));
  EXPECT_DOUBLE_EQ(factors.second, 1.0);
  EXPECT_DOUBLE_EQ(merged.sum, 2.0 * std::exp(-2.0) + 1.5);
  const SoftmaxRowState<double> empty;
  const SoftmaxRowState<double> with_empty = online_softmax_merge(empty, b, factors);
  EXPECT_EQ(factors.first, 0.0);
  EXPECT_DOUBLE_EQ(with_empty.sum, 1.5);
  EXPECT_EQ(online_softmax_lse(online_softmax_merge(empty, empty, factors)), -std::numeric_limits<double>::infinity());
}

TEST(OnlineSoftmax, Base2PolicyGivesTheSameProbabilities) {
  // Scores pre-multiplied by log2(e) and exponentiated in base 2 give the same weights.
  const double log2e = 1.4426950408889634;
  SoftmaxRowState<double> natural, base2;
  online_softmax_advance(natural, 1.25);
  natural.sum += std::exp(1.25 - natural.max) + std::exp(0.5 - natural.max);
  online_softmax_advance<double, ExpBase2>(base2, 1.25 * log2e);
  base2.sum += std::exp2(1.25 * log2e - base2.max) + std::exp2(0.5 * log2e - base2.max);
  const double lse_base2 = online_softmax_lse<double, ExpBase2>(base2);
  EXPECT_NEAR(lse_base2 / log2e, online_softmax_lse(natural), 1e-12);
}

// ---- fp16 / bf16 conversions ----

TEST(Conversions, EveryFiniteHalfRoundTrips) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = half_to_float(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(value))));
      continue;
    }
    ASSERT_EQ(float_to_half(value), half) << std::hex << bits;
  }
}

TEST(Conversions, HalfRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00u);
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00u);         // tie -> even (down)
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02u);         // tie -> even (up)
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048 + 1e-6f), 0x3c01u); // above the tie
  EXPECT_EQ(float_to_half(65504.0f), 0x7bffu);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00u);                    // overflows to infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001u);       // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000u);       // tie -> even (zero)
  EXPECT_EQ(float_to_half(-2.0f), 0xc000u);
}

TEST(Conversions, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80u);
  EXPECT_EQ(float_to_bfloat16(bits_to_float(0x3f808000u)), 0x3f80u);  // tie -> even
  EXPECT_EQ(float_to_bfloat16(bits_to_float(0x3f818000u)), 0x3f82u);  // tie -> even
  EXPECT_EQ(float_to_bfloat16(bits_to_float(0x3f808001u)), 0x3f81u);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  for (std::uint32_t bits = 0; bits < 0x10000u; bits += 7) {
    const float value = bfloat16_to_float(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_bfloat16(value), bits);
  }
}

TEST(Conversions, PoisonIsNaNInEveryType) {
  for (ElementType type : {ElementType::f16, ElementType::bf16, ElementType::f32, ElementType::f64}) {
    std::vector<std::byte> storage(8 * element_size(type));
    fill_with_nan(storage.data(), type, 8);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(load_as_double(storage.data(), type, i)));
  }
}

// ---- Input distribution ----

TEST(InputDistribution, NormalHasTheRequestedMomentsAndNoZeros) {
  const int n = 100000;
  double sum = 0, squares = 0;
  for (int e = 0; e < n; ++e) {
    const double x = input_normal(11, InputTensor::q, static_cast<std::uint64_t>(e), 0.5, 2.0);
    ASSERT_NE(x, 0.0);
    sum += x;
    squares += x * x;
  }
  const double mean = sum / n, variance = squares / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.03);
  EXPECT_NEAR(std::sqrt(variance), 2.0, 0.03);
}

TEST(InputDistribution, StreamsDifferByTensorAndSeedAndAreReproducible) {
  EXPECT_EQ(input_normal(1, InputTensor::k, 12345, 0, 1), input_normal(1, InputTensor::k, 12345, 0, 1));
  EXPECT_NE(input_normal(1, InputTensor::k, 12345, 0, 1), input_normal(1, InputTensor::v, 12345, 0, 1));
  EXPECT_NE(input_normal(1, InputTensor::k, 12345, 0, 1), input_normal(2, InputTensor::k, 12345, 0, 1));
  for (int e = 0; e < 1000; ++e) {
    const double u = input_uniform(5, InputTensor::d_out, static_cast<std::uint64_t>(e), -3, 7);
    ASSERT_GT(u, -3);
    ASSERT_LT(u, 7);
  }
}

}  // namespace
}  // namespace attnbench
