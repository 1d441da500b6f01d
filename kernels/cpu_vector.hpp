// The element-wise loops of the CPU implementations that set their speed once
// the matrix products go through the BLAS: the softmax's exponentials, the
// dropout mask's Philox words, and the conversion of 16-bit inputs to fp32.
//
// Each loop in cpu_vector.cpp is compiled three times (x86-64-v4 with
// AVX-512, x86-64-v3 with AVX2 and FMA, and baseline x86-64) and the loader
// picks the widest one the CPU has, so the binary runs on any x86-64 machine
// and uses the vector units of this one. Every version computes the same
// values as the scalar definitions here: the dropout factors and conversions
// bit for bit, the exponentials to within 0.51 ulp of e^x (a sum of them may
// round differently with the vector width).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "harness/dtype.hpp"
#include "common/dropout.hpp"

namespace attnbench::cpu_vector {

// e^x for an fp64 x, in fp64, meant to be rounded to fp32 once: so rounded it
// is within 0.51 ulp of the exact value over the whole float range (subnormal
// results included, as glibc's expf; e^-inf = 0, overflow gives +inf):
// x = n ln 2 + r with |r| <= ln 2 / 2, e^r by a degree-7 polynomial (its
// coefficients fitted for this, relative error 5e-11), and 2^n from the
// exponent bits. Written without branches or calls so that a loop of it
// vectorizes.
inline double exponential_unrounded(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2 = 0.6931471805599453;
  constexpr double kRoundingShift = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  // Below -150 the result rounds to 0 in fp32 and above 100 to +inf; clamping
  // keeps 2^n a normal fp64 (and maps -inf to 0).
  const double clamped = std::min(std::max(x, -150.0), 100.0);
  const double shifted = clamped * kLog2e + kRoundingShift;
  const double n = shifted - kRoundingShift;  // round(x log2 e)
  const double r = clamped - n * kLn2;
  double tail = 0.00019790613891752015;  // (e^r - 1 - r) / r^2 ~ 0.5 + r/6 + ...
  tail = tail * r + 0.0013944656553064151;
  tail = tail * r + 0.008333496524369257;
  tail = tail * r + 0.041666294950536226;
  tail = tail * r + 0.16666665871535566;
  tail = tail * r + 0.5000000067702456;
  const double e_r = 1.0 + (r + r * r * tail);
  // 2^n: n + 1023 in the exponent field (the integer n sits in the low bits of `shifted`).
  const std::uint64_t exponent =
      (std::bit_cast<std::uint64_t>(shifted) - std::bit_cast<std::uint64_t>(kRoundingShift) + 1023u) << 52;
  return e_r * std::bit_cast<double>(exponent);
}

// Each function works on `rows` rows of `cols` elements, row r starting at
// element r * ld, so that one call covers a tile.

// x[r][c] = e^(scale x[r][c] - shifts[r]), the exponent formed in fp64 so that
// the result is rounded once (the scale of the softmax applied here rather than
// to the scores spares them a rounding); sums[r] = the sum of row r's
// exponentials, accumulated in fp64 before their rounding to fp32 (sums may be
// null).
void exp_scaled(float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, double scale,
                const double* shifts, float* sums);

// maxima[r] = the largest element of row r (-inf for cols 0).
void row_maxima(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, float* maxima);

// out[r * cols + c] = element first + r * stride + c of a buffer of `type`, as
// fp32 (fp16 and bf16 exactly, fp64 rounded to nearest): rows of a tensor into
// a dense tile.
void load_floats(const void* data, ElementType type, std::size_t first, std::int64_t stride, std::int64_t rows,
                 std::int64_t cols, float* out);

// factors[c] = Z/(1-p) of probability element (b, h, row, key_begin + c) for
// c < count: the RNG contract's keep_scale where kept, 0 where dropped
// (kernels/common/dropout.hpp), sixteen Philox blocks at a time; 1 everywhere,
// with no RNG work, without dropout.
void dropout_factors(const DropoutRng& rng, std::uint32_t b, std::uint32_t h, std::uint32_t row,
                     std::int64_t key_begin, std::int64_t count, float* factors);

}  // namespace attnbench::cpu_vector
