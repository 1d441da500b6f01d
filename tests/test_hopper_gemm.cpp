// The Hopper GEMM (kernels/cuda/hopper_gemm.cu: TMA, mbarrier pipeline, wgmma,
// stmatrix and a TMA store) against a host product, on sizes that are not
// multiples of its tiles, with fresh random inputs and C poisoned first. Built
// twice (tests/CMakeLists.txt), with ATTNBENCH_TEST_DEVICE:
//   "cudasim" the simulator with its sanitizer, in every test run;
//   "cuda"    the GPU (label "gpu"), skipping, saying why, without an sm_90 one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/time_out_switch.hpp"
#include "harness/dtype.hpp"
#include "kernels/cuda/hopper_gemm.hpp"

namespace attnbench {
namespace {

constexpr const char* kDevice = ATTNBENCH_TEST_DEVICE;

struct GemmCase {
  int m, n, k;
  bool bf16;
  bool early_time_outs = false;  // the simulator's try_waits time out once each (time_out_switch.hpp)
};

std::string name_of(const ::testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  return std::string(c.bf16 ? "bf16" : "fp16") + "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" +
         std::to_string(c.k) + (c.early_time_outs ? "_early_time_outs" : "");
}

class HopperGemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(HopperGemm, MatchesTheHostProduct) {
  cudasim::set_sanitizer_enabled(true);
  Backend* backend = BackendRegistry::instance().get(kDevice);
  if (!backend) GTEST_SKIP() << "this build has no " << kDevice << " backend";
  const Verdict available = backend->availability();
  if (!available.ok) GTEST_SKIP() << "no " << kDevice << " device: " << available.reason;
  std::string why;
  if (!hopper_gemm_runs_here(why)) GTEST_SKIP() << why;

  const GemmCase c = GetParam();
  std::optional<cudasim::EarlyTimeOuts> early;
  if (c.early_time_outs) early.emplace();
  const auto count = [](int rows, int columns) { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns); };
  const auto encode = [&](float x) { return c.bf16 ? float_to_bfloat16(x) : float_to_half(x); };
  const auto decode = [&](std::uint16_t bits) { return c.bf16 ? bfloat16_to_float(bits) : half_to_float(bits); };
  std::mt19937 random(static_cast<unsigned>(c.m * 31 + c.n * 7 + c.k));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::uint16_t> a(count(c.m, c.k)), b(count(c.n, c.k)), result(count(c.m, c.n));
  for (std::uint16_t& x : a) x = encode(uniform(random));
  for (std::uint16_t& x : b) x = encode(uniform(random));

  const ElementType type = c.bf16 ? ElementType::bf16 : ElementType::f16;
  DeviceArena arena(*backend, DeviceArena::aligned(2 * a.size()) + DeviceArena::aligned(2 * b.size()) +
                                  DeviceArena::aligned(2 * result.size()));
  const TensorBuffer device_a = arena.take(type, a.size(), "A");
  const TensorBuffer device_b = arena.take(type, b.size(), "B");
  const TensorBuffer device_c = arena.take(type, result.size(), "C");
  backend->copy_to_device(device_a.data, a.data(), 2 * a.size());
  backend->copy_to_device(device_b.data, b.data(), 2 * b.size());
  backend->fill_with_nan(device_c);
  hopper_gemm(device_a.data, device_b.data, device_c.data, c.m, c.n, c.k, c.bf16, 2);
  backend->copy_to_host(result.data(), device_c.data, 2 * result.size());

  // Each element: the product in double, and a bound of fp32 accumulation plus one rounding to 16 bits.
  const double rounding = c.bf16 ? 0x1p-8 : 0x1p-11;
  for (int i = 0; i < c.m; ++i) {
    for (int j = 0; j < c.n; ++j) {
      double exact = 0, magnitude = 0;
      for (int l = 0; l < c.k; ++l) {
        const double term = static_cast<double>(decode(a[count(i, c.k) + static_cast<std::size_t>(l)])) *
                            decode(b[count(j, c.k) + static_cast<std::size_t>(l)]);
        exact += term;
        magnitude += std::fabs(term);
      }
      const double got = decode(result[count(i, c.n) + static_cast<std::size_t>(j)]);
      ASSERT_LE(std::fabs(got - exact), rounding * std::fabs(exact) + 1e-6 * magnitude + 1e-30)
          << "C[" << i << "][" << j << "] = " << got << ", the host product is " << exact;
    }
  }
}

// Tails in every dimension: m 197 leaves a second CTA row with 69 rows (its
// second consumer 5), n 136 a second CTA column of 8, k 328 a last k tile of 8.
// 128 x 128 x 1024 is one CTA's tile through 16 turns of the 4-stage pipeline.
// The last two run with every mbarrier wait's first try_wait timing out.
INSTANTIATE_TEST_SUITE_P(Sizes, HopperGemm,
                         ::testing::Values(GemmCase{197, 136, 328, true}, GemmCase{64, 8, 8, false},
                                           GemmCase{130, 256, 72, false}, GemmCase{1, 24, 520, true},
                                           GemmCase{128, 128, 1024, true}, GemmCase{197, 136, 328, true, true},
                                           GemmCase{130, 256, 72, false, true}),
                         name_of);

}  // namespace
}  // namespace attnbench
