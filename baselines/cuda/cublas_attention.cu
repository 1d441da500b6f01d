// cuda.cublas: the materializing (standard) attention of DESIGN §1, forward and
// backward, the baseline every fused kernel's accuracy is held against. Each
// step writes its full result to device memory.
//
// Forward, three steps:
//   1. S = tau Q K^T: cublasGemmBatchedEx over the batch x heads GEMM entries,
//      A/B in the input dtype (CUDA_R_16F / CUDA_R_16BF), C = S in fp32
//      (CUDA_R_32F), CUBLAS_COMPUTE_32F, with tau applied as the GEMM's alpha;
//   2. launch_masked_softmax (softmax_kernel.cu): P~ = dropout(softmax(S + mask))
//      in fp32, stored rounded once to the input dtype, and LSE (fp32, natural
//      log);
//   3. O = P~ V: cublasGemmBatchedEx, A/B/C in the input dtype, fp32 compute.
// Backward (after a forward, whose S, P~, LSE and O it reads and never writes,
// so it may run many times after one forward), five steps:
//   1. dV = P~^T dO: batched GEMM, input dtype in, fp32 compute;
//   2. dP = dO V^T: batched GEMM, C = dP in fp32 (the gradient of P~);
//   3. launch_score_gradient (softmax_kernel.cu): per row D = rowsum(dO o O)
//      (fp32), P = exp(S - LSE) recomputed in fp32 from the forward's S, the
//      dropout factors Z/(1-p) regenerated from the contract's Philox words (the
//      forward's), dS = P o (dP o Z/(1-p) - D) stored rounded to the input dtype
//      (cuBLAS takes no fp32 x 16-bit product); zeros where masked or padded;
//   4. dQ = tau dS K: batched GEMM, tau as alpha;
//   5. dK = tau dS^T Q: batched GEMM, tau as alpha.
// Why S and not P: with dropout, dS needs P where P~ was dropped (Z = 0), which
// P~ no longer holds; the forward's fp32 S with its LSE gives P exactly, at fp32
// precision, and costs no extra buffer (S is kept anyway).
// The N^2 buffers in device memory, each [batch·heads, Nq, round_up(Nk, 8)]:
//   S fp32 and P~ in the input dtype (forward, kept for the backward);
//   dP fp32 and dS in the input dtype (backward only).
// That is 6 bytes per score element for the forward and 12 with a backward (fp16
// and bf16); cublas_workspace_layout has the exact regions.
// Grouped-query attention: dK and dV of a kv head sum over its group's query
// heads. The GEMM entries are ordered group member first (gemm_entry_batch_index),
// so steps 1 and 5 run once per member g over that member's batch x kv_heads
// entries, with beta = 0 for the first member and 1 after, into fp32 sums in the
// workspace (K's layout), which a last kernel rounds to dK and dV. Without GQA
// the two GEMMs write dK and dV directly in the input dtype (beta = 0).
//
// Every GEMM reads and writes its tensors in place in their BSHD or BHSD layout
// (no transpose copies): cublas_plan.hpp gives the column-major parameters. The
// pointer arrays are built on the device by a small kernel (operand_pointer),
// six for the forward, six more for the backward, so a timed call copies nothing
// from the host except, in the forward of a padded problem, the per-batch
// lengths (the backward reuses the forward's copy).
//
// Math mode: CUBLAS_DEFAULT_MATH (tensor cores on 16-bit inputs with fp32
// accumulation; no reduced-precision reductions). Every byte comes from the
// harness workspace (cublas_workspace_layout), including cuBLAS's own workspace,
// handed over with cublasSetWorkspace on every call. The handle is created on
// the first call.
//
// Rows with no visible key (masked, or padded rows i >= Lq) get an all-zero P~
// row and LSE = -inf from the softmax, hence an all-zero O row, and an all-zero
// dS row, hence zero dQ rows and no share of dK and dV; keys no row sees
// (j >= Lk) get zero dS and P~ columns, hence zero dK and dV rows.
// Assumes the inputs (dO included) are finite over the whole padded grid
// (0 x V must be 0).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "baselines/cuda/cublas_plan.hpp"
#include "baselines/cuda/softmax_kernel.hpp"
#include "harness/cuda/cuda_check.hpp"
#include "harness/cuda/cuda_implementation.hpp"
#include "harness/measure/traffic_model.hpp"
#include "kernels/cuda/attention_params.hpp"
#include "kernels/cuda/device_lengths.hpp"
#include "kernels/cuda/grid_stride.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

