// The BLAS door (harness/blas.hpp): every transpose combination with padded
// row strides against an fp64 product, beta = 0 ignoring NaN in C, the
// library's self-description, and its threads: a call from a one-thread team
// of the harness starts no thread of its own, sgemm_parallel uses the threads
// it is given, and the harness's release of idle OpenMP workers ends them too.
#include "harness/blas.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "harness/measure/openmp_threads.hpp"

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

// Whether the process is down to `count` threads within two seconds.
bool threads_become(int count) {
  for (int wait = 0; wait < 200 && process_thread_count() != count; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return process_thread_count() == count;
}

class BlasThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    if (omp_get_num_procs() < 2) GTEST_SKIP() << "one CPU: the library has no second thread to start";
    release_idle_openmp_threads();
    ASSERT_TRUE(threads_become(1));
  }
  // Large enough that the library would split it over threads if it could.
  static constexpr std::int64_t kSize = 256;
  std::vector<float> a = std::vector<float>(kSize * kSize, 0.5f);
  std::vector<float> b = std::vector<float>(kSize * kSize, 0.25f);
  std::vector<float> c = std::vector<float>(kSize * kSize);
};

TEST_F(BlasThreads, ACallFromAOneThreadTeamRunsOnThatThread) {
  int during = 0;
#pragma omp parallel num_threads(1)
  {
    blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
                c.data(), kSize);
    during = process_thread_count();
  }
  EXPECT_EQ(during, 1);
  EXPECT_EQ(process_thread_count(), 1);
  EXPECT_FLOAT_EQ(c[0], 0.5f * 0.25f * kSize);
}

TEST_F(BlasThreads, CallsFromATeamRunOnItsThreadsOnly) {
  int during = 0;
#pragma omp parallel num_threads(2)
  {
    blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
                c.data(), kSize);
#pragma omp barrier
#pragma omp single
    during = process_thread_count();
  }
  EXPECT_EQ(during, 2);
}

TEST_F(BlasThreads, TheParallelCallUsesItsThreadsAndTheReleaseEndsThem) {
  blas::sgemm_parallel(2, blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(),
                       kSize, 0.0f, c.data(), kSize);
  EXPECT_EQ(process_thread_count(), 2) << "the library's worker stays until released";
  release_idle_openmp_threads();
  EXPECT_TRUE(threads_become(1));
  // And the one-thread setting is back for the next call.
#pragma omp parallel num_threads(1)
  blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
              c.data(), kSize);
  EXPECT_EQ(process_thread_count(), 1);
}

}  // namespace
}  // namespace attnbench
