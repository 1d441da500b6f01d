// The cuBLAS calls of cuda.cublas on the simulator: the same signatures as
// cublas_v2.h, computed on the host with the argument checks cuBLAS documents
// for cublasGemmBatchedEx (CUBLAS_STATUS_INVALID_VALUE for negative sizes, a
// leading dimension smaller than its matrix's rows, an unknown operation or a
// negative batch count; CUBLAS_STATUS_NOT_SUPPORTED for a combination of types
// and compute type that cuBLAS does not offer; CUBLAS_STATUS_NOT_INITIALIZED
// without a handle). Every matrix an entry reads or writes must lie inside one
// buffer of the device (device_memory.hpp), as the harness allocated it; one
// that does not fails the call as a DeviceError naming the operand and entry.
//
// Arithmetic: C = alpha·op(A)·op(B) + beta·C, column-major, products and sums
// in double, rounded once to C's type (nearest even); with beta = 0, C is not
// read (it may hold NaN), as cuBLAS documents. CUBLAS_COMPUTE_32F accumulates
// in fp32 on a GPU, so a GPU's result can differ in the last bits.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/cudasim/cublas_api.hpp"
#include "harness/cudasim/device_memory.hpp"
#include "harness/dtype.hpp"
#include "harness/errors.hpp"

namespace cudasim {

struct CublasContext {
  Stream* stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cublasMath math = CUBLAS_DEFAULT_MATH;
};

namespace {

std::size_t type_bytes(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

double load(const void* matrix, cudaDataType type, std::int64_t index) {
  switch (type) {
    case CUDA_R_32F:
      return static_cast<const float*>(matrix)[index];
    case CUDA_R_16F:
      return attnbench::half_to_float(static_cast<const std::uint16_t*>(matrix)[index]);
    case CUDA_R_16BF:
      return attnbench::bfloat16_to_float(static_cast<const std::uint16_t*>(matrix)[index]);
  }
  return 0.0;
}

void store(void* matrix, cudaDataType type, std::int64_t index, double value) {
  const auto single = static_cast<float>(value);
  switch (type) {
    case CUDA_R_32F:
      static_cast<float*>(matrix)[index] = single;
      break;
    case CUDA_R_16F:
      static_cast<std::uint16_t*>(matrix)[index] = attnbench::float_to_half(single);
      break;
    case CUDA_R_16BF:
      static_cast<std::uint16_t*>(matrix)[index] = attnbench::float_to_bfloat16(single);
      break;
  }
}

bool supported(cudaDataType ab, cudaDataType c, cublasComputeType compute) {
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC) return false;
  if (ab == CUDA_R_32F) return c == CUDA_R_32F;
  return c == ab || c == CUDA_R_32F;  // 16F x 16F -> 16F | 32F, 16BF x 16BF -> 16BF | 32F
}

// A column-major rows x columns matrix with leading dimension ld spans
// (columns - 1)·ld + rows elements.
void check_matrix(const void* matrix, std::int64_t rows, std::int64_t columns, std::int64_t ld, cudaDataType type,
                  const char* operand, int entry) {
  if (rows == 0 || columns == 0) return;
  const auto bytes = static_cast<std::size_t>((columns - 1) * ld + rows) * type_bytes(type);
  std::string why;
  const auto placement = DeviceMemoryRegistry::instance().place(matrix, bytes, &why);
  if (placement == DeviceMemoryMap::Placement::inside) return;
  throw attnbench::DeviceError("cudasim: cublasGemmBatchedEx reads or writes " + std::string(operand) + "[" +
                                   std::to_string(entry) + "] (" + std::to_string(rows) + " x " +
                                   std::to_string(columns) + ", ld " + std::to_string(ld) + ") " +
                                   (placement == DeviceMemoryMap::Placement::host
                                        ? "in host memory, not in a device buffer"
                                        : "outside its device buffer: " + why),
                               false);
}

void check_pointer_array(const void* const* array, int entries, const char* operand) {
  std::string why;
  const auto bytes = static_cast<std::size_t>(entries) * sizeof(void*);
  if (DeviceMemoryRegistry::instance().place(array, bytes, &why) == DeviceMemoryMap::Placement::inside) return;
  throw attnbench::DeviceError("cudasim: cublasGemmBatchedEx's pointer array " + std::string(operand) + " (" +
                                   std::to_string(entries) + " entries) is not inside a device buffer" +
                                   (why.empty() ? "" : ": " + why),
                               false);
}

}  // namespace
}  // namespace cudasim

