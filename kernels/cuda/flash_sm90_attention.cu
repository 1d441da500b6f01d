// cuda.flash.sm90 as the harness sees it: the warp-specialised Hopper forward
// (kernels/cuda/flash_sm90_forward.cu: TMA, mbarrier pipeline, wgmma), forward
// only. Built for sm_90a alone: on any other GPU it is unavailable and says
// why. Its workspace is the per-batch lengths of a padded problem. Registered
// three times, the same kernel instances with the schedule's run-time flags
// (Sm90Schedule) set apart, so that a GPU run measures what each overlap is
// worth: cuda.flash.sm90 (both on), cuda.flash.sm90.serial (each tile's
// softmax after the previous P·V, the consumers still taking turns) and
// cuda.flash.sm90.no_pingpong (the consumers issuing their GEMMs whenever they
// are ready).
#include <memory>
#include <optional>
#include <string>

#include "harness/cuda/cuda_implementation.hpp"
#include "harness/measure/traffic_model.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/device_lengths.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_sm90_forward.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"
#include "kernels/cuda/sm90a_device.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

class CudaFlashSm90 final : public CudaImplementation {
 public:
  explicit CudaFlashSm90(Sm90Schedule schedule) : schedule_(schedule) {}
  std::string_view name() const override {
    if (!schedule_.softmax_overlaps_pv) return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90.serial");
    if (!schedule_.pingpong) return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90.no_pingpong");
    return ATTNBENCH_CUDA_IMPLEMENTATION("flash.sm90");
  }
  std::string_view summary() const override {
    if (!schedule_.softmax_overlaps_pv) {
      return "cuda.flash.sm90 with the softmax/P·V overlap inside a consumer switched off (a run-time flag): "
             "the ablation";
    }
    if (!schedule_.pingpong) {
      return "cuda.flash.sm90 with the ping-pong between its consumer warpgroups switched off (a run-time flag): "
             "the ablation";
    }
    return "fused FlashAttention-3-class forward for Hopper (sm_90a): TMA loads through an mbarrier pipeline, a "
           "producer warpgroup and two wgmma consumer warpgroups taking turns at the tensor cores, each tile's "
           "softmax overlapping the previous P·V; O(N) memory";
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
    if (Verdict direction = supports_forward_only(p); !direction.ok) return direction;
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
    return device_lengths_bytes(p);
  }

  void forward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    launch_flash_sm90_forward(make_attention_params(p, upload_lengths(p, buffers.workspace.data, stream)), p.dtype,
                              buffers, schedule_, stream);
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
    return nlohmann::ordered_json{{"forward", forward}};
  }

 private:
  Sm90Schedule schedule_;
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{}); }};
const ImplementationRegistration kSerialRegistration{
    [] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{false, true}); }};
const ImplementationRegistration kNoPingpongRegistration{
    [] { return std::make_unique<CudaFlashSm90>(Sm90Schedule{true, false}); }};

}  // namespace
ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
