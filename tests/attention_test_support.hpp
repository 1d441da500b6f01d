// Test helpers for the CPU implementations: problems, host buffers that own
// their memory, seeded random inputs, and forward/backward runs on outputs
// poisoned with NaN.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "baselines/cpu_reference.hpp"
#include "harness/dtype.hpp"
#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"
#include "harness/traffic.hpp"
#include "kernels/common/mask.hpp"

namespace attnbench::test {

// A host tensor that owns its storage.
struct OwnedBuffer {
  std::vector<std::byte> storage;
  TensorBuffer buffer;

  OwnedBuffer() = default;
  OwnedBuffer(ElementType type, std::int64_t elements)
      : storage(static_cast<std::size_t>(elements) * element_size(type)),
        buffer{storage.data(), type, static_cast<std::size_t>(elements)} {}
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  OwnedBuffer(OwnedBuffer&&) = default;  // moving a vector keeps its data pointer
  OwnedBuffer& operator=(OwnedBuffer&&) = default;

  double at(std::int64_t index) const {
    return load_as_double(buffer.data, buffer.type, static_cast<std::size_t>(index));
  }
  void set(std::int64_t index, double value) {
    store_from_double(buffer.data, buffer.type, static_cast<std::size_t>(index), value);
  }
  std::int64_t size() const { return static_cast<std::int64_t>(buffer.elements); }
};

// A problem with the given shape, no mask, no dropout, fp16, BSHD; lengths resolved.
inline Problem make_problem(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads,
                            std::int64_t seqlen_q, std::int64_t seqlen_k, std::int64_t head_dim) {
  Problem p;
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.head_dim = head_dim;
  p.direction = Direction::fwd_bwd;
  resolve_lengths(p);
  return p;
}

// Resolves the lengths again (after the padding spec changed) and checks validity.
inline void finish_problem(Problem& p) {
  resolve_lengths(p);
  const std::vector<ProblemIssue> issues = check_problem(p);
  for (const ProblemIssue& issue : issues) ADD_FAILURE() << issue.key << ": " << issue.message;
}

// Q, K, V and dO in host memory.
struct Inputs {
  OwnedBuffer q, k, v, d_out;
};

inline void fill_normal(OwnedBuffer& tensor, std::mt19937_64& generator) {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::int64_t e = 0; e < tensor.size(); ++e) tensor.set(e, normal(generator));
}

// Independent N(0, 1) inputs, drawn from a seeded generator and stored in `type`.
inline Inputs make_inputs(const Problem& p, std::uint64_t seed, ElementType type) {
  std::mt19937_64 generator(seed);
  Inputs in{OwnedBuffer(type, q_elements(p)), OwnedBuffer(type, kv_elements(p)),
            OwnedBuffer(type, kv_elements(p)), OwnedBuffer(type, q_elements(p))};
  fill_normal(in.q, generator);
  fill_normal(in.k, generator);
  fill_normal(in.v, generator);
  fill_normal(in.d_out, generator);
  return in;
}

// ... stored in the problem's dtype.
inline Inputs make_inputs(const Problem& p, std::uint64_t seed) {
  return make_inputs(p, seed, element_type(p.dtype));
}

// The outputs of one run, and the bytes it counted.
struct Outputs {
  OwnedBuffer out, lse, d_q, d_k, d_v, workspace;
  std::uint64_t forward_read = 0, forward_write = 0;
  std::uint64_t backward_read = 0, backward_write = 0;
};

inline AttentionBuffers view(const Inputs& in, const Outputs& out) {
  AttentionBuffers buffers;
  buffers.q = in.q.buffer;
  buffers.k = in.k.buffer;
  buffers.v = in.v.buffer;
  buffers.d_out = in.d_out.buffer;
  buffers.out = out.out.buffer;
  buffers.lse = out.lse.buffer;
  buffers.d_q = out.d_q.buffer;
  buffers.d_k = out.d_k.buffer;
  buffers.d_v = out.d_v.buffer;
  buffers.workspace = out.workspace.buffer;
  return buffers;
}

// Bytes after the workspace that an implementation must never touch.
inline constexpr std::int64_t kWorkspaceGuardBytes = 256;
inline constexpr std::byte kGuardByte{0xA5};

// Runs the forward (and the backward) of `impl` on fresh output buffers and a
// fresh workspace, all filled with NaN; fails the test if the implementation
// writes past the end of its workspace.
inline Outputs run(Implementation& impl, const Problem& p, const Inputs& in, int threads,
                   bool with_backward = true) {
  TrafficCounter traffic(threads);
  ExecutionContext context{threads, &traffic};
  const ElementType type = impl.output_type(p);
  const auto workspace_bytes = static_cast<std::int64_t>(impl.workspace_bytes(p, context));
  Outputs out;
  out.out = OwnedBuffer(type, q_elements(p));
  out.lse = OwnedBuffer(ElementType::f32, lse_elements(p));
  out.d_q = OwnedBuffer(type, q_elements(p));
  out.d_k = OwnedBuffer(type, kv_elements(p));
  out.d_v = OwnedBuffer(type, kv_elements(p));
  out.workspace = OwnedBuffer(ElementType::f32, (workspace_bytes + kWorkspaceGuardBytes + 3) / 4);
  for (OwnedBuffer* buffer : {&out.out, &out.lse, &out.d_q, &out.d_k, &out.d_v, &out.workspace}) {
    fill_with_nan(buffer->buffer.data, buffer->buffer.type, buffer->buffer.elements);
  }
  std::fill(out.workspace.storage.begin() + workspace_bytes, out.workspace.storage.end(),
            kGuardByte);
  out.workspace.buffer.elements = static_cast<std::size_t>(workspace_bytes / 4);

  const AttentionBuffers buffers = view(in, out);
  impl.forward(p, buffers, context);
  out.forward_read = traffic.read_bytes();
  out.forward_write = traffic.write_bytes();
  if (with_backward) {
    traffic.reset();
    impl.backward(p, buffers, context);
    out.backward_read = traffic.read_bytes();
    out.backward_write = traffic.write_bytes();
  }
  for (auto at = out.workspace.storage.begin() + workspace_bytes; at != out.workspace.storage.end();
       ++at) {
    if (*at != kGuardByte) {
      ADD_FAILURE() << impl.name() << " wrote past the end of its " << workspace_bytes
                    << "-byte workspace";
      break;
    }
  }
  return out;
}

inline Implementation& implementation(std::string_view name) {
  Implementation* impl = ImplementationRegistry::instance().find(name);
  if (impl == nullptr)
    throw std::runtime_error("implementation not registered: " + std::string(name));
  return *impl;
}

// True when some query row of batch element b sees key j.
inline bool key_ever_visible(const Problem& p, std::int64_t b, std::int64_t j) {
  for (std::int64_t i = 0; i < p.length_q(b); ++i) {
    if (is_visible(p.mask, i, j, p.length_q(b), p.length_k(b))) return true;
  }
  return false;
}

inline bool row_sees_a_key(const Problem& p, std::int64_t b, std::int64_t i) {
  return !visible_keys(p.mask, i, p.length_q(b), p.length_k(b)).empty();
}

// Element (b, s, h, x) of a query-side or key-side tensor.
inline std::int64_t q_index(const Problem& p, std::int64_t b, std::int64_t s, std::int64_t h,
                            std::int64_t x) {
  return q_strides(p).offset(b, s, h) + x;
}
inline std::int64_t kv_index(const Problem& p, std::int64_t b, std::int64_t s, std::int64_t hkv,
                             std::int64_t x) {
  return kv_strides(p).offset(b, s, hkv) + x;
}

}  // namespace attnbench::test
