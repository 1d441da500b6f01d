// The vectorized loops of the CPU implementations (kernels/cpu_vector.hpp)
// against their scalar definitions: the exponential within 0.51 ulp of e^x
// over the whole float range (subnormal results included), the dropout factors
// equal to the RNG contract element by element whatever the first key's
// alignment, and every fp16 and bf16 bit pattern converted as harness/dtype.hpp
// converts it. The loops run in whichever version (AVX-512, AVX2, baseline) this
// CPU selects.
#include "kernels/cpu_vector.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "harness/dtype.hpp"
#include "kernels/common/dropout.hpp"

namespace attnbench {
namespace {

// |got - e^x| in units in the last place of e^x as an fp32 (the subnormal
// spacing below the smallest normal).
double ulp_error(float got, float x) {
  const double exact = std::exp(static_cast<double>(x));
  if (std::isinf(got)) return exact > std::numeric_limits<float>::max() ? 0.0 : std::numeric_limits<double>::infinity();
  int exponent = 0;
  std::frexp(exact, &exponent);
  const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::abs(static_cast<double>(got) - exact) / ulp;
}

// x = e^x, as one row.
void exp_row(std::vector<float>& x) {
  const double zero = 0.0;
  const auto count = static_cast<std::int64_t>(x.size());
  cpu_vector::exp_scaled(x.data(), 1, count, count, 1.0, &zero, nullptr);
}

// Every 613th float of [-104, 89] (about two million, both signs, every binade),
// through the vector loop.
TEST(CpuVector, ExponentialIsWithinHalfAnUlpAndABitOverTheFloatRange) {
  std::vector<float> x;
  for (std::uint32_t bits = 0; bits < 0x7f800000u; bits += 613) {
    const float magnitude = std::bit_cast<float>(bits);
    if (magnitude <= 89.0f) x.push_back(magnitude);
    if (magnitude <= 104.0f) x.push_back(-magnitude);
  }
  std::vector<float> y = x;
  exp_row(y);
  double worst = 0.0;
  float worst_at = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double error = ulp_error(y[i], x[i]);
    if (error > worst) {
      worst = error;
      worst_at = x[i];
    }
  }
  EXPECT_LE(worst, 0.51) << "at x = " << worst_at;
  EXPECT_GT(x.size(), 1000000u);
}

TEST(CpuVector, ExponentialEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-inf, 0.0f, -0.0f, 88.72f, 88.73f, 1000.0f, -150.0f, -1e30f};
  exp_row(x);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 1.0f);
  EXPECT_EQ(x[2], 1.0f);
  EXPECT_TRUE(std::isfinite(x[3]));
  EXPECT_EQ(x[4], inf);
  EXPECT_EQ(x[5], inf);
  EXPECT_EQ(x[6], 0.0f);
  EXPECT_EQ(x[7], 0.0f);
  // Normal and subnormal results, rounded once from the exact value.
  const std::vector<float> small = {-87.0f, -87.5f, -100.0f, -103.9f};
  std::vector<float> y = small;
  exp_row(y);
  for (std::size_t i = 0; i < small.size(); ++i) {
    EXPECT_EQ(y[i], static_cast<float>(std::exp(static_cast<double>(small[i])))) << small[i];
    EXPECT_GT(y[i], 0.0f) << small[i];
  }
}

// |got - e^x| in units in the last place of e^x as an fp32, for an fp64 x.
double ulp_error_of(float got, double x) {
  const double exact = std::exp(x);
  int exponent = 0;
  std::frexp(exact, &exponent);
  return std::abs(static_cast<double>(got) - exact) / std::ldexp(1.0, std::max(exponent - 24, -149));
}

// Three rows of a tile with padding between them: each row scaled and taken
// relative to its own shift, the exponent formed in fp64 (a shift that is no
// fp32 is honoured), its sum returned, the padding untouched.
TEST(CpuVector, ExpScaledWorksRowByRowAndReturnsTheSums) {
  const std::int64_t rows = 3, cols = 77, ld = 80;
  const double scale = 0.125 / 3.0;
  std::vector<float> x(static_cast<std::size_t>(rows * ld), 123.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) x[static_cast<std::size_t>(r * ld + c)] = -8.9f * static_cast<float>(c) + static_cast<float>(r);
  }
  const std::vector<float> before = x;
  const double shifts[rows] = {0.0, scale, 2.5 + 1e-12};
  float sums[rows] = {};
  cpu_vector::exp_scaled(x.data(), rows, cols, ld, scale, shifts, sums);
  for (std::int64_t r = 0; r < rows; ++r) {
    double exact_sum = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto e = static_cast<std::size_t>(r * ld + c);
      EXPECT_LE(ulp_error_of(x[e], scale * static_cast<double>(before[e]) - shifts[r]), 0.51) << r << "," << c;
      exact_sum += std::exp(scale * static_cast<double>(before[e]) - shifts[r]);
    }
    EXPECT_NEAR(sums[r], exact_sum, 1e-7 * exact_sum) << r;
    for (std::int64_t c = cols; c < ld; ++c) EXPECT_EQ(x[static_cast<std::size_t>(r * ld + c)], 123.0f);
  }
  EXPECT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[static_cast<std::size_t>(ld)], 1.0f);  // scale * 1 - scale = 0
}