constexpr int kPointerThreads = 256;

// The arrays of a pointer region, `entries` pointers each, in this order.
enum ForwardArray : int { kQuery, kKey, kScores, kProbabilities, kValue, kOutput };
enum BackwardArray : int { kDOut, kProbabilityGradients, kScoreGradients, kDQuery, kDKey, kDValue };
static_assert(CublasWorkspaceLayout::kPointerArrays == kOutput + 1, "one array per ForwardArray");
static_assert(CublasWorkspaceLayout::kBackwardPointerArrays == kDValue + 1, "one array per BackwardArray");
constexpr std::size_t kArraysPerRegion = CublasWorkspaceLayout::kPointerArrays;
static_assert(CublasWorkspaceLayout::kBackwardPointerArrays == kArraysPerRegion, "one kernel builds both regions");

// What a pointer region holds: its arrays' operands, and where it is.
struct PointerTable {
  OperandArray operands[kArraysPerRegion];
  void** arrays;  // kArraysPerRegion x entries
};

// One thread per GEMM batch entry e (grid-stride).
__global__ void build_pointer_arrays(AttentionParams params, std::int64_t score_head_elements, PointerTable table) {
  const std::int64_t entries = params.batch * params.heads;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < entries; e += stride) {
    for (std::size_t a = 0; a < kArraysPerRegion; ++a) {
      table.arrays[static_cast<std::int64_t>(a) * entries + e] =
          operand_pointer(table.operands[a], params, e, score_head_elements);
    }
  }
}

// Array `index` of the pointer region at `region`.
struct PointerArrayRef {
  std::byte* region;
  std::int64_t entries;
  int index;
  // The array from GEMM entry `first` on.
  void* const* from(std::int64_t first = 0) const {
    return reinterpret_cast<void**>(region) + index * entries + first;
  }
};

void launch_build_pointer_arrays(const Problem& p, const AttentionParams& params,
                                 const std::array<OperandArray, kArraysPerRegion>& operands, std::byte* region,
                                 cudaStream_t stream) {
  PointerTable table{};
  std::copy(operands.begin(), operands.end(), table.operands);
  table.arrays = reinterpret_cast<void**>(region);
  const std::int64_t entries = p.batch * p.heads;
  const auto blocks =
      static_cast<unsigned>(grid_stride_blocks((entries + kPointerThreads - 1) / kPointerThreads, 1 << 20));
  launch_kernel(&build_pointer_arrays, blocks, kPointerThreads, 0, stream, params, score_head_elements(p), table);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
}

// The operands of one batched GEMM: pointer arrays and their element types.
struct GemmOperands {
  void* const* a;
  void* const* b;
  cudaDataType ab_type;
  void* const* c;
  cudaDataType c_type;
};

