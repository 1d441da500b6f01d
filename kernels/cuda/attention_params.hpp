// What a CUDA attention kernel needs to know about its problem, as one trivially
// copyable struct passed by value: the shape, the element strides of Q/O and
// K/V (harness/common/problem.hpp's strides_for, so BSHD and BHSD look alike to a
// kernel), the softmax scale, the mask, the dropout RNG contract and the
// per-batch valid lengths.
//
// Lengths live in device memory only when the problem is padded: without
// padding every batch element has the full lengths and the pointers are null, so
// an unpadded call moves no length data at all. With padding the caller uploads
// Problem::lengths_q then lengths_k (int64, `batch` each) into
// device_lengths_bytes() of its workspace (kernels/cuda/device_lengths.hpp).
//
// Pure C++ (no CUDA headers), so host tests check the offsets against
// strides_for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "harness/common/problem.hpp"
#include "kernels/common/dropout.hpp"
#include "kernels/common/host_device.hpp"
#include "kernels/common/mask.hpp"

namespace attnbench {

struct AttentionParams {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t seqlen_q = 1;
  std::int64_t seqlen_k = 1;
  std::int64_t head_dim = 1;
  // Element strides of Q and O ([batch, seqlen_q, heads, dim]) and of K and V
  // ([batch, seqlen_k, kv_heads, dim]); the dim stride is 1.
  TensorStrides q_strides;
  TensorStrides kv_strides;
  float scale = 1.0f;  // softmax scale tau
  MaskSpec mask;
  DropoutRng dropout;
  const std::int64_t* lengths_q = nullptr;  // device memory, `batch` entries; null: all seqlen_q
  const std::int64_t* lengths_k = nullptr;  // device memory, `batch` entries; null: all seqlen_k

  ATTNBENCH_HD std::int64_t length_q(std::int64_t b) const { return lengths_q ? lengths_q[b] : seqlen_q; }
  ATTNBENCH_HD std::int64_t length_k(std::int64_t b) const { return lengths_k ? lengths_k[b] : seqlen_k; }
  // The kv head that query head h reads (grouped-query attention).
  ATTNBENCH_HD std::int64_t kv_head_of(std::int64_t h) const { return h / (heads / kv_heads); }
  // Element offset of row s of query head h (Q, O) / kv head hkv (K, V) of batch b.
  ATTNBENCH_HD std::int64_t q_offset(std::int64_t b, std::int64_t s, std::int64_t h) const {
    return b * q_strides.batch + s * q_strides.seq + h * q_strides.head;
  }
  ATTNBENCH_HD std::int64_t kv_offset(std::int64_t b, std::int64_t s, std::int64_t hkv) const {
    return b * kv_strides.batch + s * kv_strides.seq + hkv * kv_strides.head;
  }
};
static_assert(std::is_trivially_copyable_v<AttentionParams>, "passed to kernels by value");

// True when some batch element has a valid length below the full one.
inline bool has_padding(const Problem& p) {
  for (std::int64_t b = 0; b < p.batch; ++b) {
    if (p.length_q(b) != p.seqlen_q || p.length_k(b) != p.seqlen_k) return true;
  }
  return false;
}

// Workspace regions of the CUDA implementations start at multiples of 256 bytes.
ATTNBENCH_HD constexpr std::size_t round_up_256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Workspace bytes for the uploaded lengths (lengths_q then lengths_k), a multiple
// of 256; 0 when the problem is not padded.
inline std::size_t device_lengths_bytes(const Problem& p) {
  if (!has_padding(p)) return 0;
  return round_up_256(static_cast<std::size_t>(2 * p.batch) * sizeof(std::int64_t));
}

// `device_lengths` holds lengths_q then lengths_k in device memory, or is null
// for a problem without padding.
inline AttentionParams make_attention_params(const Problem& p, const std::int64_t* device_lengths) {
  AttentionParams params;
  params.batch = p.batch;
  params.heads = p.heads;
  params.kv_heads = p.kv_heads;
  params.seqlen_q = p.seqlen_q;
  params.seqlen_k = p.seqlen_k;
  params.head_dim = p.head_dim;
  params.q_strides = q_strides(p);
  params.kv_strides = kv_strides(p);
  params.scale = static_cast<float>(p.softmax_scale());
  params.mask = p.mask;
  params.dropout = dropout_rng(p);
  if (device_lengths) {
    params.lengths_q = device_lengths;
    params.lengths_k = device_lengths + p.batch;
  }
  return params;
}

}  // namespace attnbench
