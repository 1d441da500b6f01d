// The fp64 oracle (`cpu.reference`): exact attention computed row by row in
// double precision from the same rounded inputs every implementation reads.
//
// The accuracy check calls the functions below on sampled heads and rows; the
// registered implementation runs the same per-row code over every row. Both are
// thread-safe and pure: they read the input buffers (any ElementType) and
// allocate their own results.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

// Oracle values of chosen query rows of one query head.
struct ReferenceRows {
  std::vector<double> out;  // rows.size() x head_dim
  std::vector<double> lse;  // rows.size(); -inf for a row that sees no key
  std::vector<double> d_q;  // rows.size() x head_dim; empty unless with_backward
};

// Exact fp64 attention for query rows `rows` of query head (b, h). `inputs` holds
// q, k, v and, when with_backward, d_out. Each row costs O(seqlen_k * head_dim):
// dQ of row i needs only row i (its D_i comes from the oracle's own O_i).
// Throws std::out_of_range for a batch element, head or row outside the problem.
ReferenceRows reference_query_rows(const Problem& p, const AttentionBuffers& inputs, std::int64_t b,
                                   std::int64_t h, const std::vector<std::int64_t>& rows,
                                   bool with_backward);

// Oracle gradients of one kv head, summed over the query heads that share it.
struct ReferenceKeyGradients {
  std::vector<double> d_k;  // seqlen_k x head_dim
  std::vector<double> d_v;  // seqlen_k x head_dim
};

// Exact fp64 dK and dV of kv head (b, hkv); `inputs` holds q, k, v and d_out.
// Throws std::out_of_range for a batch element or kv head outside the problem.
ReferenceKeyGradients reference_key_gradients(const Problem& p, const AttentionBuffers& inputs,
                                              std::int64_t b, std::int64_t hkv);

}  // namespace attnbench