// C = alpha op(A) op(B) + beta C for every entry; with beta = 0 C is never read.
void batched_gemm(cublasHandle_t handle, const GemmShape& g, float alpha, const GemmOperands& x, float beta,
                  std::int64_t entries) {
  ATTNBENCH_CUBLAS_CHECK(cublasGemmBatchedEx(
      handle, g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), &alpha, x.a, x.ab_type,
      static_cast<int>(g.lda), x.b, x.ab_type, static_cast<int>(g.ldb), &beta, x.c, x.c_type, static_cast<int>(g.ldc),
      static_cast<int>(entries), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

std::string describe(const GemmShape& g) {
  return "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
         " lda=" + std::to_string(g.lda) + " ldb=" + std::to_string(g.ldb) + " ldc=" + std::to_string(g.ldc);
}

// A refusal naming the GEMM, or yes.
Verdict gemm_supported(const GemmShape& g, const char* what) {
  if (gemm_shape_valid(g)) return Verdict::yes();
  return Verdict::no(std::string(what) +
                     " is not a valid cuBLAS GEMM (int sizes, leading dimensions at least the rows): " + describe(g));
}

cudaDataType input_data_type(const Problem& p) { return p.dtype == InputDType::fp16 ? CUDA_R_16F : CUDA_R_16BF; }
std::int64_t input_bytes(const Problem& p) { return static_cast<std::int64_t>(element_size(element_type(p.dtype))); }

// True when S's bytes (batch·heads·Nq·row_stride fp32 elements) fit the int64
// indices of the softmax kernel and the workspace layout's size_t arithmetic.
bool score_bytes_fit(const Problem& p) {
  std::int64_t bytes = 0;
  return !__builtin_mul_overflow(p.batch, p.heads, &bytes) && !__builtin_mul_overflow(bytes, p.seqlen_q, &bytes) &&
         !__builtin_mul_overflow(bytes, score_row_stride(p), &bytes) &&
         !__builtin_mul_overflow(bytes, static_cast<std::int64_t>(sizeof(float)), &bytes);
}

class CublasAttention final : public CudaImplementation {
 public:
  CublasAttention() = default;
  CublasAttention(const CublasAttention&) = delete;
  CublasAttention& operator=(const CublasAttention&) = delete;
  // The handle is released only while the device still answers: after a lost
  // context, or once the CUDA runtime is unloading at exit, cublasDestroy could
  // fail or crash, and a destructor must not throw.
  ~CublasAttention() override {
    if (handle_ && cudaDeviceSynchronize() == cudaSuccess) cublasDestroy(handle_);
  }

  std::string_view name() const override { return ATTNBENCH_CUDA_IMPLEMENTATION("cublas"); }
  std::string_view summary() const override {
    return "materializing attention: cuBLAS batched GEMMs with S, P~ (and dP, dS for the backward) in device memory, "
           "masked softmax + dropout and score-gradient kernels";
  }

  Verdict supports(const Problem& p) const override {
    const std::int64_t entries = p.batch * p.heads;
    if (entries > INT_MAX) {
      return Verdict::no("cuda.cublas batches its GEMMs over batch x heads = " + std::to_string(entries) +
                         " entries; cuBLAS takes at most " + std::to_string(INT_MAX));
    }
    // dP and dQ have the forms of S and O (cublas_plan.hpp), so only dK and dV
    // add a GEMM to check.
    for (const Verdict& gemm : {gemm_supported(score_gemm_shape(p), "S = tau Q K^T"),
                                gemm_supported(output_gemm_shape(p), "O = P~ V"),
                                has_backward(p.direction) ? gemm_supported(key_gradient_gemm_shape(p), "dV = P~^T dO")
                                                          : Verdict::yes()}) {
      if (!gemm.ok) return gemm;
    }
    if (!score_bytes_fit(p)) {
      return Verdict::no("S would hold batch x heads x seqlen_q x " + std::to_string(score_row_stride(p)) +
                         " fp32 elements, more bytes than a 64-bit index reaches");
    }
    return Verdict::yes();
  }

  // S and dP in fp32; Q, K, V, dO, P~, dS, O, dQ, dK and dV in the input dtype.
  // The standard model counts dS at the scores' width and P read twice by the
  // backward, where this backward stores dS in the input dtype and reads P~ once
  // and S once.
  std::optional<TrafficModel> modelled_traffic(const Problem& p) const override {
    const int input = static_cast<int>(input_bytes(p));
    return standard_traffic(p, StandardWidths{input, input, 4, input});
  }

  std::size_t workspace_bytes(const Problem& p, const ExecutionContext&) const override {
    return cublas_workspace_layout(p).total;
  }

  void forward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    const CublasWorkspaceLayout layout = cublas_workspace_layout(p);
    auto* workspace = static_cast<std::byte*>(buffers.workspace.data);
    const AttentionParams params = make_attention_params(p, upload_lengths(p, workspace + layout.lengths, stream));
    const std::int64_t entries = p.batch * p.heads;
    const std::int64_t element = input_bytes(p);
    auto* scores = reinterpret_cast<float*>(workspace + layout.scores);
    std::byte* probabilities = workspace + layout.probabilities;
    std::byte* region = workspace + layout.pointers;

    std::array<OperandArray, kArraysPerRegion> operands{};
    operands[kQuery] = {static_cast<std::byte*>(buffers.q.data), element, OperandKind::query};
    operands[kKey] = {static_cast<std::byte*>(buffers.k.data), element, OperandKind::key_value};
    operands[kScores] = {workspace + layout.scores, sizeof(float), OperandKind::score};
    operands[kProbabilities] = {probabilities, element, OperandKind::score};
    operands[kValue] = {static_cast<std::byte*>(buffers.v.data), element, OperandKind::key_value};
    operands[kOutput] = {static_cast<std::byte*>(buffers.out.data), element, OperandKind::query};
    launch_build_pointer_arrays(p, params, operands, region, stream);

    const cublasHandle_t handle = handle_on(stream, workspace + layout.library);
    const cudaDataType input_type = input_data_type(p);
    const auto array = [&](int index) { return PointerArrayRef{region, entries, index}.from(); };
    batched_gemm(handle, score_gemm_shape(p), params.scale,
                 GemmOperands{array(kKey), array(kQuery), input_type, array(kScores), CUDA_R_32F}, 0.0f, entries);
    launch_masked_softmax(params, scores, probabilities, p.dtype, score_row_stride(p),
                          static_cast<float*>(buffers.lse.data), stream);
    batched_gemm(handle, output_gemm_shape(p), 1.0f,
                 GemmOperands{array(kValue), array(kProbabilities), input_type, array(kOutput), input_type}, 0.0f,
                 entries);
  }

  // Runs after forward() on the same buffers and workspace: reads its pointer
  // arrays, S, P~, LSE, O and (padded problems) uploaded lengths.
  void backward(const Problem& p, const AttentionBuffers& buffers, ExecutionContext& context) override {
    const cudaStream_t stream = stream_of(context);
    const CublasWorkspaceLayout layout = cublas_workspace_layout(p);
    auto* workspace = static_cast<std::byte*>(buffers.workspace.data);
    const auto* lengths = has_padding(p) ? reinterpret_cast<const std::int64_t*>(workspace + layout.lengths) : nullptr;
    const AttentionParams params = make_attention_params(p, lengths);
    const std::int64_t entries = p.batch * p.heads;
    const std::int64_t element = input_bytes(p);
    const bool sums = sums_key_gradients(p);
    auto* key_sums = reinterpret_cast<float*>(workspace + layout.key_gradient_sums);
    auto* value_sums = reinterpret_cast<float*>(workspace + layout.key_gradient_sums + key_gradient_sum_bytes(p));
    std::byte* forward_region = workspace + layout.pointers;
    std::byte* region = workspace + layout.backward_pointers;

    std::array<OperandArray, kArraysPerRegion> operands{};
    operands[kDOut] = {static_cast<std::byte*>(buffers.d_out.data), element, OperandKind::query};
    operands[kProbabilityGradients] = {workspace + layout.probability_gradients, sizeof(float), OperandKind::score};
    operands[kScoreGradients] = {workspace + layout.score_gradients, element, OperandKind::score};
    operands[kDQuery] = {static_cast<std::byte*>(buffers.d_q.data), element, OperandKind::query};
    if (sums) {
      operands[kDKey] = {reinterpret_cast<std::byte*>(key_sums), sizeof(float), OperandKind::key_value};
      operands[kDValue] = {reinterpret_cast<std::byte*>(value_sums), sizeof(float), OperandKind::key_value};
    } else {
      operands[kDKey] = {static_cast<std::byte*>(buffers.d_k.data), element, OperandKind::key_value};
      operands[kDValue] = {static_cast<std::byte*>(buffers.d_v.data), element, OperandKind::key_value};
    }
    launch_build_pointer_arrays(p, params, operands, region, stream);

    const cublasHandle_t handle = handle_on(stream, workspace + layout.library);
    const cudaDataType input_type = input_data_type(p);
    const cudaDataType key_gradient_type = sums ? CUDA_R_32F : input_type;
    const auto forward_array = [&](int index) { return PointerArrayRef{forward_region, entries, index}; };
    const auto backward_array = [&](int index) { return PointerArrayRef{region, entries, index}; };
    // dV and dK: one GEMM per group member over its batch x kv_heads entries.
    const std::int64_t member_entries = p.batch * p.kv_heads;
    const auto key_gradient_gemms = [&](float alpha, const PointerArrayRef& a, const PointerArrayRef& b,
                                        const PointerArrayRef& c) {
      for (std::int64_t g = 0; g < p.head_group(); ++g) {
        const std::int64_t first = g * member_entries;
        batched_gemm(handle, key_gradient_gemm_shape(p), alpha,
                     GemmOperands{a.from(first), b.from(first), input_type, c.from(first), key_gradient_type},
                     g == 0 ? 0.0f : 1.0f, member_entries);
      }
    };

    key_gradient_gemms(1.0f, backward_array(kDOut), forward_array(kProbabilities),
                       backward_array(kDValue));  // dV = P~^T dO
    batched_gemm(handle, probability_gradient_gemm_shape(p), 1.0f,  // dP = dO V^T
                 GemmOperands{forward_array(kValue).from(), backward_array(kDOut).from(), input_type,
                              backward_array(kProbabilityGradients).from(), CUDA_R_32F},
                 0.0f, entries);
    const ScoreGradientTensors tensors{reinterpret_cast<const float*>(workspace + layout.scores),
                                       reinterpret_cast<const float*>(workspace + layout.probability_gradients),
                                       buffers.out.data,
                                       buffers.d_out.data,
                                       static_cast<const float*>(buffers.lse.data),
                                       workspace + layout.score_gradients};
    launch_score_gradient(params, tensors, p.dtype, score_row_stride(p), stream);
    batched_gemm(handle, query_gradient_gemm_shape(p), params.scale,  // dQ = tau dS K
                 GemmOperands{forward_array(kKey).from(), backward_array(kScoreGradients).from(), input_type,
                              backward_array(kDQuery).from(), input_type},
                 0.0f, entries);
    key_gradient_gemms(params.scale, forward_array(kQuery), backward_array(kScoreGradients),
                       backward_array(kDKey));  // dK = tau dS^T Q
    if (sums) {
      launch_key_gradient_conversion(key_sums, value_sums, buffers.d_k.data, buffers.d_v.data, kv_elements(p),
                                     p.dtype, stream);
    }
  }

  nlohmann::ordered_json configuration(const Problem& p, const ExecutionContext&) const override {
    nlohmann::ordered_json configuration{{"gemm", "cublasGemmBatchedEx"},
                                         {"gemm_compute", "CUBLAS_COMPUTE_32F"},
                                         {"math_mode", "CUBLAS_DEFAULT_MATH"},
                                         {"scores_dtype", "fp32"},
                                         {"softmax_scale_applied_in", "score GEMM alpha"},
                                         {"softmax_precision", "fp32"},
                                         {"probabilities_dtype", to_string(p.dtype)},
                                         {"score_row_stride", score_row_stride(p)},
                                         {"cublas_workspace_bytes", kCublasLibraryWorkspaceBytes}};
    if (has_backward(p.direction)) {
      configuration["backward"] = {
          {"probabilities", "recomputed in fp32 as exp(S - LSE) from the forward's fp32 S"},
          {"dropout_mask", "regenerated from the Philox contract (the forward's words)"},
          {"probability_gradient_dtype", "fp32"},
          {"score_gradient_dtype", to_string(p.dtype)},
          {"score_gradient_precision", "fp32, D = rowsum(dO o O) in the same kernel"},
          {"softmax_scale_applied_in", "dQ and dK GEMM alpha"},
          {"key_value_gradients", sums_key_gradients(p)
                                      ? "fp32 sums over the group's query heads (one GEMM per member, beta = 1), "
                                        "then rounded to " + to_string(p.dtype)
                                      : "written by the GEMMs in " + to_string(p.dtype)}};
    }
    return configuration;
  }

 private:
  // The handle, bound to this call's stream and workspace. cublasSetStream
  // resets the workspace to cuBLAS's own pool, so the workspace is set after it.
  cublasHandle_t handle_on(cudaStream_t stream, std::byte* library_workspace) {
    if (!handle_) {
      cublasHandle_t created = nullptr;
      ATTNBENCH_CUBLAS_CHECK(cublasCreate(&created));
      handle_ = created;
      ATTNBENCH_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    }
    ATTNBENCH_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    ATTNBENCH_CUBLAS_CHECK(cublasSetWorkspace(handle_, library_workspace, kCublasLibraryWorkspaceBytes));
    return handle_;
  }

  cublasHandle_t handle_ = nullptr;
};

const ImplementationRegistration kRegistration{[] { return std::make_unique<CublasAttention>(); }};

}  // namespace
ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
