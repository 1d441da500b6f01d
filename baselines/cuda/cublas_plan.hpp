// The host-side plan of cuda.cublas (baselines/cuda/cublas_attention.cu): its
// workspace layout, the column-major GEMM parameters of the forward's
// S = tau Q K^T and O = P~ V and of the backward's dV = P~^T dO, dP = dO V^T,
// dQ = tau dS K and dK = tau dS^T Q, the order of the GEMM batch entries and the
// per-(b, h) operand offsets its pointer arrays hold. Pure C++ (no CUDA headers),
// so tests/test_cuda_host_logic.cpp checks every number here on the CPU,
// including a column-major GEMM emulation that follows these parameters exactly
// as cuBLAS does.
//
// Row-major matrices are column-major transposes: a row-major R x C matrix with
// row stride ld is the column-major C x R matrix with leading dimension ld. So
//   S (Nq x Nk, row-major, ld = score_row_stride) is computed as the
//   column-major S^T = K Q^T:  m = Nk, n = Nq, k = d,
//     A = K (stored d x Nk col-major, lda = K row stride), op(A) = A^T;
//     B = Q (stored d x Nq col-major, ldb = Q row stride), op(B) = B;
//     C = S (Nk x Nq col-major, ldc = score_row_stride);
//   O (Nq x d, row-major, ld = O row stride) as O^T = V^T P~^T:  m = d, n = Nq, k = Nk,
//     A = V (stored d x Nk col-major, lda = V row stride), op(A) = A;
//     B = P~ (stored Nk x Nq col-major, ldb = score_row_stride), op(B) = B;
//     C = O (d x Nq col-major, ldc = O row stride).
// The backward's four products reuse these two forms and one more:
//   dP = dO V^T has S's form (dP^T = V dO^T; V has K's strides, dO has Q's);
//   dQ = tau dS K has O's form (dQ^T = K^T dS^T);
//   dV = P~^T dO as dV^T = dO^T P~:  m = d, n = Nk, k = Nq,
//     A = dO (stored d x Nq col-major, lda = dO row stride), op(A) = A;
//     B = P~ (stored Nk x Nq col-major, ldb = score_row_stride), op(B) = B^T;
//     C = dV (d x Nk col-major, ldc = dV row stride);
//   dK = tau dS^T Q has dV's form (dK^T = Q^T dS).
// Row strides come from the layout (BSHD: heads·d; BHSD: d), so Q, K, V, O, dO,
// dQ, dK and dV are read and written in place, never transposed or copied.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "harness/common/problem.hpp"
#include "kernels/common/host_device.hpp"
#include "kernels/cuda/attention_params.hpp"