TEST(CpuVector, RowMaximaOfEveryLength) {
  for (const std::int64_t count : {0, 1, 2, 15, 16, 17, 63, 64, 65, 1000}) {
    std::vector<float> x(static_cast<std::size_t>(2 * count + 1));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 1.7f);
    float maxima[2] = {};
    cpu_vector::row_maxima(x.data(), 2, count, count + 1, maxima);
    for (std::int64_t r = 0; r < 2; ++r) {
      float expected = -std::numeric_limits<float>::infinity();
      for (std::int64_t c = 0; c < count; ++c) expected = std::max(expected, x[static_cast<std::size_t>(r * (count + 1) + c)]);
      EXPECT_EQ(maxima[r], expected) << count << " row " << r;
    }
  }
  const float all_masked[3] = {-INFINITY, -INFINITY, -INFINITY};
  float maximum = 0.0f;
  cpu_vector::row_maxima(all_masked, 1, 3, 3, &maximum);
  EXPECT_EQ(maximum, -std::numeric_limits<float>::infinity());
}

TEST(CpuVector, EveryHalfAndBfloat16BitPatternConvertsAsTheScalarDefinition) {
  std::vector<std::uint16_t> patterns(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) patterns[i] = static_cast<std::uint16_t>(i);
  std::vector<float> converted(65536);
  cpu_vector::load_floats(patterns.data(), ElementType::f16, 0, 256, 256, 256, converted.data());
  for (std::uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(converted[i]),
              std::bit_cast<std::uint32_t>(half_to_float(static_cast<std::uint16_t>(i))))
        << "fp16 0x" << std::hex << i;
  }
  cpu_vector::load_floats(patterns.data(), ElementType::bf16, 0, 256, 256, 256, converted.data());
  for (std::uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(converted[i]),
              std::bit_cast<std::uint32_t>(bfloat16_to_float(static_cast<std::uint16_t>(i))))
        << "bf16 0x" << std::hex << i;
  }
}

// Rows of every type from an offset with a stride: the elements between rows
// are skipped.
TEST(CpuVector, RowsLoadFromAnOffsetWithAStride) {
  const std::vector<double> doubles = {9.0, 1.0, 1.0 + 1e-12, 9.0, -3.5, 0.1, 9.0};
  std::vector<float> out(4);
  cpu_vector::load_floats(doubles.data(), ElementType::f64, 1, 3, 2, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.0f, static_cast<float>(1.0 + 1e-12), -3.5f, 0.1f}));
  const std::vector<float> floats = {0.5f, -2.0f, 7.25f, 8.0f, 1.5f};
  cpu_vector::load_floats(floats.data(), ElementType::f32, 1, 2, 2, 1, out.data());
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[1], 8.0f);
  const std::vector<std::uint16_t> halves = {0x3c00, 0x4000, 0x7bff, 0xc000};  // 1, 2, 65504, -2
  cpu_vector::load_floats(halves.data(), ElementType::f16, 0, 2, 2, 1, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 65504.0f);
  const std::vector<std::uint16_t> bfloats = {0x3f80, 0x4000, 0xc040};  // 1, 2, -3
  cpu_vector::load_floats(bfloats.data(), ElementType::bf16, 1, 1, 2, 1, out.data());
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], -3.0f);
}

// The factors against dropout_keeps, the contract's definition, over row
// segments that start and end at every alignment of the four-key groups and
// span several sixteen-block batches.
TEST(CpuVector, DropoutFactorsFollowTheRngContractElementByElement) {
  for (const double probability : {0.17, 0.5, 0.999}) {
    const DropoutRng rng = make_dropout_rng(probability, 0x1234'5678'9abc'def0ULL, 7, 6);
    std::int64_t dropped = 0, checked = 0;
    for (const std::int64_t key_begin : {0, 1, 2, 3, 5, 63, 64, 65, 1001}) {
      for (const std::int64_t count : {1, 3, 4, 17, 64, 65, 130, 300}) {
        std::vector<float> factors(static_cast<std::size_t>(count), -1.0f);
        cpu_vector::dropout_factors(rng, 3, 5, 41, key_begin, count, factors.data());
        for (std::int64_t c = 0; c < count; ++c) {
          const bool keeps = dropout_keeps(rng, 3, 5, 41, static_cast<std::uint32_t>(key_begin + c));
          ASSERT_EQ(factors[static_cast<std::size_t>(c)], keeps ? rng.keep_scale : 0.0f)
              << "p " << probability << " key " << key_begin + c;
          dropped += keeps ? 0 : 1;
          ++checked;
        }
      }
    }
    EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(checked), probability, 0.05);
  }
}

TEST(CpuVector, WithoutDropoutEveryFactorIsOne) {
  const DropoutRng off = make_dropout_rng(0.0, 1, 0, 1);
  std::vector<float> factors(70, -1.0f);
  cpu_vector::dropout_factors(off, 0, 0, 0, 3, 70, factors.data());
  for (const float factor : factors) EXPECT_EQ(factor, 1.0f);
}

}  // namespace
}  // namespace attnbench
