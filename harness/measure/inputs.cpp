#include "harness/measure/inputs.hpp"

#include "kernels/common/input_distribution.hpp"

namespace attnbench {

HostTensor::HostTensor(ElementType type, std::size_t elements)
    : storage(elements * element_size(type)), buffer{storage.data(), type, elements} {}

HostTensor::HostTensor(HostTensor&& other) noexcept
    : storage(std::move(other.storage)), buffer{storage.data(), other.buffer.type, other.buffer.elements} {}

HostTensor& HostTensor::operator=(HostTensor&& other) noexcept {
  storage = std::move(other.storage);
  buffer = TensorBuffer{storage.data(), other.buffer.type, other.buffer.elements};
  return *this;
}

AttentionBuffers HostInputs::buffers() const {
  AttentionBuffers out;
  out.q = q.buffer;
  out.k = k.buffer;
  out.v = v.buffer;
  out.d_out = d_out.buffer;
  return out;
}

namespace {

// Fills a [batch, seqlen, heads, dim] tensor stored in the problem's layout.
HostTensor generate(const Problem& p, InputTensor which, std::int64_t seqlen, std::int64_t heads, int threads) {
  const ElementType type = element_type(p.dtype);
  const auto elements = static_cast<std::size_t>(p.batch * seqlen * heads * p.head_dim);
  HostTensor tensor(type, elements);
  const TensorStrides strides = strides_for(p.layout, seqlen, heads, p.head_dim);
  const std::int64_t rows = p.batch * seqlen * heads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t b = row / (seqlen * heads);
    const std::int64_t s = (row / heads) % seqlen;
    const std::int64_t h = row % heads;
    const std::int64_t stored = strides.offset(b, s, h);
    for (std::int64_t c = 0; c < p.head_dim; ++c) {
      const auto logical = static_cast<std::uint64_t>(row * p.head_dim + c);
      const double value =
          p.input.distribution == Distribution::normal
              ? input_normal(p.input.seed, which, logical, p.input.a, p.input.b)
              : input_uniform(p.input.seed, which, logical, p.input.a, p.input.b);
      store_from_double(tensor.buffer.data, type, static_cast<std::size_t>(stored + c), value);
    }
  }
  return tensor;
}

}  // namespace

HostInputs generate_inputs(const Problem& problem, int threads) {
  HostInputs inputs;
  inputs.q = generate(problem, InputTensor::q, problem.seqlen_q, problem.heads, threads);
  inputs.k = generate(problem, InputTensor::k, problem.seqlen_k, problem.kv_heads, threads);
  inputs.v = generate(problem, InputTensor::v, problem.seqlen_k, problem.kv_heads, threads);
  if (has_backward(problem.direction)) {
    inputs.d_out = generate(problem, InputTensor::d_out, problem.seqlen_q, problem.heads, threads);
  }
  return inputs;
}

HostInputs allocate_inputs(const Problem& problem) {
  const ElementType type = element_type(problem.dtype);
  HostInputs inputs;
  inputs.q = HostTensor(type, static_cast<std::size_t>(q_elements(problem)));
  inputs.k = HostTensor(type, static_cast<std::size_t>(kv_elements(problem)));
  inputs.v = HostTensor(type, static_cast<std::size_t>(kv_elements(problem)));
  if (has_backward(problem.direction)) inputs.d_out = HostTensor(type, static_cast<std::size_t>(q_elements(problem)));
  return inputs;
}

std::uint64_t host_input_bytes(const Problem& problem) {
  const auto width = element_size(element_type(problem.dtype));
  std::uint64_t elements = static_cast<std::uint64_t>(q_elements(problem)) +
                           2 * static_cast<std::uint64_t>(kv_elements(problem));
  if (has_backward(problem.direction)) elements += static_cast<std::uint64_t>(q_elements(problem));
  return elements * width;
}

}  // namespace attnbench
