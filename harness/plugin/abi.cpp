#include "harness/plugin/abi.hpp"

#include <algorithm>

namespace attnbench {
namespace {

attnbench_strides abi_strides(const TensorStrides& strides) {
  return attnbench_strides{strides.batch, strides.seq, strides.head};
}

std::int32_t abi_direction(Direction direction) {
  switch (direction) {
    case Direction::fwd: return ATTNBENCH_DIRECTION_FWD;
    case Direction::bwd: return ATTNBENCH_DIRECTION_BWD;
    case Direction::fwd_bwd: return ATTNBENCH_DIRECTION_FWD_BWD;
  }
  return ATTNBENCH_DIRECTION_FWD;
}

}  // namespace

std::int32_t abi_dtype(ElementType type) {
  switch (type) {
    case ElementType::f16: return ATTNBENCH_DTYPE_FP16;
    case ElementType::bf16: return ATTNBENCH_DTYPE_BF16;
    case ElementType::f32: return ATTNBENCH_DTYPE_FP32;
    case ElementType::f64: break;
  }
  return 0;
}

AbiProblem::AbiProblem(const Problem& p, ElementType output_type) {
  const auto batch = static_cast<std::size_t>(std::max<std::int64_t>(p.batch, 0));
  lengths_q_.resize(batch);
  lengths_k_.resize(batch);
  bool padded = false;
  for (std::size_t b = 0; b < batch; ++b) {
    lengths_q_[b] = p.length_q(static_cast<std::int64_t>(b));
    lengths_k_[b] = p.length_k(static_cast<std::int64_t>(b));
    padded = padded || lengths_q_[b] != p.seqlen_q || lengths_k_[b] != p.seqlen_k;
  }
  problem_.struct_size = sizeof(attnbench_problem);
  problem_.direction = abi_direction(p.direction);
  problem_.batch = p.batch;
  problem_.heads = p.heads;
  problem_.kv_heads = p.kv_heads;
  problem_.seqlen_q = p.seqlen_q;
  problem_.seqlen_k = p.seqlen_k;
  problem_.head_dim = p.head_dim;
  problem_.input_dtype = abi_dtype(element_type(p.dtype));
  problem_.output_dtype = abi_dtype(output_type);
  problem_.layout = p.layout == Layout::bshd ? ATTNBENCH_LAYOUT_BSHD : ATTNBENCH_LAYOUT_BHSD;
  problem_.causal = p.mask.causal ? 1 : 0;
  problem_.q = abi_strides(q_strides(p));
  problem_.k = abi_strides(kv_strides(p));
  problem_.v = problem_.k;
  problem_.o = problem_.q;
  problem_.align = p.mask.bottom_right ? ATTNBENCH_ALIGN_BOTTOM_RIGHT : ATTNBENCH_ALIGN_TOP_LEFT;
  problem_.padded = padded ? 1 : 0;
  problem_.window_left = p.mask.window_left;
  problem_.window_right = p.mask.window_right;
  problem_.lengths_q = lengths_q_.data();
  problem_.lengths_k = lengths_k_.data();
  problem_.scale = p.softmax_scale();
  problem_.dropout_p = p.dropout.probability;
  problem_.dropout_seed = p.dropout.seed;
  problem_.dropout_offset = p.dropout.offset;
}

void AbiProblem::set_device_lengths(const std::int64_t* lengths_q, const std::int64_t* lengths_k) {
  problem_.device_lengths_q = lengths_q;
  problem_.device_lengths_k = lengths_k;
}

attnbench_buffers abi_buffers(const AttentionBuffers& buffers, std::uint64_t plugin_workspace_bytes) {
  attnbench_buffers abi{};
  abi.struct_size = sizeof(attnbench_buffers);
  abi.q = buffers.q.data;
  abi.k = buffers.k.data;
  abi.v = buffers.v.data;
  abi.d_out = buffers.d_out.data;
  abi.out = buffers.out.data;
  abi.lse = static_cast<float*>(buffers.lse.data);
  abi.d_q = buffers.d_q.data;
  abi.d_k = buffers.d_k.data;
  abi.d_v = buffers.d_v.data;
  abi.workspace = plugin_workspace_bytes ? buffers.workspace.data : nullptr;
  abi.workspace_bytes = plugin_workspace_bytes;
  return abi;
}

attnbench_context abi_context(const ExecutionContext& context, std::int32_t device_ordinal) {
  attnbench_context abi{};
  abi.struct_size = sizeof(attnbench_context);
  abi.threads = context.thread_count();
  abi.stream = context.stream;
  abi.device_ordinal = device_ordinal;
  return abi;
}

std::string_view abi_device_name(std::int32_t device) {
  switch (device) {
    case ATTNBENCH_DEVICE_CPU: return "cpu";
    case ATTNBENCH_DEVICE_CUDA: return "cuda";
    default: return "";
  }
}

std::string implementation_name_problem(std::string_view name, std::int32_t device) {
  constexpr std::size_t kLongest = 64;
  const std::string_view device_name = abi_device_name(device);
  if (device_name.empty()) {
    return "device " + std::to_string(device) + " is none of ATTNBENCH_DEVICE_CPU (1) and ATTNBENCH_DEVICE_CUDA (2)";
  }
  const std::string prefix = std::string(device_name) + ".";
  const std::string rule = "an implementation name is \"" + prefix +
                           "<algorithm>\" of lowercase letters, digits, '_', '-' and '.', at most " +
                           std::to_string(kLongest) + " bytes";
  if (name.size() > kLongest) return "is " + std::to_string(name.size()) + " bytes long; " + rule;
  if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size()) {
    return "does not start with \"" + prefix + "\" followed by a name for its device " + std::string(device_name) +
           "; " + rule;
  }
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!allowed) return "holds a character outside the allowed ones; " + rule;
  }
  if (name.back() == '.' || name.find("..") != std::string_view::npos) return "has an empty part between dots; " + rule;
  return "";
}

}  // namespace attnbench
