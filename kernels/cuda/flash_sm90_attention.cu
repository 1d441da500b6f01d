// cuda.flash.sm90 as the harness sees it: the warp-specialised Hopper forward
// (kernels/cuda/flash_sm90_forward.cu) and backward
// (kernels/cuda/flash_sm90_backward.cu), TMA, mbarrier pipelines, wgmma. Built
// for sm_90a alone: on any other GPU it is unavailable and says why. Its
// workspace is the per-batch lengths of a padded problem, then, with a
// backward, D, LSE·log2(e) and the fp32 dQ accumulator. Registered three
// times, the same kernel instances with the forward schedule's run-time flags
// (Sm90Schedule) set apart, so that a GPU run measures what each overlap is
// worth: cuda.flash.sm90 (both on; forward, backward and fwd+bwd),
// cuda.flash.sm90.serial (each tile's softmax after the previous P·V, the
// consumers still taking turns) and cuda.flash.sm90.no_pingpong (the consumers
// issuing their GEMMs whenever they are ready); the two ablations are
// forward-only, since the backward does not read the flags. A fourth,
// cuda.flash.sm90.deterministic, runs the backward with its dQ contributions
// added in a fixed order (a run-time flag of the same instances).
#include <memory>
#include <optional>
#include <string>

#include "harness/cuda/cuda_implementation.hpp"
#include "harness/measure/traffic_model.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/device_lengths.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_sm90_backward.hpp"
#include "kernels/cuda/flash_sm90_backward_geometry.hpp"
#include "kernels/cuda/flash_sm90_forward.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"
#include "kernels/cuda/sm90a_device.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

// How the backward adds dQ across CTAs, for the configuration record.
std::string backward_dq_summary(const FlashSm90BackwardShape& shape, bool deterministic) {
  const std::string part =
      "fp32 accumulator in the workspace; each 64x" + std::to_string(shape.dq_part_columns) + " part ";
  if (deterministic) {
    return part + "added with red.global.add.v2.f32 in the key tiles' order (a semaphore per query tile: "
                  "ld.acquire / red.release)";
  }
  if (shape.staged_dq) {
    return part + "staged in shared memory and added with one cp.reduce.async.bulk .add.f32 (" +
           std::to_string(shape.dq_part_columns / 4) + " KiB), in no fixed order";
  }
  return part + "added from registers with red.global.add.v2.f32, in no fixed order";
}


class CudaFlashSm90 final : public CudaImplementation {
 public:
  explicit CudaFlashSm90(Sm90Schedule schedule, bool deterministic = false)
      : schedule_(schedule), deterministic_(deterministic) {}
  std::string_view name() const override {
    if (deterministic_) return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90.deterministic");
    if (!schedule_.softmax_overlaps_pv) return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90.serial");
    if (!schedule_.pingpong) return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90.no_pingpong");
    return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90");
  }
  std::string_view summary() const override {
    if (deterministic_) {
      return "cuda.flash.sm90 with the backward's dQ contributions added in the key tiles' order (a semaphore per "
             "query tile), so that two runs give the same bits: the ablation";
    }
    if (!schedule_.softmax_overlaps_pv) {
      return "cuda.flash.sm90 with the softmax/P·V overlap inside a consumer switched off (a run-time flag): "
             "the ablation";
    }
    if (!schedule_.pingpong) {
      return "cuda.flash.sm90 with the ping-pong between its consumer warpgroups switched off (a run-time flag): "
             "the ablation";
    }
    return "fused FlashAttention-3-class forward and backward for Hopper (sm_90a): TMA loads through mbarrier "
           "pipelines, a producer warpgroup and two wgmma warpgroups (forward: taking turns at the tensor cores, "
           "each tile's softmax overlapping the previous P·V; backward: K and V resident, dQ reduced into fp32); "
           "O(N) memory";
  }
  std::string_view accuracy_baseline() const override { return ATTNBENCH_CUDA_IMPLEMENTATION("cublas"); }

  Verdict availability() const override {
    Verdict available = CudaImplementation::availability();
    if (!available.ok) return available;
    std::string why;
    if (!sm90a_code_runs_here(why)) return Verdict::no(std::string(name()) + ": " + why);
    return Verdict::yes();
  }

