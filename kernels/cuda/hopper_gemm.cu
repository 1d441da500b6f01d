// C = A · Bᵀ (A m x k, B n x k, C m x n, all row-major, bf16 or fp16, fp32
// accumulation) with Hopper's instructions, warp-specialised: the structure of
// a FlashAttention-3-class kernel with the attention taken out.
//
// Tiling (GemmTraits): one CTA per 128 x 128 tile of C, three warpgroups.
//   - Warpgroup 0, the producer, gives up registers (setmaxnreg.dec 40); one
//     elected thread of its first warp streams the CTA's A and B tiles of 64
//     k through a 4-stage pipeline with TMA: per stage it waits on the stage's
//     "empty" mbarrier, announces the stage's bytes on its "full" mbarrier
//     (arrive.expect_tx) and issues two tensor copies (128 x 64 each, 128-byte
//     swizzle) that complete on it. Out-of-bound rows and k are zero-filled.
//   - Warpgroups 1 and 2, the consumers, take registers (setmaxnreg.inc 232);
//     each owns 64 rows of the tile: per stage it waits on "full", issues four
//     wgmma.mma_async m64n128k16 (A and B from K-major, 128-byte swizzled
//     descriptors, 32 bytes further per k16 step), commits them as a group,
//     waits for the previous stage's group (wgmma.wait_group 1) and releases
//     that stage on "empty". The accumulators (64 fp32 per thread) stay in
//     registers across the whole k loop.
//   - Epilogue, per consumer (kernels/cuda/hopper_epilogue.hpp): the
//     accumulators are rounded to the element type and written with stmatrix
//     into two 64 x 64 panels of a 128-byte-swizzled staging tile, fenced for
//     the async proxy, the warpgroup synchronises on its named barrier, and
//     one thread stores both panels with TMA (rows and columns outside C are
//     not written).
// The roles are load_stages (producer), multiply_stages (consumer's k loop)
// and the shared epilogue; the stages go round the full/empty ring of
// kernels/cuda/hopper_pipeline.hpp, one full barrier per stage.
// Shared memory (GemmTraits::Shared): 4 stages x (16 KiB of A + 16 KiB of B),
// 2 x 16 KiB of C staging, then the ring's 8 mbarriers: 160 KiB + 64 bytes,
// and 1 KiB to align the base for the 128-byte swizzle.
#include "kernels/cuda/hopper_gemm.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/cuda/hopper_epilogue.hpp"
#include "kernels/cuda/hopper_pipeline.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/hopper_shared_storage.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"
#include "kernels/cuda/sm90a_device.hpp"
#include "kernels/cuda/tensor_map.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

struct GemmTraits {
  static constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 64;
  static constexpr int kStages = 4;
  static constexpr int kConsumers = 2;  // warpgroups of 64 rows each
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kRowBytes = kBlockK * 2;                // 128: one swizzle span per row
  static constexpr int kTileBytes = kBlockM * kRowBytes;       // 16 KiB for A, the same for B
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kPanelBytes = 64 * 64 * 2;              // a 64 x 64 panel of a consumer's C staging
  static constexpr int kStagingBytes = 64 * kBlockN * 2;       // a consumer's 64 x 128 C tile
  struct Shared {
    std::uint8_t a[kStages][kTileBytes];
    std::uint8_t b[kStages][kTileBytes];
    std::uint8_t c[kConsumers][kStagingBytes];
    PipelineBarriers<kStages> ring;
  };
  static constexpr int kSharedBytes = shared_bytes_of<Shared>();
  static constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
  static_assert(kBlockM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
  static_assert(kSharedBytes <= kMaxSharedBytesSm90, "a CTA has at most 227 KiB of shared memory");
  static_assert(kTileBytes % kSwizzleAlignment == 0 && kPanelBytes % kSwizzleAlignment == 0 &&
                    swizzle_aligned(offsetof(Shared, b)) && swizzle_aligned(offsetof(Shared, c)),
                "tiles and panels keep the 1024-byte swizzle alignment");
};
using GemmPipeline = MbarrierPipeline<GemmTraits::kStages>;

// The named barriers (bar.sync ids; 0 is __syncthreads's): consumer c's 128
// threads before its TMA store synchronise on kEpilogueBarrier + c.
enum GemmNamedBarrier : int { kEpilogueBarrier = 1 };

// The 32-bit shared addresses of the CTA's storage (GemmTraits::Shared).
struct GemmShared {
  using Shared = GemmTraits::Shared;
  std::uint32_t base;

