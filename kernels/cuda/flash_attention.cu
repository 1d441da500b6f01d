// cuda.flash as the harness sees it: the fused FlashAttention-2 forward
// (kernels/cuda/flash_forward.cu) and backward (kernels/cuda/flash_backward.cu)
// behind one registered implementation. Its workspace is O(N): the per-batch
// lengths of a padded problem, then, with a backward, D, the scaled LSE and the
// fp32 dQ accumulator.
#include <memory>
#include <optional>
#include <string>

#include "harness/cuda/cuda_implementation.hpp"
#include "harness/measure/traffic_model.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/device_lengths.hpp"
#include "kernels/cuda/flash_backward.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_forward.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

class CudaFlash final : public CudaImplementation {
 public:
  std::string_view name() const override { return ATTNBENCH_CUDA_IMPLEMENTATION("flash"); }
  std::string_view summary() const override {
    return "fused FlashAttention-2 forward and backward: mma.sync tensor cores, cp.async double buffering, online "
           "softmax in registers; O(N) memory";
  }
  std::string_view accuracy_baseline() const override { return ATTNBENCH_CUDA_IMPLEMENTATION("cublas"); }

  Verdict supports(const Problem& p) const override {
    if (p.head_dim != 64 && p.head_dim != 128) {
      return Verdict::no(std::string(name()) + " supports head_dim 64 and 128, not " + std::to_string(p.head_dim));
    }
    if (p.heads > kMaxGridHeads || p.batch > kMaxGridBatch) {
      return Verdict::no(std::string(name()) + " launches one CTA row per head and batch element: heads and batch must be at most " +
                         std::to_string(kMaxGridHeads));
    }
    return Verdict::yes();
  }

  // The FlashAttention-2 order: each query tile of block_m rows stays on chip
  // while every visible K/V tile streams past it; M is the CTA's shared memory.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    const auto head_dim = static_cast<int>(p.head_dim);
    const auto width = static_cast<int>(element_size(element_type(p.dtype)));
    FusedTiling tiling;
    tiling.block_m = flash_tile_shape(head_dim).block_m;
    tiling.block_n = flash_tile_shape(head_dim).block_n;
    tiling.shared_bytes = flash_shared_bytes(head_dim, width);
    tiling.input = tiling.output = width;
    return fused_traffic(p, tiling);
  }

  std::size_t workspace_bytes(const Problem& p, const ExecutionContext&) const override {
    return device_lengths_bytes(p) + (has_backward(p.direction) ? flash_backward_workspace_bytes(p) : 0);
  }

  void forward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    launch_flash_forward(make_attention_params(p, upload_lengths(p, buffers.workspace.data, stream)), p.dtype,
                         buffers, stream);
  }

  // The lengths part of the workspace is a multiple of 256 bytes, so the
  // backward's part after it stays 256-byte aligned.
  void backward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    const AttentionParams params = make_attention_params(p, upload_lengths(p, buffers.workspace.data, stream));
    launch_flash_backward(p, params, buffers, static_cast<unsigned char*>(buffers.workspace.data) + device_lengths_bytes(p),
                          stream);
  }

  nlohmann::ordered_json configuration(const Problem& p, const ExecutionContext&) const override {
    const FlashTileShape shape = flash_tile_shape(static_cast<int>(p.head_dim));
    nlohmann::ordered_json forward{{"block_m", shape.block_m},
                                   {"block_n", shape.block_n},
                                   {"warps", shape.warps},
                                   {"stages", kFlashStages},
                                   {"shared_memory_bytes", flash_shared_bytes(static_cast<int>(p.head_dim), 2)},
                                   {"mma", "mma.sync.m16n8k16, fp32 accumulate"},
                                   {"softmax", "online, base 2 (ex2.approx), scale folded into log2(e)"}};
    nlohmann::ordered_json configuration{{"forward", forward}};
    if (has_backward(p.direction)) {
      const FlashBackwardShape backward = flash_backward_shape(static_cast<int>(p.head_dim));
      configuration["backward"] = {
          {"block_m", backward.block_m},
          {"block_n", backward.block_n},
          {"warps", backward.warps},
          {"slice_m", backward.slice_m},
          {"stages", kFlashBackwardStages},
          {"shared_memory_bytes", flash_backward_shared_layout(static_cast<int>(p.head_dim), 2).total},
          {"dq", "fp32 accumulator in the workspace, atomic adds, then converted"}};
    }
    return configuration;
  }
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CudaFlash>(); }};

}  // namespace
ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