  Verdict supports(const Problem& p) const override {
    if (is_ablation()) {
      if (Verdict direction = supports_forward_only(p); !direction.ok) return direction;
    }
    if (deterministic_ && !has_backward(p.direction)) {
      return Verdict::no(std::string(name()) + " is an ablation of the backward; its forward is " +
                         std::string(ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90")) + "'s");
    }
    if (has_backward(p.direction)) {
      if (!Sm90BackwardHeadDims::contains(p.head_dim)) {
        return Verdict::no(std::string(name()) + "'s backward supports head_dim " + Sm90BackwardHeadDims::names() +
                           ", not " + std::to_string(p.head_dim));
      }
    }
    if (!Sm90HeadDims::contains(p.head_dim)) {
      return Verdict::no(std::string(name()) + " supports head_dim " + Sm90HeadDims::names() + ", not " +
                         std::to_string(p.head_dim));
    }
    if (p.heads > kMaxGridHeads || p.batch > kMaxGridBatch) {
      return Verdict::no(std::string(name()) +
                         " launches one CTA row per head and batch element: heads and batch must be at most " +
                         std::to_string(kMaxGridHeads));
    }
    return Verdict::yes();
  }

  // The FlashAttention order: each query tile stays on chip while every
  // visible K/V tile streams past it; M is the CTA's shared memory.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    if (!Sm90HeadDims::contains(p.head_dim)) return std::nullopt;  // no instance, no tiles to model
    const FlashSm90Shape shape = flash_sm90_shape(static_cast<int>(p.head_dim));
    const auto width = static_cast<int>(element_size(element_type(p.dtype)));
    FusedTiling tiling;
    tiling.block_m = shape.block_m;
    tiling.block_n = shape.block_n;
    tiling.shared_bytes = shape.shared_bytes;
    tiling.input = tiling.output = width;
    return fused_traffic(p, tiling);
  }

  std::size_t workspace_bytes(const Problem& p, const ExecutionContext&) const override {
    return device_lengths_bytes(p) + (has_backward(p.direction) ? flash_sm90_backward_workspace_bytes(p) : 0);
  }

  void forward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    launch_flash_sm90_forward(make_attention_params(p, upload_lengths(p, buffers.workspace.data, stream)), p.dtype,
                              buffers, schedule_, stream);
  }

  // The lengths part of the workspace is a multiple of 256 bytes, so the
  // backward's part after it stays 256-byte aligned.
  void backward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    const AttentionParams params = make_attention_params(p, upload_lengths(p, buffers.workspace.data, stream));
    launch_flash_sm90_backward(params, p.dtype, buffers,
                               static_cast<unsigned char*>(buffers.workspace.data) + device_lengths_bytes(p),
                               deterministic_, stream);
  }

  nlohmann::ordered_json configuration(const Problem& p, const ExecutionContext&) const override {
    const FlashSm90Shape shape = flash_sm90_shape(static_cast<int>(p.head_dim));
    nlohmann::ordered_json forward{{"block_m", shape.block_m},
                                   {"block_n", shape.block_n},
                                   {"warpgroups", {{"producer", 1}, {"consumers", shape.consumers}}},
                                   {"stages", shape.stages},
                                   {"softmax_overlaps_pv", schedule_.softmax_overlaps_pv && shape.softmax_overlap_fits},
                                   {"pingpong", schedule_.pingpong},
                                   {"shared_memory_bytes", shape.shared_bytes},
                                   {"loads", "TMA (cp.async.bulk.tensor), 128-byte swizzle, full/empty mbarriers"},
                                   {"mma", "wgmma.mma_async m64nNk16, fp32 accumulate; S: SS, P·V: RS"},
                                   {"softmax", "online, base 2 (ex2.approx), scale folded into log2(e)"}};
    nlohmann::ordered_json configuration{{"forward", forward}};
    if (has_backward(p.direction)) {
      const FlashSm90BackwardShape backward = flash_sm90_backward_shape(static_cast<int>(p.head_dim));
      configuration["backward"] = {
          {"block_m", backward.block_m},
          {"block_n", backward.block_n},
          {"warpgroups", {{"producer", 1}, {"mma", backward.consumers}}},
          {"stages", backward.stages},
          {"shared_memory_bytes", backward.shared_bytes},
          {"loads", "TMA: K and V once per CTA; Q, dO, LSE and D per query tile, full/empty mbarriers"},
          {"mma", std::string("wgmma.mma_async m64nNk16, fp32 accumulate; S^T, dP^T: SS; dV: ") +
                      (backward.p_from_registers ? "RS (P^T from registers)" : "SS (P^T through shared memory)") +
                      "; dK, dQ: SS (dS^T through shared memory)"},
          {"deterministic", deterministic_},
          {"dq", backward_dq_summary(backward, deterministic_)}};
    }
    return configuration;
  }

 private:
  bool is_ablation() const { return !schedule_.softmax_overlaps_pv || !schedule_.pingpong; }

  Sm90Schedule schedule_;
  bool deterministic_;
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{}); }};
const ImplementationRegistration kSerialRegistration{
    [] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{false, true}); }};
const ImplementationRegistration kNoPingpongRegistration{
    [] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{true, false}); }};
const ImplementationRegistration kDeterministicRegistration{
    [] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{}, true); }};

}  // namespace
ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