  __device__ __forceinline__ std::uint32_t a(int stage) const {
    return base + static_cast<std::uint32_t>(offsetof(Shared, a) + stage * GemmTraits::kTileBytes);
  }
  __device__ __forceinline__ std::uint32_t b(int stage) const {
    return base + static_cast<std::uint32_t>(offsetof(Shared, b) + stage * GemmTraits::kTileBytes);
  }
  __device__ __forceinline__ std::uint32_t c(int consumer) const {
    return base + static_cast<std::uint32_t>(offsetof(Shared, c) + consumer * GemmTraits::kStagingBytes);
  }
  __device__ __forceinline__ GemmPipeline ring() const {
    return GemmPipeline(base + static_cast<std::uint32_t>(offsetof(Shared, ring)));
  }
};

// The producer, one elected thread: A's and B's tiles of each k step into the
// next stage of the ring, both on the stage's full barrier.
__device__ __forceinline__ void load_stages(const GemmShared& shared, const CUtensorMap* a_map,
                                            const CUtensorMap* b_map, int m0, int n0, int k_tiles) {
  using T = GemmTraits;
  const GemmPipeline ring = shared.ring();
  GemmPipeline::State state;
  for (int kt = 0; kt < k_tiles; ++kt, state.advance()) {
    ring.producer_acquire(state);
    const std::uint32_t full = ring.producer_arm(state, T::kStageBytes);
    tma_load(shared.a(state.stage()), a_map, full, kt * T::kBlockK, m0);
    tma_load(shared.b(state.stage()), b_map, full, kt * T::kBlockK, n0);
  }
}

// A consumer's k loop: per stage, four k16 wgmmas into the accumulators as
// one group; once the next group is issued, wgmma.wait_group 1 covers the
// previous one, whose stage goes back to the producer.
template <typename Element>
__device__ __forceinline__ void multiply_stages(const GemmShared& shared, int consumer, int k_tiles,
                                                float (&accumulators)[GemmTraits::kBlockN / 2]) {
  using T = GemmTraits;
  const GemmPipeline ring = shared.ring();
  const int thread = static_cast<int>(threadIdx.x) % 128;
  GemmPipeline::State state, previous;
  for (int kt = 0; kt < k_tiles; ++kt, state.advance()) {
    ring.consumer_wait(state);
    wgmma_fence();
#pragma unroll
    for (int k16 = 0; k16 < T::kBlockK / 16; ++k16) {
      // A stage's tiles are one 64-column panel each: k16 < 4 stays in it.
      wgmma_ss<T::kBlockN, Element>(
          accumulators, k_major_descriptor(shared.a(state.stage()), T::kTileBytes, 64 * consumer, k16),
          k_major_descriptor(shared.b(state.stage()), T::kTileBytes, 0, k16), kt > 0 || k16 > 0);
    }
    wgmma_commit_group();
    wgmma_wait_group<1>();  // the previous stage's products are done: release it
    if (kt > 0) {
      if (thread == 0) ring.consumer_release(previous);
      previous.advance();
    }
  }
  wgmma_wait_group<0>();
}

template <typename Element>
__global__ void __launch_bounds__(GemmTraits::kThreads, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ CUtensorMap c_map, int k_tiles) {
  using T = GemmTraits;
  const GemmShared shared{shared_storage_base()};
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int m0 = static_cast<int>(blockIdx.y) * T::kBlockM, n0 = static_cast<int>(blockIdx.x) * T::kBlockN;

  if (threadIdx.x == 0) {
    shared.ring().init(T::kConsumers);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<T::kProducerRegisters>();
    if (threadIdx.x < 32 && elect_one_sync()) load_stages(shared, &a_map, &b_map, m0, n0, k_tiles);
    return;
  }

  setmaxnreg_inc<T::kConsumerRegisters>();
  const int consumer = warpgroup - 1;
  float accumulators[T::kBlockN / 2];
  multiply_stages<Element>(shared, consumer, k_tiles, accumulators);
  store_accumulators_with_tma<Element, T::kBlockN>(accumulators, shared.c(consumer), T::kPanelBytes,
                                                   kEpilogueBarrier + consumer, &c_map, n0, m0 + 64 * consumer);
}

// A row-major rows x columns matrix of 16-bit elements, read or written in `box` tiles.
CUtensorMap matrix_map(const void* data, int rows, int columns, std::uint32_t box_columns, std::uint32_t box_rows,
                       bool bf16, CUtensorMapSwizzle swizzle, const char* what) {
  TensorMapShape shape;
  shape.dims[0] = static_cast<std::uint64_t>(columns);
  shape.dims[1] = static_cast<std::uint64_t>(rows);
  shape.byte_strides[0] = 2 * static_cast<std::uint64_t>(columns);
  shape.box[0] = box_columns;
  shape.box[1] = box_rows;
  return make_tensor_map(bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, data, shape,
                         swizzle, what);
}

template <typename Element>
void launch(const void* a, const void* b, void* c, int m, int n, int k, bool bf16, cudaStream_t stream) {
  using T = GemmTraits;
  const CUtensorMap a_map = matrix_map(a, m, k, T::kBlockK, T::kBlockM, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "A");
  const CUtensorMap b_map = matrix_map(b, n, k, T::kBlockK, T::kBlockN, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "B");
  const CUtensorMap c_map = matrix_map(c, m, n, 64, 64, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "C");
  ATTNBENCH_CUDA_CHECK(
      cudaFuncSetAttribute(&hopper_gemm_kernel<Element>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
  const dim3 grid(static_cast<unsigned>((n + T::kBlockN - 1) / T::kBlockN),
                  static_cast<unsigned>((m + T::kBlockM - 1) / T::kBlockM));
  launch_kernel(&hopper_gemm_kernel<Element>, grid, dim3(T::kThreads), T::kSharedBytes, stream, a_map, b_map, c_map,
                (k + T::kBlockK - 1) / T::kBlockK);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
  ATTNBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

void hopper_gemm(const void* a, const void* b, void* c, int m, int n, int k, bool bf16, int host_threads) {
  if (m < 1 || n < 1 || k < 1 || n % 8 != 0 || k % 8 != 0) {
    throw std::invalid_argument("hopper_gemm: m, n, k must be positive and n, k multiples of 8 (got m " +
                                std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) + ")");
  }
#if defined(ATTNBENCH_CUDASIM)
  cudasim::Stream simulated{host_threads};
  cudaStream_t stream = &simulated;
#else
  (void)host_threads;
  cudaStream_t stream = nullptr;
#endif
  if (bf16) {
    launch<__nv_bfloat16>(a, b, c, m, n, k, true, stream);
  } else {
    launch<__half>(a, b, c, m, n, k, false, stream);
  }
}

bool hopper_gemm_runs_here(std::string& why) { return sm90a_code_runs_here(why); }

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