namespace attnbench {

// The cuBLAS workspace handed to cublasSetWorkspace: 32 MiB, what NVIDIA
// recommends for Hopper (it is more than Ampere needs).
inline constexpr std::size_t kCublasLibraryWorkspaceBytes = std::size_t{32} << 20;

// Row stride of S and P in elements: Nk rounded up to 8, so every row of S
// (fp32) and of P (16-bit) starts 16-byte aligned, the softmax kernel reads S in
// aligned groups of 4, and every pointer handed to cuBLAS is 16-byte aligned.
inline std::int64_t score_row_stride(const Problem& p) { return (p.seqlen_k + 7) / 8 * 8; }
// Elements of one head's S (and P) matrix.
inline std::int64_t score_head_elements(const Problem& p) { return p.seqlen_q * score_row_stride(p); }

// Byte offsets into the workspace, each a multiple of 256. The forward's regions
// come first; the backward's are 0 bytes unless the direction has a backward.
// Every region persists from the forward to the backward: the backward reads the
// forward's S, P~, lengths and pointer arrays, and never writes them, so
// backward() may run many times after one forward().
struct CublasWorkspaceLayout {
  static constexpr std::size_t kPointerArrays = 6;  // per GEMM batch entry: Q, K, S, P~, V, O
  static constexpr std::size_t kBackwardPointerArrays = 6;  // dO, dP, dS, dQ, dK target, dV target
  std::size_t pointers = 0;       // kPointerArrays arrays of batch·heads pointers
  std::size_t lengths = 0;        // device_lengths_bytes(p) (0 bytes without padding)
  std::size_t scores = 0;         // S: [batch·heads, Nq, score_row_stride] fp32
  std::size_t probabilities = 0;  // P~: same shape, in the input dtype
  // Backward only:
  std::size_t backward_pointers = 0;      // kBackwardPointerArrays arrays of batch·heads pointers
  std::size_t probability_gradients = 0;  // dP = dO V^T: S's shape, fp32
  std::size_t score_gradients = 0;        // dS: S's shape, in the input dtype
  std::size_t key_gradient_sums = 0;      // fp32 dK, then dV at + key_gradient_sum_bytes; only with GQA
  std::size_t library = 0;                // the cuBLAS workspace, kCublasLibraryWorkspaceBytes
  std::size_t total = 0;
};

// Whether dK and dV are summed over a group of query heads (grouped-query
// attention) in the fp32 key_gradient_sums, or written straight by one GEMM each.
inline bool sums_key_gradients(const Problem& p) { return p.heads != p.kv_heads; }

// Bytes of one fp32 sum (dK or dV): K's shape and layout, rounded up to 256.
inline std::size_t key_gradient_sum_bytes(const Problem& p) {
  return round_up_256(static_cast<std::size_t>(kv_elements(p)) * sizeof(float));
}

inline CublasWorkspaceLayout cublas_workspace_layout(const Problem& p) {
  const auto entries = static_cast<std::size_t>(p.batch * p.heads);
  const auto score_elements = entries * static_cast<std::size_t>(score_head_elements(p));
  const std::size_t input_bytes = element_size(element_type(p.dtype));
  const bool backward = has_backward(p.direction);
  const auto if_backward = [backward](std::size_t bytes) { return backward ? round_up_256(bytes) : 0; };
  CublasWorkspaceLayout layout;
  layout.pointers = 0;
  layout.lengths = layout.pointers + round_up_256(CublasWorkspaceLayout::kPointerArrays * entries * sizeof(void*));
  layout.scores = layout.lengths + device_lengths_bytes(p);
  layout.probabilities = layout.scores + round_up_256(score_elements * sizeof(float));
  layout.backward_pointers = layout.probabilities + round_up_256(score_elements * input_bytes);
  layout.probability_gradients =
      layout.backward_pointers + if_backward(CublasWorkspaceLayout::kBackwardPointerArrays * entries * sizeof(void*));
  layout.score_gradients = layout.probability_gradients + if_backward(score_elements * sizeof(float));
  layout.key_gradient_sums = layout.score_gradients + if_backward(score_elements * input_bytes);
  const std::size_t sums = sums_key_gradients(p) ? 2 * key_gradient_sum_bytes(p) : 0;
  layout.library = layout.key_gradient_sums + if_backward(sums);
  layout.total = layout.library + kCublasLibraryWorkspaceBytes;
  return layout;
}

// The order of the GEMM batch entries, shared by every GEMM and pointer array:
// group member first. Entry e = g·(batch·kv_heads) + b·kv_heads + hkv is query
// head h = hkv·group + g of batch element b, i.e. batch index z = b·heads + h of
// S, P~ and LSE. Without GQA (group 1) e = z. The entries of one member g,
// [g·batch·kv_heads, (g + 1)·batch·kv_heads), touch every (b, kv head) once, so
// the backward's dK and dV GEMMs run once per member over that slice of the
// arrays, summing the group's query heads with beta = 1.
ATTNBENCH_HD std::int64_t gemm_entry_batch_index(const AttentionParams& params, std::int64_t e) {
  const std::int64_t group = params.heads / params.kv_heads;
  const std::int64_t per_member = params.batch * params.kv_heads;
  const std::int64_t g = e / per_member;
  const std::int64_t b = (e % per_member) / params.kv_heads;
  const std::int64_t hkv = e % params.kv_heads;
  return b * params.heads + hkv * group + g;
}

// Element offsets of the operands of batch index z = b·heads + h: the query head
// h's rows of Q, O, dO and dQ, its kv head's rows of K, V, dK, dV (and of the fp32
// dK, dV sums, which mirror K's layout), and its S / P~ / dP / dS matrix.
struct BatchOperandOffsets {
  std::int64_t q = 0;  // Q, dO, dQ
  std::int64_t kv = 0;  // K, V, dK, dV
  std::int64_t o = 0;
  std::int64_t score = 0;  // S, P~, dP, dS
};

ATTNBENCH_HD BatchOperandOffsets batch_operand_offsets(const AttentionParams& params, std::int64_t z,
                                                       std::int64_t score_head_elements) {
  const std::int64_t b = z / params.heads;
  const std::int64_t h = z % params.heads;
  BatchOperandOffsets offsets;
  offsets.q = params.q_offset(b, 0, h);
  offsets.kv = params.kv_offset(b, 0, params.kv_head_of(h));
  offsets.o = offsets.q;  // O has Q's shape and layout
  offsets.score = z * score_head_elements;
  return offsets;
}

// Which of BatchOperandOffsets a pointer array follows.
enum class OperandKind : std::int32_t { query, key_value, score };

ATTNBENCH_HD std::int64_t operand_offset(const BatchOperandOffsets& offsets, OperandKind kind) {
  switch (kind) {
    case OperandKind::query:
      return offsets.q;
    case OperandKind::key_value:
      return offsets.kv;
    default:
      return offsets.score;
  }
}

// One pointer array of the workspace: entry e points at base + the offset of
// e's operand (of batch index gemm_entry_batch_index(e)), in elements of
// element_bytes bytes.
struct OperandArray {
  std::byte* base = nullptr;
  std::int64_t element_bytes = 2;
  OperandKind kind = OperandKind::query;
};

ATTNBENCH_HD std::byte* operand_pointer(const OperandArray& array, const AttentionParams& params, std::int64_t e,
                                        std::int64_t score_head_elements) {
  const std::int64_t z = gemm_entry_batch_index(params, e);
  return array.base + operand_offset(batch_operand_offsets(params, z, score_head_elements), array.kind) *
                          array.element_bytes;
}

// One column-major GEMM C = alpha op(A) op(B) + beta C, as cuBLAS takes it.
struct GemmShape {
  bool transpose_a = false;
  bool transpose_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
};

// S^T = K Q^T (see the opening comment).
inline GemmShape score_gemm_shape(const Problem& p) {
  return GemmShape{/*transpose_a=*/true, /*transpose_b=*/false, /*m=*/p.seqlen_k, /*n=*/p.seqlen_q, /*k=*/p.head_dim,
                   /*lda=*/kv_strides(p).seq, /*ldb=*/q_strides(p).seq, /*ldc=*/score_row_stride(p)};
}

// O^T = V^T P~^T (see the opening comment).
inline GemmShape output_gemm_shape(const Problem& p) {
  return GemmShape{/*transpose_a=*/false, /*transpose_b=*/false, /*m=*/p.head_dim, /*n=*/p.seqlen_q, /*k=*/p.seqlen_k,
                   /*lda=*/kv_strides(p).seq, /*ldb=*/score_row_stride(p), /*ldc=*/q_strides(p).seq};
}

// dP^T = V dO^T: S's form, V in K's place and dO in Q's (see the opening comment).
inline GemmShape probability_gradient_gemm_shape(const Problem& p) { return score_gemm_shape(p); }

// dQ^T = K^T dS^T: O's form, K in V's place and dS in P~'s (see the opening comment).
inline GemmShape query_gradient_gemm_shape(const Problem& p) { return output_gemm_shape(p); }

// dV^T = dO^T P~ and dK^T = Q^T dS (see the opening comment); C is dV / dK, or
// their fp32 sums, which have the same layout.
inline GemmShape key_gradient_gemm_shape(const Problem& p) {
  return GemmShape{/*transpose_a=*/false, /*transpose_b=*/true, /*m=*/p.head_dim, /*n=*/p.seqlen_k, /*k=*/p.seqlen_q,
                   /*lda=*/q_strides(p).seq, /*ldb=*/score_row_stride(p), /*ldc=*/kv_strides(p).seq};
}

// cuBLAS's validity rules for the leading dimensions (lda >= rows of A as
// stored, ...) and its int arguments.
inline bool gemm_shape_valid(const GemmShape& g) {
  const std::int64_t rows_a = g.transpose_a ? g.k : g.m;
  const std::int64_t rows_b = g.transpose_b ? g.n : g.k;
  for (std::int64_t value : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc}) {
    if (value < 1 || value > INT_MAX) return false;
  }
  return g.lda >= rows_a && g.ldb >= rows_b && g.ldc >= g.m;
}

}  // namespace attnbench
