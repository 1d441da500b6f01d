/*
 * cuda.example: a forward attention kernel as an attnbench plug-in, with no
 * header but include/attnbench/plugin.h (docs/plugins.md). Built outside
 * attnbench's build, as a user would, for the GPUs to run on:
 *
 *   nvcc -O2 -shared -Xcompiler -fPIC -cudart shared -I include \
 *        -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
 *        examples/plugins/cuda_attention.cu -o libcuda_attention.so
 *
 * (-cudart shared: the plug-in uses the CUDA runtime attnbench has loaded.)
 * Run with `attnbench run SCENARIO --plugin ./libcuda_attention.so --impl cuda.example,cuda.cublas`.
 *
 * What it computes: one warp per query row. The warp's 32 lanes hold the row
 * of Q and of the output accumulator, up to 8 elements each (head dim <= 256);
 * it walks the row's visible keys (causal, window, padding, either alignment,
 * from the lengths attnbench put in device memory), each score a dot product
 * reduced across the warp with shuffles, and keeps the running maximum and sum
 * of the online softmax in registers. O and LSE are written once; nothing is
 * allocated, no workspace is needed, and everything runs on the stream
 * attnbench gives. A correct, simple reference for a plug-in, not a fast kernel:
 * no tiling, no shared memory, no tensor cores. Forward only; dropout is refused.
 *
 * Two variants exist only to show that attnbench's checks catch what a
 * plug-in must not do (scripts/device-check.sh runs them on a GPU):
 * -DATTNBENCH_EXAMPLE_DEFAULT_STREAM launches on the default stream (the
 * stream check fails the record), -DATTNBENCH_EXAMPLE_OWN_ALLOCATION keeps a
 * cudaMalloc'd buffer of its own (the record is flagged).
 */
#include <attnbench/plugin.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#if defined(ATTNBENCH_EXAMPLE_DEFAULT_STREAM)
#define EXAMPLE_NAME "cuda.example_default_stream"
#elif defined(ATTNBENCH_EXAMPLE_OWN_ALLOCATION)
#define EXAMPLE_NAME "cuda.example_own_allocation"
#else
#define EXAMPLE_NAME "cuda.example"
#endif

