// The correctness matrix of the CUDA kernels: every implementation of one
// device against the fp64 oracle on direction (forward; forward and backward,
// for the implementations that have one) x dtype x head dim (64 and 128; 256
// for the kernels compiled for it) x every mask x
// dropout on/off x lengths that are multiples of no tile x Nq != Nk, with the
// fused-versus-baseline rule against the device's cuBLAS baseline where it ran
// the case; and beside that fixed matrix, generated shapes that put every mask
// and length edge at every position of each kernel's tiling
// (tests/generated_shapes.hpp). Built three times (tests/CMakeLists.txt), with
// ATTNBENCH_TEST_DEVICE:
//   "cuda"    the GPU, labelled "gpu"; each test skips, saying why, without one,
//             and the generated shapes are listed only by a build that sees one;
//   "cudasim" the same kernels under the simulator with its sanitizer on, on
//             every machine: the whole matrix and every generated shape in
//             test_cudasim_matrix (label cudasim_matrix, `ctest -L
//             cudasim_matrix`), and in CI a seeded, stratified third of the
//             matrix and the everyday part of the generated shapes
//             (ATTNBENCH_TEST_SAMPLE, test_cudasim_correctness): for every
//             direction x dtype x head dim x mask, 2 of its 6 dropout x shape
//             points (1 at head dim 256, and forward and backward there one
//             dtype per mask, alternating). The generated shapes run with the
//             simulator's early time-outs on (time_out_switch.hpp), the fixed
//             matrix without.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/measure/accuracy.hpp"
#include "harness/backend.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/time_out_switch.hpp"
#include "harness/measure/session.hpp"
#include "kernels/cuda/grid_stride.hpp"
#include "tests/attention_test_support.hpp"
#include "tests/generated_shapes.hpp"

