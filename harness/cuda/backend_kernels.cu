// Kernels of the CUDA backend: NaN poison of any element type, and the seeded
// inputs of kernels/common/input_distribution.hpp, one thread per element,
// rounded to the problem's dtype exactly as the host does (round to nearest even).
#include "harness/cuda/backend_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/common/input_distribution.hpp"

namespace attnbench::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535u * 1024u ? blocks : 65535u * 1024u);
}

__global__ void empty_kernel() {}

template <typename Word>
__global__ void fill_words(Word* data, std::size_t count, Word value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    data[i] = value;
  }
}

struct InputLayout {
  std::int64_t seqlen, heads, head_dim;
  std::int64_t stride_batch, stride_seq, stride_head;
};

template <typename Element>
__device__ Element round_to(double value);
template <>
__device__ __half round_to<__half>(double value) {
  return __float2half_rn(static_cast<float>(value));
}
template <>
__device__ __nv_bfloat16 round_to<__nv_bfloat16>(double value) {
  return __float2bfloat16_rn(static_cast<float>(value));
}

// Element e of the logical [batch, seq, heads, dim] order, stored by `layout`.
template <typename Element>
__global__ void generate(Element* data, std::size_t count, InputLayout layout, std::uint64_t seed,
                         InputTensor tensor, bool normal, double a, double b) {
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const auto logical = static_cast<std::int64_t>(e);
    const std::int64_t c = logical % layout.head_dim;
    const std::int64_t row = logical / layout.head_dim;
    const std::int64_t h = row % layout.heads;
    const std::int64_t s = (row / layout.heads) % layout.seqlen;
    const std::int64_t batch = row / (layout.heads * layout.seqlen);
    const double value = normal ? input_normal(seed, tensor, e, a, b) : input_uniform(seed, tensor, e, a, b);
    data[batch * layout.stride_batch + s * layout.stride_seq + h * layout.stride_head + c] = round_to<Element>(value);
  }
}

template <typename Element>
void generate_tensor(const Problem& p, const TensorBuffer& buffer, InputTensor tensor, std::int64_t seqlen,
                     std::int64_t heads, cudaStream_t stream) {
  const TensorStrides strides = strides_for(p.layout, seqlen, heads, p.head_dim);
  const InputLayout layout{seqlen, heads, p.head_dim, strides.batch, strides.seq, strides.head};
  generate<Element><<<blocks_for(buffer.elements), kThreads, 0, stream>>>(
      static_cast<Element*>(buffer.data), buffer.elements, layout, p.input.seed, tensor,
      p.input.distribution == Distribution::normal, p.input.a, p.input.b);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

template <typename Element>
void generate_all(const Problem& p, const AttentionBuffers& buffers, cudaStream_t stream) {
  generate_tensor<Element>(p, buffers.q, InputTensor::q, p.seqlen_q, p.heads, stream);
  generate_tensor<Element>(p, buffers.k, InputTensor::k, p.seqlen_k, p.kv_heads, stream);
  generate_tensor<Element>(p, buffers.v, InputTensor::v, p.seqlen_k, p.kv_heads, stream);
  if (has_backward(p.direction)) {
    generate_tensor<Element>(p, buffers.d_out, InputTensor::d_out, p.seqlen_q, p.heads, stream);
  }
}

}  // namespace

void fill_with_nan(const TensorBuffer& buffer, cudaStream_t stream) {
  if (buffer.elements == 0) return;
  const unsigned blocks = blocks_for(buffer.elements);
  switch (buffer.type) {
    case ElementType::f16:
      fill_words<std::uint16_t><<<blocks, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(buffer.data),
                                                                buffer.elements, 0x7e00u);
      break;
    case ElementType::bf16:
      fill_words<std::uint16_t><<<blocks, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(buffer.data),
                                                                buffer.elements, 0x7fc0u);
      break;
    case ElementType::f32:
      fill_words<std::uint32_t><<<blocks, kThreads, 0, stream>>>(static_cast<std::uint32_t*>(buffer.data),
                                                                buffer.elements, 0x7fc00000u);
      break;
    case ElementType::f64:
      fill_words<std::uint64_t><<<blocks, kThreads, 0, stream>>>(static_cast<std::uint64_t*>(buffer.data),
                                                                buffer.elements, 0x7ff8000000000000ull);
      break;
  }
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

void generate_inputs(const Problem& problem, const AttentionBuffers& buffers, cudaStream_t stream) {
  if (problem.dtype == InputDType::fp16) {
    generate_all<__half>(problem, buffers, stream);
  } else {
    generate_all<__nv_bfloat16>(problem, buffers, stream);
  }
}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace attnbench::cuda
