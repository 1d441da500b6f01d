#include "cpu_vector.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace attnbench::cpu_vector {

// One version of the function per instruction set, chosen when the program loads.
#define ATTNBENCH_VECTOR_VERSIONS __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace {

// Philox blocks generated side by side.
constexpr std::int64_t kLanes = 16;

// fp16 -> fp32 without branches: the half's exponent and mantissa shifted into
// place make an fp32 of 2^-112 times its value (a subnormal half becomes an
// exact fp32 subnormal), which one multiplication rescales; infinities and NaNs
// keep their payload.
inline float half_bits_to_float(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t magnitude = half & 0x7fffu;
  const float scaled = std::bit_cast<float>(magnitude << 13) * 0x1p112f;
  const std::uint32_t special = 0x7f800000u | ((magnitude & 0x3ffu) << 13);
  const std::uint32_t bits = magnitude >= 0x7c00u ? special : std::bit_cast<std::uint32_t>(scaled);
  return std::bit_cast<float>(bits | sign);
}

ATTNBENCH_VECTOR_VERSIONS
void halves_to_floats(const std::uint16_t* in, std::int64_t stride, std::int64_t rows, std::int64_t cols, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (std::int64_t c = 0; c < cols; ++c) out[r * cols + c] = half_bits_to_float(in[r * stride + c]);
  }
}

ATTNBENCH_VECTOR_VERSIONS
void bfloat16s_to_floats(const std::uint16_t* in, std::int64_t stride, std::int64_t rows, std::int64_t cols,
                         float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (std::int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] = std::bit_cast<float>(static_cast<std::uint32_t>(in[r * stride + c]) << 16);
    }
  }
}

ATTNBENCH_VECTOR_VERSIONS
void doubles_to_floats(const double* in, std::int64_t stride, std::int64_t rows, std::int64_t cols, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (std::int64_t c = 0; c < cols; ++c) out[r * cols + c] = static_cast<float>(in[r * stride + c]);
  }
}

// words[4 * lane + w] = word w of the dropout block of key group
// first_group + lane, for kLanes consecutive key groups of one row: the
// rounds of philox4x32_10 (kernels/common/philox.hpp) on all lanes at once.
ATTNBENCH_VECTOR_VERSIONS
void dropout_word_lanes(const DropoutRng& rng, std::uint32_t batch, std::uint32_t head, std::uint32_t row,
                        std::uint32_t first_group, std::uint32_t* words) {
  using namespace philox_detail;
  std::uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (std::int64_t lane = 0; lane < kLanes; ++lane) {
    c0[lane] = first_group + static_cast<std::uint32_t>(lane);
    c1[lane] = row;
    c2[lane] = batch * rng.heads + head;
    c3[lane] = rng.offset;
  }
  std::uint32_t key0 = rng.key0, key1 = rng.key1;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
#pragma omp simd
    for (std::int64_t lane = 0; lane < kLanes; ++lane) {
      const std::uint64_t product0 = static_cast<std::uint64_t>(kMultiplier0) * c0[lane];
      const std::uint64_t product1 = static_cast<std::uint64_t>(kMultiplier1) * c2[lane];
      const auto next0 = static_cast<std::uint32_t>(product1 >> 32) ^ c1[lane] ^ key0;
      const auto next2 = static_cast<std::uint32_t>(product0 >> 32) ^ c3[lane] ^ key1;
      c1[lane] = static_cast<std::uint32_t>(product1);
      c3[lane] = static_cast<std::uint32_t>(product0);
      c0[lane] = next0;
      c2[lane] = next2;
    }
  }
  for (std::int64_t lane = 0; lane < kLanes; ++lane) {
    words[4 * lane] = c0[lane];
    words[4 * lane + 1] = c1[lane];
    words[4 * lane + 2] = c2[lane];
    words[4 * lane + 3] = c3[lane];
  }
}

ATTNBENCH_VECTOR_VERSIONS
void factors_from_words(const std::uint32_t* words, std::int64_t count, std::uint32_t threshold, float keep_scale,
                        float* factors) {
#pragma omp simd
  for (std::int64_t c = 0; c < count; ++c) factors[c] = words[c] >= threshold ? keep_scale : 0.0f;
}

}  // namespace

ATTNBENCH_VECTOR_VERSIONS
void exp_scaled(float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, double scale,
                const double* shifts, float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    const double shift = shifts[r];
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t c = 0; c < cols; ++c) {
      const double e = exponential_unrounded(scale * static_cast<double>(row[c]) - shift);
      row[c] = static_cast<float>(e);
      sum += e;
    }
    if (sums != nullptr) sums[r] = static_cast<float>(sum);
  }
}

ATTNBENCH_VECTOR_VERSIONS
void row_maxima(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, float* maxima) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * ld;
    float largest = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : largest)
    for (std::int64_t c = 0; c < cols; ++c) largest = row[c] > largest ? row[c] : largest;
    maxima[r] = largest;
  }
}

void load_floats(const void* data, ElementType type, std::size_t first, std::int64_t stride, std::int64_t rows,
                 std::int64_t cols, float* out) {
  switch (type) {
    case ElementType::f16:
      halves_to_floats(static_cast<const std::uint16_t*>(data) + first, stride, rows, cols, out);
      return;
    case ElementType::bf16:
      bfloat16s_to_floats(static_cast<const std::uint16_t*>(data) + first, stride, rows, cols, out);
      return;
    case ElementType::f32:
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = static_cast<const float*>(data) + first + r * stride;
        std::copy(row, row + cols, out + r * cols);
      }
      return;
    case ElementType::f64:
      doubles_to_floats(static_cast<const double*>(data) + first, stride, rows, cols, out);
      return;
  }
}

void dropout_factors(const DropoutRng& rng, std::uint32_t b, std::uint32_t h, std::uint32_t row,
                     std::int64_t key_begin, std::int64_t count, float* factors) {
  if (!rng.enabled) {
    std::fill(factors, factors + count, 1.0f);
    return;
  }
  std::uint32_t words[4 * kLanes];
  std::int64_t c = 0;
  while (c < count) {
    const std::int64_t key = key_begin + c;
    const std::int64_t first_group = key / 4;
    dropout_word_lanes(rng, b, h, row, static_cast<std::uint32_t>(first_group), words);
    // words[k] is the word of key 4 * first_group + k.
    const std::int64_t skip = key - 4 * first_group;
    const std::int64_t take = std::min(count - c, 4 * kLanes - skip);
    factors_from_words(words + skip, take, rng.threshold, rng.keep_scale, factors + c);
    c += take;
  }
}

}  // namespace attnbench::cpu_vector