namespace attnbench {
namespace {

struct MaskCase {
  const char* name;
  MaskSpec mask;
  bool padded;
};

const MaskCase kMasks[] = {
    {"none", MaskSpec{}, false},
    {"causal_top_left", MaskSpec{true, false, -1, -1}, false},
    {"causal_bottom_right", MaskSpec{true, true, -1, -1}, false},
    {"window_bottom_right", MaskSpec{false, true, 37, 5}, false},
    {"causal_window_top_left", MaskSpec{true, false, 64, -1}, false},
    {"padding_causal", MaskSpec{true, true, -1, -1}, true},
};

struct Shape {
  std::int64_t seqlen_q, seqlen_k;
};
const Shape kShapes[] = {{200, 200}, {129, 257}, {257, 129}};

struct MatrixCase {
  Direction direction;
  InputDType dtype;
  std::int64_t head_dim;
  MaskCase mask;
  double dropout;
  Shape shape;
};

std::string case_name(const ::testing::TestParamInfo<MatrixCase>& info) {
  const MatrixCase& c = info.param;
  return std::string(c.direction == Direction::fwd ? "fwd_" : "fwdbwd_") +
         (c.dtype == InputDType::fp16 ? "fp16" : "bf16") + "_d" + std::to_string(c.head_dim) + "_" +
         c.mask.name + (c.dropout > 0 ? "_dropout" : "") + "_q" + std::to_string(c.shape.seqlen_q) + "_k" +
         std::to_string(c.shape.seqlen_k);
}

// The points of the matrix one run checks: all of them, or the sample.
std::vector<MatrixCase> matrix_points();

std::vector<MatrixCase> matrix() {
  std::vector<MatrixCase> cases;
  for (Direction direction : {Direction::fwd, Direction::fwd_bwd}) {
    for (InputDType dtype : {InputDType::fp16, InputDType::bf16}) {
      for (std::int64_t head_dim : {64, 128}) {
        for (const MaskCase& mask : kMasks) {
          for (double dropout : {0.0, 0.1}) {
            for (const Shape& shape : kShapes) cases.push_back({direction, dtype, head_dim, mask, dropout, shape});
          }
        }
      }
    }
  }
  // Head dim 256: cuda.flash.sm90 (and, forward, cuda.flash.simple) against
  // the baseline; cuda.flash, compiled for 64 and 128, sits out. Last, so that
  // the sample of the groups above stays as it was.
  for (Direction direction : {Direction::fwd, Direction::fwd_bwd}) {
    for (InputDType dtype : {InputDType::fp16, InputDType::bf16}) {
      for (const MaskCase& mask : kMasks) {
        for (double dropout : {0.0, 0.1}) {
          for (const Shape& shape : kShapes) cases.push_back({direction, dtype, 256, mask, dropout, shape});
        }
      }
    }
  }
  return cases;
}

Problem problem_for(const MatrixCase& c) {
  Problem p;
  p.batch = 2;
  p.heads = 4;
  p.kv_heads = 2;
  p.seqlen_q = c.shape.seqlen_q;
  p.seqlen_k = c.shape.seqlen_k;
  p.head_dim = c.head_dim;
  p.dtype = c.dtype;
  p.direction = c.direction;
  p.mask = c.mask.mask;
  p.dropout = DropoutSpec{c.dropout, 0x5eedull, 3};
  p.input.seed = 11;
  if (c.mask.padded) {
    p.padding.kind = PaddingSpec::Kind::explicit_lengths;
    p.lengths_q = {c.shape.seqlen_q, c.shape.seqlen_q / 3};
    p.lengths_k = {c.shape.seqlen_k - 7, 0 + c.shape.seqlen_k / 2};
  } else {
    resolve_lengths(p);
  }
  return p;
}

constexpr const char* kDevice = ATTNBENCH_TEST_DEVICE;
// The simulator runs one case per test process, and ctest runs those in parallel.
const int kHostThreads = std::string(kDevice) == "cudasim" ? 1 : 8;

// The simulator's sanitizer is on in every test, whatever the environment says.
const bool kSanitizerOn = [] {
  cudasim::set_sanitizer_enabled(true);
  return true;
}();

bool device_available(std::string& reason) {
  Backend* backend = BackendRegistry::instance().get(kDevice);
  if (!backend) {
    reason = std::string("this build has no ") + kDevice + " backend";
    return false;
  }
  const Verdict available = backend->availability();
  reason = available.reason;
  return available.ok;
}

std::vector<Implementation*> device_implementations() {
  std::vector<Implementation*> found;
  for (Implementation* implementation : ImplementationRegistry::instance().all()) {
    if (implementation->device() == kDevice) found.push_back(implementation);
  }
  return found;
}

std::string baseline_name() { return std::string(kDevice) + ".cublas"; }

// Whether `implementation` is an ablation of a backward (it runs the gradient
// directions of `problem` only) and `problem` a forward, which it sits out.
bool backward_only(const Implementation& implementation, const Problem& problem) {
  if (has_backward(problem.direction) || implementation.supports(problem).ok) return false;
  Problem backward = problem;
  backward.direction = Direction::bwd;
  return implementation.supports(backward).ok;
}

// Runs every implementation of the device on `problem`, each against the oracle
// (and the fused-versus-baseline rule where the baseline ran it). Forward-only
// implementations sit out the gradient half and backward-only ones (an
// ablation of a backward) the forward; with `must_run` (names without the
// device, e.g. "flash.simple"), every implementation that does not support the
// problem sits out and those named must run; those in `sit_out` (names without
// the device) never run.
void expect_every_implementation_matches_the_oracle(const Problem& problem,
                                                    const std::vector<std::string>& must_run = {},
                                                    const std::set<std::string>& sit_out = {}) {
  ASSERT_TRUE(check_problem(problem).empty());
  const AccuracySettings settings;
  CaseData data(problem, settings, kHostThreads);

  std::map<std::string, AccuracyResult> results;
  std::map<std::string, ElementType> output_types;
  for (Implementation* implementation : device_implementations()) {
    const std::string name(implementation->name());
    if (sit_out.count(name.substr(name.find('.') + 1))) continue;
    if ((has_backward(problem.direction) || !must_run.empty()) && !implementation->supports(problem).ok) continue;
    if (backward_only(*implementation, problem)) continue;
    std::string skip_reason;
    const auto session = ImplementationSession::open(*implementation, data, kHostThreads, skip_reason);
    ASSERT_TRUE(session) << name << " did not run: " << skip_reason;
    session->checked_call();
    results[name] = session->check_accuracy(session->copy_outputs());
    output_types[name] = implementation->output_type(problem);
  }
  if (!has_backward(problem.direction)) {
    ASSERT_TRUE(results.count(baseline_name())) << "the materializing baseline must run every forward case";
  }
  for (const std::string& name : must_run) {
    ASSERT_TRUE(results.count(std::string(kDevice) + "." + name)) << kDevice << "." << name << " must run this case";
  }
  for (auto& [name, result] : results) {
    // With a baseline that ran the case, the fused-versus-baseline rule; without
    // one (a backward the baseline lacks), the per-dtype bound alone.
    if (!result.baseline.empty() && results.count(result.baseline)) {
      apply_baseline_rule(result, results.at(result.baseline), output_types.at(name), settings);
      EXPECT_TRUE(result.rule_applied) << name;
    }
    EXPECT_EQ(result.status, "passed") << name << ": " << result.reason << "\n" << result.to_json().dump(1);
  }
}

class CudaCorrectness : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(CudaCorrectness, EveryImplementationMatchesTheOracle) {
  std::string reason;
  if (!device_available(reason)) GTEST_SKIP() << "no " << kDevice << " device: " << reason;
  // flash.sm90.no_pingpong is flash.sm90's kernel instance with the consumers'
  // turns off, nothing else: test_flash_sm90 runs it.
  const std::vector<std::string> must_run =
      GetParam().head_dim == 256 ? std::vector<std::string>{"flash.sm90", "cublas"} : std::vector<std::string>{};
  expect_every_implementation_matches_the_oracle(problem_for(GetParam()), must_run, {"flash.sm90.no_pingpong"});
}

std::vector<MatrixCase> matrix_points() {
  const std::vector<MatrixCase> all = matrix();
#if defined(ATTNBENCH_TEST_SAMPLE)
  // matrix() lists each (direction, dtype, head dim, mask) group's 6 points in a
  // row; a fixed seed picks 2 of each group's 6.
  constexpr std::size_t kGroup = 6;
  std::mt19937 generator(20261201u);
  std::vector<MatrixCase> sample;
  std::size_t wide_backward_groups = 0;
  for (std::size_t first = 0; first < all.size(); first += kGroup) {
    std::array<std::size_t, kGroup> order{0, 1, 2, 3, 4, 5};
    std::shuffle(order.begin(), order.end(), generator);
    // Head dim 256 forward and backward: half the groups, fp16 for one mask
    // and bf16 for the next (the simulated backward at d256 is the costliest).
    if (all[first].head_dim == 256 && all[first].direction == Direction::fwd_bwd) {
      const std::size_t group = wide_backward_groups++;
      const std::size_t masks = std::size(kMasks);
      if ((group % masks + group / masks) % 2 != 0) continue;
    }
    sample.push_back(all[first + std::min(order[0], order[1])]);
    // The head dim 256 groups (cuda.flash.sm90's 80-key forward and 64-key
    // backward tiles, whose every edge position tests/test_flash_geometry.cpp
    // and tests/test_flash_sm90_backward_geometry.cpp check) one point each.
    if (all[first].head_dim != 256) sample.push_back(all[first + std::max(order[0], order[1])]);
  }
  return sample;
#else
  return all;
#endif
}

INSTANTIATE_TEST_SUITE_P(Matrix, CudaCorrectness, ::testing::ValuesIn(matrix_points()), case_name);

// ---- Generated shapes ------------------------------------------------------------

const std::uint64_t kShapeSeed = test::shape_seed();

// The GPU build lists the generated shapes only where a GPU answers when its
// tests are listed (at build time: scripts/device-check.sh builds on the GPU
// machine). Elsewhere each of them would only skip, at the cost of a process
// start apiece in every CI run; CudaGeneratedShapesListed says why they are absent.
std::vector<test::GeneratedCase> generated_points() {
  if (std::string reason; std::string(kDevice) == "cuda" && !device_available(reason)) return {};
  std::vector<test::GeneratedCase> cases = test::generated_cases(kShapeSeed);
#if defined(ATTNBENCH_TEST_SAMPLE)
  cases.erase(std::remove_if(cases.begin(), cases.end(), [](const test::GeneratedCase& c) { return !c.everyday; }),
              cases.end());
#endif
  return cases;
}

std::string generated_name(const ::testing::TestParamInfo<test::GeneratedCase>& info) { return info.param.name; }

class CudaGeneratedShapes : public ::testing::TestWithParam<test::GeneratedCase> {};

TEST_P(CudaGeneratedShapes, EveryImplementationMatchesTheOracle) {
  const test::GeneratedCase& c = GetParam();
  std::string reason;
  if (!device_available(reason)) GTEST_SKIP() << "no " << kDevice << " device: " << reason;
  std::error_code ignored;
  std::cout << "generated shape " << c.describe() << "\nfrom seed " << kShapeSeed << "; rerun with: "
            << test::kShapeSeedVariable << "=" << kShapeSeed << " "
            << std::filesystem::read_symlink("/proc/self/exe", ignored).string()
            << " --gtest_filter=" << ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() << "."
            << ::testing::UnitTest::GetInstance()->current_test_info()->name() << std::endl;
  const LoweredGridStrideCap cap(c.grid_stride_cap);
  // The simulator's mbarrier waits time out once each, as the hardware's may,
  // so that every instance's retry runs (the fixed matrix waits without).
  const cudasim::EarlyTimeOuts early;
  // The implementations of the kernels whose tilings the shapes come from
  // must run them. flash.sm90.serial and .no_pingpong are flash.sm90's kernel
  // instance with one of its overlaps off, and .deterministic its backward
  // with the dQ order fixed: the same tiles and index arithmetic, which is
  // what these shapes test (test_flash_sm90 runs all three, the fixed matrix
  // .serial and .deterministic).
  expect_every_implementation_matches_the_oracle(
      c.problem, test::direction_implementations(c.direction),
      {"flash.sm90.serial", "flash.sm90.no_pingpong", "flash.sm90.deterministic"});
}

INSTANTIATE_TEST_SUITE_P(Generated, CudaGeneratedShapes, ::testing::ValuesIn(generated_points()), generated_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaGeneratedShapes);

TEST(CudaGeneratedShapesListed, WheneverTheDeviceAnswers) {
  std::string reason;
  if (!device_available(reason)) {
    GTEST_SKIP() << "no " << kDevice << " device: " << reason << "; a build on a machine with one lists the "
                 << test::generated_cases(kShapeSeed).size() << " generated shapes";
  }
  EXPECT_FALSE(generated_points().empty());
}

// ---- Head dims between the compiled ones ----------------------------------------------

// cuda.flash.simple compiles instances for d <= 64, <= 128 and <= 256 and leaves
// the dims past d idle: every instance, with and without idle dims, against the
// oracle beside the baseline (cuda.flash, compiled for 64 and 128 only, sits out).
struct HeadDimCase {
  std::int64_t head_dim;
  MaskSpec mask;
  double dropout;
  InputDType dtype;
};
const HeadDimCase kHeadDimCases[] = {
    {8, MaskSpec{true, true, -1, -1}, 0.1, InputDType::fp16},
    {72, MaskSpec{false, true, 20, 3}, 0.0, InputDType::bf16},
    {200, MaskSpec{true, false, -1, -1}, 0.0, InputDType::fp16},
    {256, MaskSpec{}, 0.1, InputDType::bf16},
};

class CudaHeadDims : public ::testing::TestWithParam<HeadDimCase> {};

TEST_P(CudaHeadDims, FlashSimpleMatchesTheOracle) {
  std::string reason;
  if (!device_available(reason)) GTEST_SKIP() << "no " << kDevice << " device: " << reason;
  const HeadDimCase& c = GetParam();
  Problem p = test::make_problem(2, 2, 1, 37, 70, c.head_dim);
  p.direction = Direction::fwd;
  p.dtype = c.dtype;
  p.mask = c.mask;
  p.dropout = DropoutSpec{c.dropout, 0xd1ull, 5};
  p.input.seed = 17;
  expect_every_implementation_matches_the_oracle(p, {"flash.simple", "cublas"});
}

std::string head_dim_name(const ::testing::TestParamInfo<HeadDimCase>& info) {
  return "d" + std::to_string(info.param.head_dim);
}

INSTANTIATE_TEST_SUITE_P(HeadDims, CudaHeadDims, ::testing::ValuesIn(kHeadDimCases), head_dim_name);

// Rows of the output that no key is visible to (padding, bottom-right causal
// with Nq > Nk) must be exact zeros, not merely close to them.
TEST(CudaCorrectnessEdges, RowsWithoutVisibleKeysAreExactZerosWithMinusInfinityLse) {
  std::string reason;
  if (!device_available(reason)) GTEST_SKIP() << "no " << kDevice << " device: " << reason;
  Problem p;
  p.batch = 1;
  p.heads = 2;
  p.kv_heads = 2;
  p.seqlen_q = 150;
  p.seqlen_k = 40;
  p.head_dim = 64;
  p.mask = MaskSpec{true, true, -1, -1};  // rows i < 110 see nothing
  resolve_lengths(p);
  CaseData data(p, AccuracySettings{}, kHostThreads);
  for (Implementation* implementation : device_implementations()) {
    if (backward_only(*implementation, p)) continue;
    std::string skip_reason;
    const auto session = ImplementationSession::open(*implementation, data, kHostThreads, skip_reason);
    ASSERT_TRUE(session) << skip_reason;
    session->checked_call();
    const HostOutputs outputs = session->copy_outputs();
    const TensorStrides strides = q_strides(p);
    for (std::int64_t h = 0; h < p.heads; ++h) {
      for (std::int64_t i = 0; i < 110; ++i) {
        EXPECT_EQ(load_as_double(outputs.lse.buffer.data, ElementType::f32,
                                 static_cast<std::size_t>(lse_index(p, 0, h, i))),
                  -std::numeric_limits<double>::infinity())
            << implementation->name() << " row " << i;
        for (std::int64_t c = 0; c < p.head_dim; ++c) {
          ASSERT_EQ(load_as_double(outputs.out.buffer.data, outputs.out.buffer.type,
                                   static_cast<std::size_t>(strides.offset(0, i, h) + c)),
                    0.0)
              << implementation->name() << " row " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnbench
