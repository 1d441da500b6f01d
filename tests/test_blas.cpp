// The BLAS door (harness/blas.hpp): every transpose combination with padded
// row strides against an fp64 product, beta = 0 ignoring NaN in C, and the
// library's self-description. Its threads are tested with the harness's own
// (tests/test_session.cpp).
#include "harness/blas.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace attnbench {
namespace {

struct Matrix {
  std::int64_t rows, cols, ld;
  std::vector<float> values;
  Matrix(std::int64_t r, std::int64_t c, std::int64_t padding, std::mt19937& generator)
      : rows(r), cols(c), ld(c + padding), values(static_cast<std::size_t>(r * (c + padding))) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& value : values) value = uniform(generator);
  }
  float at(std::int64_t r, std::int64_t c) const { return values[static_cast<std::size_t>(r * ld + c)]; }
};

TEST(Blas, EveryTransposeWithPaddedStridesMatchesAnFp64Product) {
  std::mt19937 generator(7);
  const std::int64_t m = 37, n = 29, k = 53;
  for (const blas::Op a_op : {blas::Op::none, blas::Op::transpose}) {
    for (const blas::Op b_op : {blas::Op::none, blas::Op::transpose}) {
      const bool ta = a_op == blas::Op::transpose, tb = b_op == blas::Op::transpose;
      const Matrix a(ta ? k : m, ta ? m : k, 3, generator);
      const Matrix b(tb ? n : k, tb ? k : n, 5, generator);
      Matrix c(m, n, 2, generator);
      const Matrix c_before = c;
      blas::sgemm(a_op, b_op, m, n, k, 0.75f, a.values.data(), a.ld, b.values.data(), b.ld, 0.5f, c.values.data(),
                  c.ld);
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0.0;
          for (std::int64_t x = 0; x < k; ++x) {
            sum += static_cast<double>(ta ? a.at(x, i) : a.at(i, x)) * (tb ? b.at(j, x) : b.at(x, j));
          }
          const double expected = 0.75 * sum + 0.5 * c_before.at(i, j);
          ASSERT_NEAR(c.at(i, j), expected, 1e-5) << "op " << ta << tb << " at " << i << "," << j;
        }
        for (std::int64_t j = n; j < c.ld; ++j) {
          ASSERT_EQ(c.at(i, j), c_before.at(i, j)) << "padding written at " << i << "," << j;
        }
      }
    }
  }
}

TEST(Blas, BetaZeroOverwritesNaN) {
  std::mt19937 generator(1);
  const Matrix a(8, 4, 0, generator), b(4, 8, 0, generator);
  std::vector<float> c(64, std::numeric_limits<float>::quiet_NaN());
  blas::sgemm(blas::Op::none, blas::Op::none, 8, 8, 4, 1.0f, a.values.data(), 4, b.values.data(), 8, 0.0f, c.data(), 8);
  for (const float value : c) EXPECT_TRUE(std::isfinite(value));
}

TEST(Blas, TheLibraryDescribesItself) {
  const blas::Library& library = blas::library();
  EXPECT_EQ(library.name, "OpenBLAS");
  EXPECT_FALSE(library.version.empty());
  EXPECT_NE(library.version.find('.'), std::string::npos) << library.version;
  EXPECT_FALSE(library.core.empty());
  EXPECT_EQ(library.threading, "openmp") << "CMake must pick OpenBLAS's OpenMP build";
  EXPECT_EQ(blas::threading_problem(), "");
  EXPECT_EQ(library.identity(), "OpenBLAS " + library.version);
  const nlohmann::ordered_json json = blas::library_json();
  EXPECT_EQ(json["name"], "OpenBLAS");
  EXPECT_EQ(json["version"], library.version);
  EXPECT_EQ(json["threading"], "openmp");
}

}  // namespace
}  // namespace attnbench