namespace {

constexpr int kWarp = 32;
constexpr int kPerLane = 8;  // head dim <= kWarp * kPerLane
constexpr int kWarpsPerBlock = 4;

__device__ float to_float(__half value) { return __half2float(value); }
__device__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
template <typename T> __device__ T from_float(float value);
template <> __device__ __half from_float<__half>(float value) { return __float2half_rn(value); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) { return __float2bfloat16_rn(value); }

__device__ float warp_sum(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

template <typename T>
__global__ void attention_forward(attnbench_problem p, const T* q, const T* k, const T* v, T* out, float* lse) {
  const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= p.batch * p.heads * p.seqlen_q) return;  // the whole warp leaves together
  const long long i = row % p.seqlen_q, h = (row / p.seqlen_q) % p.heads, b = row / (p.seqlen_q * p.heads);
  const long long kv = h / (p.heads / p.kv_heads);
  const long long length_q = p.device_lengths_q[b], length_k = p.device_lengths_k[b];

  // The visible keys [begin, end) of this row (the mask of include/attnbench/plugin.h).
  long long begin = 0, end = i < length_q ? length_k : 0;
  const long long shift = p.align == ATTNBENCH_ALIGN_BOTTOM_RIGHT ? length_k - length_q : 0;
  if (p.window_left >= 0 && i + shift - p.window_left > begin) begin = i + shift - p.window_left;
  if (p.causal && i + shift + 1 < end) end = i + shift + 1;
  if (p.window_right >= 0 && i + shift + p.window_right + 1 < end) end = i + shift + p.window_right + 1;

  const long long q_row = b * p.q.batch + i * p.q.seq + h * p.q.head;
  float q_part[kPerLane], accumulator[kPerLane];
  for (int t = 0; t < kPerLane; ++t) {
    const long long c = lane + static_cast<long long>(t) * kWarp;
    q_part[t] = c < p.head_dim ? to_float(q[q_row + c]) : 0.0f;
    accumulator[t] = 0.0f;
  }
  float running_max = -INFINITY, running_sum = 0.0f;
  for (long long j = begin; j < end; ++j) {
    const long long k_row = b * p.k.batch + j * p.k.seq + kv * p.k.head;
    const long long v_row = b * p.v.batch + j * p.v.seq + kv * p.v.head;
    float partial = 0.0f;
    for (int t = 0; t < kPerLane; ++t) {
      const long long c = lane + static_cast<long long>(t) * kWarp;
      if (c < p.head_dim) partial += q_part[t] * to_float(k[k_row + c]);
    }
    const float score = static_cast<float>(p.scale) * warp_sum(partial);
    const float new_max = fmaxf(running_max, score);
    const float correction = expf(running_max - new_max), weight = expf(score - new_max);
    running_sum = running_sum * correction + weight;
    for (int t = 0; t < kPerLane; ++t) {
      const long long c = lane + static_cast<long long>(t) * kWarp;
      const float value = c < p.head_dim ? to_float(v[v_row + c]) : 0.0f;
      accumulator[t] = accumulator[t] * correction + weight * value;
    }
    running_max = new_max;
  }
  const bool empty = end <= begin;
  const long long o_row = b * p.o.batch + i * p.o.seq + h * p.o.head;
  for (int t = 0; t < kPerLane; ++t) {
    const long long c = lane + static_cast<long long>(t) * kWarp;
    if (c < p.head_dim) out[o_row + c] = from_float<T>(empty ? 0.0f : accumulator[t] / running_sum);
  }
  if (lane == 0) lse[(b * p.heads + h) * p.seqlen_q + i] = empty ? -INFINITY : running_max + logf(running_sum);
}

int32_t example_supports(void*, const attnbench_problem* p, attnbench_message* message) {
  if (p->dropout_p > 0) return attnbench_message_set(message, ATTNBENCH_STATUS_UNSUPPORTED, "no dropout in this example");
  if (p->head_dim > kWarp * kPerLane) {
    return attnbench_message_set(message, ATTNBENCH_STATUS_UNSUPPORTED, "head dim above 256 (8 elements per lane)");
  }
  return ATTNBENCH_STATUS_OK;
}

int32_t example_forward(void*, const attnbench_problem* p, const attnbench_buffers* buffers,
                        const attnbench_context* context, attnbench_message* message) {
  cudaStream_t stream = static_cast<cudaStream_t>(context->stream);
#if defined(ATTNBENCH_EXAMPLE_DEFAULT_STREAM)
  stream = nullptr;
#elif defined(ATTNBENCH_EXAMPLE_OWN_ALLOCATION)
  static void* kept = nullptr;  // allocated on first use and never freed: what a plug-in must not do
  if (!kept && cudaMalloc(&kept, 64u << 20) != cudaSuccess) kept = nullptr;
#endif
  const long long rows = p->batch * p->heads * p->seqlen_q;
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (p->input_dtype == ATTNBENCH_DTYPE_FP16) {
    attention_forward<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(
        *p, static_cast<const __half*>(buffers->q), static_cast<const __half*>(buffers->k),
        static_cast<const __half*>(buffers->v), static_cast<__half*>(buffers->out), buffers->lse);
  } else {
    attention_forward<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(
        *p, static_cast<const __nv_bfloat16*>(buffers->q), static_cast<const __nv_bfloat16*>(buffers->k),
        static_cast<const __nv_bfloat16*>(buffers->v), static_cast<__nv_bfloat16*>(buffers->out), buffers->lse);
  }
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) {
    char text[256];
    std::snprintf(text, sizeof text, "kernel launch: %s", cudaGetErrorString(launched));
    return attnbench_message_set(message, ATTNBENCH_STATUS_ERROR, text);
  }
  return ATTNBENCH_STATUS_OK;
}

}  // namespace

ATTNBENCH_PLUGIN_DEFINE_ABI_VERSION

ATTNBENCH_PLUGIN_EXPORT int32_t attnbench_plugin_register(attnbench_registrar* registrar, attnbench_message*) {
  attnbench_implementation implementation;
  std::memset(&implementation, 0, sizeof implementation);
  implementation.struct_size = sizeof implementation;
  implementation.name = EXAMPLE_NAME;
  implementation.device = ATTNBENCH_DEVICE_CUDA;
  implementation.algorithm = ATTNBENCH_ALGORITHM_FUSED;
  implementation.summary = "one warp per query row, online softmax in registers (a simple reference, not fast)";
  implementation.version = "1.0.0";
  implementation.accuracy_baseline = "cuda.cublas";
  implementation.configuration = "warp per row, 4 warps per block";
  implementation.output_dtype = ATTNBENCH_OUTPUT_INPUT_DTYPE;
  implementation.supports = example_supports;
  implementation.forward = example_forward;
  return registrar->add(registrar, &implementation);
}