using cudasim::CublasContext;
using cudasim::load;
using cudasim::store;
using cudasim::supported;

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new CublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
// cublasSetStream also returns the handle to cuBLAS's own workspace pool.
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, std::size_t bytes) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes > 0 && reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_PEDANTIC_MATH) return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS (simulated)";
  }
}
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return "simulated cuBLAS error";
  }
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const a_array[], cudaDataType a_type,
                                   int lda, const void* const b_array[], cudaDataType b_type, int ldb,
                                   const void* beta, void* const c_array[], cudaDataType c_type, int ldc,
                                   int batch_count, cublasComputeType_t compute_type, cublasGemmAlgo_t) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (handle->stream && handle->stream->captured) {
    handle->stream->capture_refusal = "the simulator's cuBLAS computes on the host at the call, so it cannot be captured";
    return CUBLAS_STATUS_SUCCESS;
  }
  const auto valid_operation = [](cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; };
  const int a_rows = transa == CUBLAS_OP_N ? m : k, a_columns = transa == CUBLAS_OP_N ? k : m;
  const int b_rows = transb == CUBLAS_OP_N ? k : n, b_columns = transb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k < 0 || batch_count < 0 || !valid_operation(transa) || !valid_operation(transb) ||
      lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m) || !alpha || !beta) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (a_type != b_type || !supported(a_type, c_type, compute_type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batch_count == 0) return CUBLAS_STATUS_SUCCESS;
  cudasim::check_pointer_array(a_array, batch_count, "Aarray");
  cudasim::check_pointer_array(b_array, batch_count, "Barray");
  cudasim::check_pointer_array(c_array, batch_count, "Carray");
  const double a_scale = *static_cast<const float*>(alpha);
  const double c_scale = *static_cast<const float*>(beta);

  const auto run_entry = [&](int entry) {
    const void* a = a_array[entry];
    const void* b = b_array[entry];
    void* c = c_array[entry];
    cudasim::check_matrix(a, a_rows, a_columns, lda, a_type, "A", entry);
    cudasim::check_matrix(b, b_rows, b_columns, ldb, b_type, "B", entry);
    cudasim::check_matrix(c, m, n, ldc, c_type, "C", entry);
    // op(A) row by row and op(B) column by column, decoded once.
    std::vector<double> op_a(static_cast<std::size_t>(m) * k), op_b(static_cast<std::size_t>(n) * k);
    for (int i = 0; i < m; ++i) {
      for (int p = 0; p < k; ++p) {
        op_a[static_cast<std::size_t>(i) * k + p] =
            load(a, a_type, transa == CUBLAS_OP_N ? i + std::int64_t{p} * lda : p + std::int64_t{i} * lda);
      }
    }
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < k; ++p) {
        op_b[static_cast<std::size_t>(j) * k + p] =
            load(b, b_type, transb == CUBLAS_OP_N ? p + std::int64_t{j} * ldb : j + std::int64_t{p} * ldb);
      }
    }
    for (int j = 0; j < n; ++j) {
      const double* b_column = &op_b[static_cast<std::size_t>(j) * k];
      for (int i = 0; i < m; ++i) {
        const double* a_row = &op_a[static_cast<std::size_t>(i) * k];
        // Four partial sums, so the products pipeline (cuBLAS fixes no order either).
        double partial[4] = {0.0, 0.0, 0.0, 0.0};
        int p = 0;
        for (; p + 4 <= k; p += 4) {
          for (int lane = 0; lane < 4; ++lane) partial[lane] += a_row[p + lane] * b_column[p + lane];
        }
        for (; p < k; ++p) partial[0] += a_row[p] * b_column[p];
        const double sum = (partial[0] + partial[1]) + (partial[2] + partial[3]);
        const std::int64_t at = i + std::int64_t{j} * ldc;
        const double previous = c_scale == 0.0 ? 0.0 : c_scale * load(c, c_type, at);
        store(c, c_type, at, a_scale * sum + previous);
      }
    }
  };
  const int workers = std::clamp(handle->stream ? handle->stream->host_threads : 1, 1, batch_count);
  std::atomic<int> next{0};
  const auto work = [&] {
    for (int entry = next.fetch_add(1); entry < batch_count; entry = next.fetch_add(1)) run_entry(entry);
  };
  std::vector<std::thread> helpers;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto guarded = [&] {
    try {
      work();
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next.store(batch_count);
    }
  };
  for (int w = 1; w < workers; ++w) helpers.emplace_back(guarded);
  guarded();
  for (std::thread& helper : helpers) helper.join();
  if (failure) std::rethrow_exception(failure);
  return CUBLAS_STATUS_SUCCESS;
}
