// The CUDA implementations as the harness sees them, checked on any machine:
// registered, unavailable with the CUDA error text where there is no GPU,
// forward-only support, device memory that grows as N for the fused kernel and
// as N^2 for the materializing baseline (from their workspace plans), the
// problems each refuses and why, the tiles their configuration records, and
// the inputs cuda.flash.simple rejects before it launches. Built twice
// (tests/CMakeLists.txt), with ATTNBENCH_TEST_DEVICE "cuda" (the GPU build of
// the sources) and "cudasim" (the simulator's build of the same sources).
#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/backend.hpp"
#include "harness/cuda/nvidia_driver.hpp"
#include "harness/implementation.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_simple_geometry.hpp"
#include "kernels/cuda/flash_sm90_backward_geometry.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"

namespace attnbench {
namespace {

constexpr const char* kDevice = ATTNBENCH_TEST_DEVICE;

// "<device>.<algorithm>"
std::string named(const char* algorithm) { return std::string(kDevice) + "." + algorithm; }
const Implementation& implementation(const char* algorithm) {
  const Implementation* found = ImplementationRegistry::instance().find(named(algorithm));
  if (found == nullptr) throw std::runtime_error(named(algorithm) + " is not registered");
  return *found;
}

const char* const kAlgorithms[] = {"cublas", "flash", "flash.simple", "flash.sm90", "flash.sm90.serial",
                                   "flash.sm90.no_pingpong", "flash.sm90.deterministic"};

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

TEST(CudaRegistry, EveryCudaImplementationIsRegisteredOnItsDevice) {
  for (const char* algorithm : kAlgorithms) {
    const std::string name = named(algorithm);
    const Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    EXPECT_EQ(implementation->device(), kDevice) << name;
    EXPECT_EQ(implementation->output_type(square_problem(128, 64)), ElementType::f16) << name;
    EXPECT_TRUE(implementation->modelled_traffic(square_problem(128, 64)).has_value())
        << name << " records its HBM-traffic model beside the measured bytes";
  }
  EXPECT_EQ(implementation("flash").accuracy_baseline(), named("cublas"));
  EXPECT_EQ(implementation("flash.simple").accuracy_baseline(), named("cublas"));
  EXPECT_EQ(implementation("flash.sm90").accuracy_baseline(), named("cublas"));
}

TEST(CudaRegistry, WithoutAGpuTheyAreUnavailableWithTheCudaErrorText) {
  const Verdict device = BackendRegistry::instance().get(kDevice)->availability();
  if (device.ok) GTEST_SKIP() << "this machine can run the " << kDevice << " device";
  for (const char* algorithm : kAlgorithms) {
    const std::string name = named(algorithm);
    const Verdict verdict = ImplementationRegistry::instance().find(name)->availability();
    EXPECT_FALSE(verdict.ok) << name;
    EXPECT_NE(verdict.reason.find("cuda"), std::string::npos) << name << ": " << verdict.reason;
    EXPECT_EQ(verdict.reason, device.reason) << name;
  }
}

TEST(CudaRegistry, WithoutAnyNvidiaDriverTheReasonSaysSoAndNotToUpgradeIt) {
  const NvidiaDriverPresence presence = probe_nvidia_driver();
  if (presence.library || presence.device_files) GTEST_SKIP() << "this machine has an NVIDIA driver";
  const Backend* cuda = BackendRegistry::instance().get("cuda");
  if (cuda == nullptr) GTEST_SKIP() << "this build has no cuda backend (built without the CUDA toolkit)";
  const Verdict device = cuda->availability();
  EXPECT_FALSE(device.ok);
  EXPECT_EQ(device.reason.rfind("no NVIDIA driver or GPU found", 0), 0u) << device.reason;
}

TEST(CudaRegistry, TheReasonFitsWhatIsInstalled) {
  const std::string name = "cudaErrorInsufficientDriver", text = "CUDA driver version is insufficient";
  EXPECT_EQ(cuda_unavailable_reason(name, text, {false, false}),
            "no NVIDIA driver or GPU found (no libcuda.so.1, no /dev/nvidia* device)");
  EXPECT_NE(cuda_unavailable_reason(name, text, {false, true}).find("libcuda.so.1 does not load"), std::string::npos);
  EXPECT_NE(cuda_unavailable_reason(name, text, {true, true}).find("older than this build's CUDA runtime"),
            std::string::npos);
  EXPECT_NE(cuda_unavailable_reason("cudaErrorNoDevice", "no CUDA-capable device is detected", {true, true})
                .find("(cudaGetDeviceCount: cudaErrorNoDevice, no CUDA-capable device is detected)"),
            std::string::npos);
}

// Which CUDA implementations have a backward; the others refuse it, saying so.
// (cuda.flash.sm90.deterministic, the backward's ablation, is the one that
// refuses a forward alone: below.)
TEST(CudaRegistry, TheyRunTheForwardAndSayWhetherTheyHaveABackward) {
  const std::map<std::string, bool> has_backward_pass{
      {named("cublas"), true}, {named("flash"), true}, {named("flash.simple"), false},
      {named("flash.sm90"), true}, {named("flash.sm90.serial"), false}, {named("flash.sm90.no_pingpong"), false}};
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

// cuda.flash.sm90's backward: head dims 64, 128 and 256, every mask and
// dropout, and no other head dim; its deterministic ablation runs the
// backward directions only, and the record says which dQ order each uses and
// how the tiles share the products (Pᵀ from registers at 64 and 128, through
// shared memory at 256, where the dQ parts are added from registers).
TEST(CudaRegistry, TheHopperBackwardRunsHeadDims64To256AndItsDeterministicAblationOnlyBackward) {
  const Implementation& sm90 = implementation("flash.sm90");
  const Implementation& deterministic = implementation("flash.sm90.deterministic");
  const ExecutionContext context{1, nullptr, nullptr};
  Problem p = square_problem(256, 128);
  p.dropout = DropoutSpec{0.1, 1, 0};
  p.mask = MaskSpec{true, true, -1, -1};
  for (Direction direction : {Direction::bwd, Direction::fwd_bwd}) {
    p.direction = direction;
    for (const std::int64_t head_dim : {64, 128, 256}) {
      p.head_dim = head_dim;
      EXPECT_TRUE(sm90.supports(p).ok) << sm90.supports(p).reason;
      EXPECT_TRUE(deterministic.supports(p).ok) << deterministic.supports(p).reason;
    }
    p.head_dim = 96;
    EXPECT_FALSE(sm90.supports(p).ok);
  }
  p.head_dim = 128;
  p.direction = Direction::fwd;
  EXPECT_NE(deterministic.supports(p).reason.find("ablation of the backward"), std::string::npos)
      << deterministic.supports(p).reason;
  EXPECT_FALSE(sm90.configuration(p, context).contains("backward"));
  p.direction = Direction::fwd_bwd;
  const auto backward = sm90.configuration(p, context)["backward"];
  EXPECT_EQ(backward["block_m"], Sm90BackwardTraits<128>::kBlockM);
  EXPECT_EQ(backward["block_n"], Sm90BackwardTraits<128>::kBlockN);
  EXPECT_EQ(backward["shared_memory_bytes"], Sm90BackwardTraits<128>::kSharedBytes);
  EXPECT_EQ(backward["deterministic"], false);
  EXPECT_NE(backward["mma"].get<std::string>().find("dV: RS (P^T from registers)"), std::string::npos) << backward;
  EXPECT_NE(backward["dq"].get<std::string>().find("64x64 part staged in shared memory"), std::string::npos)
      << backward;
  EXPECT_EQ(deterministic.configuration(p, context)["backward"]["deterministic"], true);
  p.head_dim = 256;
  const auto wide = sm90.configuration(p, context)["backward"];
  EXPECT_EQ(wide["block_n"], 64);
  EXPECT_NE(wide["mma"].get<std::string>().find("dV: SS (P^T through shared memory)"), std::string::npos) << wide;
  EXPECT_NE(wide["dq"].get<std::string>().find("64x128 part added from registers"), std::string::npos) << wide;
  p.head_dim = 64;
  EXPECT_EQ(sm90.configuration(p, context)["backward"]["block_m"], Sm90BackwardTraits<64>::kBlockM);
}

// Past supports(), the Hopper kernels' own guard: asked directly for a head
// dim they have no instance for, both directions throw std::invalid_argument
// naming it before anything reaches the device (a dispatch that found no
// instance and returned would leave the outputs unwritten), as do the tile
// shapes behind configuration() and the backward's workspace_bytes(); the
// traffic model has no tiles to model. The buffers stay null: nothing may
// touch them (the device's stream only carries the simulator's host threads).
TEST(CudaRegistry, TheHopperKernelsThrowForAHeadDimTheyHaveNoInstanceFor) {
  Implementation* const sm90 = ImplementationRegistry::instance().find(named("flash.sm90"));
  ASSERT_NE(sm90, nullptr);
  const AttentionBuffers buffers;
  ExecutionContext context{1, nullptr, BackendRegistry::instance().get(kDevice)->stream()};
  const auto expect_unlisted = [](const auto& call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << what << " did not throw";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("no instance for head_dim 96"), std::string::npos)
          << what << ": " << error.what();
    }
  };
  for (const InputDType dtype : {InputDType::fp16, InputDType::bf16}) {
    Problem p = square_problem(256, 96);
    p.dtype = dtype;
    p.direction = Direction::fwd_bwd;
    const std::string dtype_name = dtype == InputDType::fp16 ? "fp16" : "bf16";
    EXPECT_FALSE(sm90->modelled_traffic(p).has_value());
    expect_unlisted([&] { sm90->forward(p, buffers, context); }, "forward, " + dtype_name);
    expect_unlisted([&] { sm90->backward(p, buffers, context); }, "backward, " + dtype_name);
    expect_unlisted([&] { sm90->configuration(p, context); }, "configuration");
    expect_unlisted([&] { sm90->workspace_bytes(p, context); }, "workspace_bytes");
  }
}

// The Hopper kernel has tiles for head dims 64, 128 and 256 only; others are
// refused with a reason naming the head dim, whatever the mask or dropout.
TEST(CudaRegistry, TheHopperForwardRefusesHeadDimsItHasNoTilesFor) {
  const Implementation* sm90 = &implementation("flash.sm90");
  for (std::int64_t head_dim : {32, 96, 192, 512}) {
    const Verdict verdict = sm90->supports(square_problem(256, head_dim));
    EXPECT_FALSE(verdict.ok) << head_dim;
    EXPECT_NE(verdict.reason.find("head_dim 64, 128 and 256, not " + std::to_string(head_dim)), std::string::npos)
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
    for (const char* fused : {"flash", "flash.simple", "flash.sm90"}) {
      const Implementation* implementation = &attnbench::implementation(fused);
      const double grown = static_cast<double>(implementation->workspace_bytes(large, context));
      const double base = static_cast<double>(implementation->workspace_bytes(small, context));
      EXPECT_LE(grown, 16.0 * std::max(base, 1.0) + 1.0) << fused << " d" << head_dim;
    }
    const Implementation* cublas = &implementation("cublas");
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

// What each kernel cannot launch or index is refused up front, naming the limit.
TEST(CudaRegistry, TheyRefuseWhatTheirKernelsCannotLaunchSayingWhy) {
  const struct {
    const char* algorithm;
    Problem problem;
    const char* reason;  // a part of the refusal
  } refusals[] = {
      {"flash", square_problem(128, 96), "head_dim 64 and 128"},
      {"flash", [] { Problem p = square_problem(128, 64); p.heads = p.kv_heads = 65536; return p; }(), "65535"},
      {"flash", [] { Problem p = square_problem(128, 64); p.batch = 65536; return p; }(), "65535"},
      {"flash.sm90", [] { Problem p = square_problem(128, 64); p.heads = p.kv_heads = 65536; return p; }(), "65535"},
      {"flash.sm90.serial", [] { Problem p = square_problem(128, 128); p.batch = 65536; return p; }(), "65535"},
      {"flash.sm90.no_pingpong", square_problem(128, 96), "head_dim 64, 128 and 256"},
      {"flash.simple", square_problem(128, 12), "multiples of 8 from 8 to 256"},
      {"flash.simple", square_problem(128, 264), "multiples of 8 from 8 to 256"},
      {"flash.simple", [] { Problem p = square_problem(128, 64); p.batch = 65536; return p; }(), "65535"},
      {"flash.simple", [] { Problem p = square_problem(128, 64); p.heads = p.kv_heads = 65536; return p; }(), "65535"},
      {"cublas", [] { Problem p = square_problem(128, 64); p.batch = 65536; p.heads = p.kv_heads = 65536; return p; }(),
       "cuBLAS takes at most"},
      {"cublas", [] { Problem p = square_problem(128, 65536); p.heads = p.kv_heads = 65536; return p; }(),
       "not a valid cuBLAS GEMM"},
      // S's bytes overflow at the row stride, and at the 4 bytes of an element.
      {"cublas", [] { Problem p = square_problem(1 << 24, 64); p.batch = 1 << 15; p.heads = p.kv_heads = 1 << 15; return p; }(),
       "more bytes than a 64-bit index reaches"},
      {"cublas", [] { Problem p = square_problem(1 << 24, 64); p.batch = 1 << 15; p.heads = p.kv_heads = 1 << 15; p.seqlen_k = 1 << 8; return p; }(),
       "more bytes than a 64-bit index reaches"},
  };
  for (const auto& refusal : refusals) {
    const Verdict verdict = implementation(refusal.algorithm).supports(refusal.problem);
    EXPECT_FALSE(verdict.ok) << refusal.algorithm << " should refuse: " << refusal.reason;
    EXPECT_NE(verdict.reason.find(refusal.reason), std::string::npos) << refusal.algorithm << ": " << verdict.reason;
  }
  EXPECT_TRUE(implementation("flash.simple").supports(square_problem(128, 72)).ok);
}

// The tiles a record's configuration names are the kernels' own (their traits).
TEST(CudaRegistry, TheConfigurationRecordsTheKernelsTiles) {
  const ExecutionContext context{1, nullptr, nullptr};
  Problem p = square_problem(256, 128);
  p.direction = Direction::fwd_bwd;
  const auto flash = implementation("flash").configuration(p, context);
  EXPECT_EQ(flash["forward"]["block_m"], FlashTraits<128>::kBlockM);
  EXPECT_EQ(flash["forward"]["block_n"], FlashTraits<128>::kBlockN);
  EXPECT_EQ(flash["forward"]["shared_memory_bytes"], flash_shared_bytes(128, 2));
  EXPECT_EQ(flash["backward"]["block_n"], BackwardTraits<128>::kBlockN);
  EXPECT_EQ(flash["backward"]["slice_m"], BackwardTraits<128>::kSliceM);
  p.direction = Direction::fwd;
  EXPECT_FALSE(implementation("flash").configuration(p, context).contains("backward"));

  p.direction = Direction::fwd;
  for (const char* algorithm : {"flash.sm90", "flash.sm90.serial", "flash.sm90.no_pingpong"}) {
    for (const std::int64_t head_dim : {64, 128, 256}) {
      p.head_dim = head_dim;
      EXPECT_TRUE(implementation(algorithm).supports(p).ok) << algorithm << " d" << head_dim;
      const auto sm90 = implementation(algorithm).configuration(p, context)["forward"];
      const auto traits = [&](auto t) {
        using T = decltype(t);
        EXPECT_EQ(sm90["block_m"], T::kBlockM) << algorithm << " d" << head_dim;
        EXPECT_EQ(sm90["block_n"], T::kBlockN);
        EXPECT_EQ(sm90["warpgroups"]["consumers"], T::kConsumers);
        EXPECT_EQ(sm90["stages"], T::kStages);
        EXPECT_EQ(sm90["shared_memory_bytes"], T::kSharedBytes);
      };
      if (head_dim == 64) traits(Sm90Traits<64>{});
      else if (head_dim == 128) traits(Sm90Traits<128>{});
      else traits(Sm90Traits<256>{});
      // At d256 the overlap does not fit the registers, and the record says the kernel runs in order.
      EXPECT_EQ(sm90["softmax_overlaps_pv"], std::string(algorithm) != "flash.sm90.serial" && head_dim != 256)
          << algorithm << " d" << head_dim;
      EXPECT_EQ(sm90["pingpong"], std::string(algorithm) != "flash.sm90.no_pingpong") << algorithm;
    }
  }
  EXPECT_NE(Sm90Traits<64>::kSharedBytes, Sm90Traits<128>::kSharedBytes) << "the head dims are told apart";

  p.head_dim = 72;
  const auto simple = implementation("flash.simple").configuration(p, context);
  EXPECT_EQ(simple["block_rows"], flash_simple::Traits::kBlockM);
  EXPECT_EQ(simple["block_keys"], flash_simple::Traits::kBlockN);
  EXPECT_EQ(simple["rows_per_warp"], flash_simple::Traits::kWarpRows);
  EXPECT_EQ(simple["compiled_head_dim"], 128);
  const std::optional<TrafficModel> traffic = implementation("flash.simple").modelled_traffic(p);
  ASSERT_TRUE(traffic.has_value());

  p.head_dim = 64;
  const auto cublas = implementation("cublas").configuration(p, context);
  EXPECT_EQ(cublas["score_row_stride"], 256) << "Nk rounded up to 8";
  EXPECT_FALSE(cublas.contains("backward"));
  p.direction = Direction::fwd_bwd;
  p.kv_heads = 2;
  EXPECT_NE(implementation("cublas").configuration(p, context)["backward"]["key_value_gradients"].get<std::string>().find(
                "fp32 sums"),
            std::string::npos)
      << "grouped-query attention sums dK and dV over a group";
  p.kv_heads = p.heads;
  EXPECT_NE(implementation("cublas").configuration(p, context)["backward"]["key_value_gradients"].get<std::string>().find(
                "written by the GEMMs"),
            std::string::npos);
}

// cuda.flash.simple reads Q, K and V in 16-byte chunks and says so before it
// launches (nothing is touched, so no device is needed).
TEST(CudaRegistry, FlashSimpleRejectsInputsThatAreNot16ByteAligned) {
  const Problem p = square_problem(64, 64);
  alignas(16) static unsigned char storage[64];
  AttentionBuffers buffers;
  buffers.q = TensorBuffer{storage, ElementType::f16, 8};
  buffers.k = TensorBuffer{storage + 2, ElementType::f16, 8};
  buffers.v = TensorBuffer{storage, ElementType::f16, 8};
  ExecutionContext context{1, nullptr, nullptr};
  try {
    ImplementationRegistry::instance().find(named("flash.simple"))->forward(p, buffers, context);
    ADD_FAILURE() << "a misaligned K was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("16-byte aligned"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace attnbench
