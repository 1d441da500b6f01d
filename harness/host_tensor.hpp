// Row access to attention tensors in host memory, for the CPU implementations
// and the oracle: one (batch, head) slice of a [batch, seq, heads, dim] tensor,
// converted to float or double on load and rounded to the buffer type on store.
#pragma once

#include <cstdint>

#include "harness/dtype.hpp"
#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

struct HeadSlice {
  const TensorBuffer* buffer = nullptr;
  TensorStrides strides;
  std::int64_t batch = 0;
  std::int64_t head = 0;
  std::int64_t head_dim = 0;

  std::int64_t index(std::int64_t row, std::int64_t col) const {
    return strides.offset(batch, row, head) + col;
  }

  // Copies rows [row_begin, row_begin + rows) into dst (rows x head_dim, dense).
  template <typename T>
  void load_rows(std::int64_t row_begin, std::int64_t rows, T* dst) const {
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto base = static_cast<std::size_t>(index(row_begin + r, 0));
      for (std::int64_t c = 0; c < head_dim; ++c) {
        dst[r * head_dim + c] =
            static_cast<T>(load_as_double(buffer->data, buffer->type, base + static_cast<std::size_t>(c)));
      }
    }
  }

  // Writes rows [row_begin, row_begin + rows) from src (rows x head_dim, dense).
  template <typename T>
  void store_rows(std::int64_t row_begin, std::int64_t rows, const T* src) const {
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto base = static_cast<std::size_t>(index(row_begin + r, 0));
      for (std::int64_t c = 0; c < head_dim; ++c) {
        store_from_double(buffer->data, buffer->type, base + static_cast<std::size_t>(c),
                          static_cast<double>(src[r * head_dim + c]));
      }
    }
  }
};

// Slices of the query-side tensors (Q, O, dO, dQ) for query head h.
inline HeadSlice query_slice(const Problem& p, const TensorBuffer& buffer, std::int64_t b,
                             std::int64_t h) {
  return HeadSlice{&buffer, q_strides(p), b, h, p.head_dim};
}

// Slices of the key-side tensors (K, V, dK, dV) for kv head hkv.
inline HeadSlice key_slice(const Problem& p, const TensorBuffer& buffer, std::int64_t b,
                           std::int64_t hkv) {
  return HeadSlice{&buffer, kv_strides(p), b, hkv, p.head_dim};
}

}  // namespace attnbench
