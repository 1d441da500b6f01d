// The CUDA implementations as the harness sees them, checked on any machine:
// registered, unavailable with the CUDA error text where there is no GPU,
// forward-only support, and device memory that grows as N for the fused kernel
// and as N^2 for the materializing baseline (from their workspace plans).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "harness/backend.hpp"
#include "harness/implementation.hpp"

namespace attnbench {
namespace {

const char* const kCudaImplementations[] = {"cuda.cublas", "cuda.flash", "cuda.flash.simple", "cuda.flash.sm90",
                                             "cuda.flash.sm90.serial"};

Problem square_problem(std::int64_t seqlen, std::int64_t head_dim) {
  Problem p;
  p.batch = 2;
  p.heads = 8;
  p.kv_heads = 8;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.head_dim = head_dim;
  resolve_lengths(p);
  return p;
}

TEST(CudaRegistry, EveryCudaImplementationIsRegisteredOnTheCudaDevice) {
  for (const char* name : kCudaImplementations) {
    const Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    EXPECT_EQ(implementation->device(), "cuda") << name;
    EXPECT_EQ(implementation->output_type(square_problem(128, 64)), ElementType::f16) << name;
    EXPECT_TRUE(implementation->modelled_traffic(square_problem(128, 64)).has_value())
        << name << " records its HBM-traffic model beside the measured bytes";
  }
  EXPECT_EQ(ImplementationRegistry::instance().find("cuda.flash")->accuracy_baseline(), "cuda.cublas");
  EXPECT_EQ(ImplementationRegistry::instance().find("cuda.flash.simple")->accuracy_baseline(), "cuda.cublas");
  EXPECT_EQ(ImplementationRegistry::instance().find("cuda.flash.sm90")->accuracy_baseline(), "cuda.cublas");
}

TEST(CudaRegistry, WithoutAGpuTheyAreUnavailableWithTheCudaErrorText) {
  const Verdict device = BackendRegistry::instance().get("cuda")->availability();
  if (device.ok) GTEST_SKIP() << "this machine has a usable GPU";
  for (const char* name : kCudaImplementations) {
    const Verdict verdict = ImplementationRegistry::instance().find(name)->availability();
    EXPECT_FALSE(verdict.ok) << name;
    EXPECT_NE(verdict.reason.find("cuda"), std::string::npos) << name << ": " << verdict.reason;
    EXPECT_EQ(verdict.reason, device.reason) << name;
  }
}

// Which CUDA implementations have a backward; the others refuse it, saying so.
TEST(CudaRegistry, TheyRunTheForwardAndSayWhetherTheyHaveABackward) {
  const std::map<std::string, bool> has_backward_pass{
      {"cuda.cublas", true}, {"cuda.flash", true}, {"cuda.flash.simple", false}, {"cuda.flash.sm90", false},
      {"cuda.flash.sm90.serial", false}};
  for (const auto& [name, backward_expected] : has_backward_pass) {
    const Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    Problem p = square_problem(256, 128);
    EXPECT_TRUE(implementation->supports(p).ok) << name << ": " << implementation->supports(p).reason;
    for (Direction direction : {Direction::bwd, Direction::fwd_bwd}) {
      p.direction = direction;
      const Verdict backward = implementation->supports(p);
      EXPECT_EQ(backward.ok, backward_expected) << name << ": " << backward.reason;
      if (!backward_expected) {
        EXPECT_NE(backward.reason.find("backward"), std::string::npos) << backward.reason;
      }
    }
  }
}

// The Hopper kernel has tiles for head dims 64 and 128 only; others are
// refused with a reason naming the head dim, whatever the mask or dropout.
TEST(CudaRegistry, TheHopperForwardRefusesHeadDimsItHasNoTilesFor) {
  const Implementation* sm90 = ImplementationRegistry::instance().find("cuda.flash.sm90");
  ASSERT_NE(sm90, nullptr);
  for (std::int64_t head_dim : {32, 96, 256}) {
    const Verdict verdict = sm90->supports(square_problem(256, head_dim));
    EXPECT_FALSE(verdict.ok) << head_dim;
    EXPECT_NE(verdict.reason.find("head_dim 64 and 128, not " + std::to_string(head_dim)), std::string::npos)
        << verdict.reason;
  }
  Problem masked = square_problem(200, 64);
  masked.mask = MaskSpec{true, true, 16, -1};
  masked.dropout = DropoutSpec{0.1, 1, 0};
  EXPECT_TRUE(sm90->supports(masked).ok) << sm90->supports(masked).reason;
}

// Workspace from N = 1k to 16k: the fused kernel's extra memory grows at most
// linearly, the materializing baseline's (S and P) quadratically.
TEST(CudaRegistry, FusedMemoryIsLinearAndMaterializingMemoryQuadraticInN) {
  const ExecutionContext context{1, nullptr, nullptr};
  for (std::int64_t head_dim : {64, 128}) {
    const Problem small = square_problem(1024, head_dim), large = square_problem(16384, head_dim);
    for (const char* fused : {"cuda.flash", "cuda.flash.simple", "cuda.flash.sm90"}) {
      const Implementation* implementation = ImplementationRegistry::instance().find(fused);
      const double grown = static_cast<double>(implementation->workspace_bytes(large, context));
      const double base = static_cast<double>(implementation->workspace_bytes(small, context));
      EXPECT_LE(grown, 16.0 * std::max(base, 1.0) + 1.0) << fused << " d" << head_dim;
    }
    const Implementation* cublas = ImplementationRegistry::instance().find("cuda.cublas");
    const double s_and_p = static_cast<double>(large.batch * large.heads) * 16384.0 * 16384.0 * (4 + 2);
    EXPECT_GE(static_cast<double>(cublas->workspace_bytes(large, context)), s_and_p) << "S fp32 and P fp16";
    // Each doubling of N adds about 4x what the previous one added when the
    // growth is quadratic (2x when linear), whatever the constant part.
    const auto workspace = [&](std::int64_t seqlen) {
      return static_cast<double>(cublas->workspace_bytes(square_problem(seqlen, head_dim), context));
    };
    EXPECT_GT((workspace(16384) - workspace(8192)) / (workspace(8192) - workspace(4096)), 3.5) << "grows as N^2";
  }
}

}  // namespace
}  // namespace attnbench
