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
  cpu_vector::exp_shifted(y.data(), static_cast<std::int64_t>(y.size()), 0.0f);
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
  cpu_vector::exp_shifted(x.data(), static_cast<std::int64_t>(x.size()), 0.0f);
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
  cpu_vector::exp_shifted(y.data(), static_cast<std::int64_t>(y.size()), 0.0f);
  for (std::size_t i = 0; i < small.size(); ++i) {
    EXPECT_EQ(y[i], static_cast<float>(std::exp(static_cast<double>(small[i])))) << small[i];
    EXPECT_GT(y[i], 0.0f) << small[i];
  }
}

TEST(CpuVector, ExpShiftedSubtractsTheShiftAndReturnsTheSum) {
  std::vector<float> x(77);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -0.37f * static_cast<float>(i) + 3.0f;
  const std::vector<float> before = x;
  const float sum = cpu_vector::exp_shifted(x.data(), static_cast<std::int64_t>(x.size()), 3.0f);
  double exact_sum = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(ulp_error(x[i], before[i] - 3.0f), 0.51) << i;
    exact_sum += x[i];
  }
  EXPECT_NEAR(sum, exact_sum, 1e-6 * exact_sum);
  EXPECT_EQ(x[0], 1.0f);
}

TEST(CpuVector, MaximumOfEveryLength) {
  for (const std::int64_t count : {0, 1, 2, 15, 16, 17, 63, 64, 65, 1000}) {
    std::vector<float> x(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) x[static_cast<std::size_t>(i)] = std::sin(static_cast<float>(i) * 1.7f);
    float expected = -std::numeric_limits<float>::infinity();
    for (const float value : x) expected = std::max(expected, value);
    EXPECT_EQ(cpu_vector::maximum(x.data(), count), expected) << count;
  }
  const float all_masked[3] = {-INFINITY, -INFINITY, -INFINITY};
  EXPECT_EQ(cpu_vector::maximum(all_masked, 3), -std::numeric_limits<float>::infinity());
}

TEST(CpuVector, EveryHalfAndBfloat16BitPatternConvertsAsTheScalarDefinition) {
  std::vector<std::uint16_t> patterns(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) patterns[i] = static_cast<std::uint16_t>(i);
  std::vector<float> converted(65536);
  cpu_vector::load_floats(patterns.data(), ElementType::f16, 0, 65536, converted.data());
  for (std::uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(converted[i]),
              std::bit_cast<std::uint32_t>(half_to_float(static_cast<std::uint16_t>(i))))
        << "fp16 0x" << std::hex << i;
  }
  cpu_vector::load_floats(patterns.data(), ElementType::bf16, 0, 65536, converted.data());
  for (std::uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(converted[i]),
              std::bit_cast<std::uint32_t>(bfloat16_to_float(static_cast<std::uint16_t>(i))))
        << "bf16 0x" << std::hex << i;
  }
}

TEST(CpuVector, WideTypesLoadFromAnOffset) {
  const std::vector<double> doubles = {1.0, 1.0 + 1e-12, -3.5, 1e300, 0.1};
  std::vector<float> out(4);
  cpu_vector::load_floats(doubles.data(), ElementType::f64, 1, 4, out.data());
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out[i], static_cast<float>(doubles[i + 1])) << i;
  const std::vector<float> floats = {0.5f, -2.0f, 7.25f};
  cpu_vector::load_floats(floats.data(), ElementType::f32, 2, 1, out.data());
  EXPECT_EQ(out[0], 7.25f);
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
