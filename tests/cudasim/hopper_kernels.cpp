// Built as CUDA code for the simulator (tests/CMakeLists.txt); see hopper_kernels.hpp.
#include "tests/cudasim/hopper_kernels.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/tensor_map.hpp"

namespace cudasim_test {
namespace {

using attnbench::dynamic_shared_memory;
using attnbench::launch_kernel;
using attnbench::Major;
using attnbench::shared_address;

template <typename... Params, typename... Args>
int run(void (*kernel)(Params...), int threads, std::size_t dynamic_bytes, Args... args) {
  cudasim::Stream stream{1};
  launch_kernel(kernel, dim3(1), dim3(static_cast<unsigned>(threads)), dynamic_bytes, &stream, args...);
  return static_cast<int>(cudaGetLastError());
}

// ---- happens-before ------------------------------------------------------------------

// Readers are warps 0-1 (they run first), writers warps 2-3.
__global__ void named_barrier_handoff_kernel(const float* in, float* out, Handoff variant) {
  float* tile = reinterpret_cast<float*>(dynamic_shared_memory());
  const unsigned t = threadIdx.x;
  if (t < 64) tile[t] = 0.0f;
  __syncthreads();
  if (t >= 64) {
    tile[t - 64] = in[t - 64];
    attnbench::named_barrier_arrive(1, 128);
  } else {
    if (variant != Handoff::no_sync) attnbench::named_barrier_sync(1, 128);
    out[t] = tile[(t + 1) % 64];
  }
}

// Readers are warp 0 (it runs first), writers warp 1.
__global__ void mbarrier_handoff_kernel(const float* in, float* out, Handoff variant) {
  unsigned char* smem = dynamic_shared_memory();
  const std::uint32_t barrier = shared_address(smem);
  float* tile = reinterpret_cast<float*>(smem + 128);
  const unsigned t = threadIdx.x;
  if (t == 0) {
    attnbench::mbarrier_init(barrier, 32);
    attnbench::fence_mbarrier_init();
  }
  if (t < 32) tile[t] = 0.0f;
  __syncthreads();
  if (t >= 32) {
    tile[t - 32] = in[t - 32];
    attnbench::mbarrier_arrive(barrier);
    return;
  }
  switch (variant) {
    case Handoff::right:
      attnbench::mbarrier_wait_parity(barrier, 0);
      break;
    case Handoff::wrong_parity:
      attnbench::mbarrier_wait_parity(barrier, 1);
      break;
    case Handoff::relay:
    case Handoff::relay_without_bar:
      if (t == 0) attnbench::mbarrier_wait_parity(barrier, 0);
      if (variant == Handoff::relay) attnbench::named_barrier_sync(1, 32);
      break;
    case Handoff::hinted:
      while (!attnbench::mbarrier_try_wait_parity(barrier, 0, 1000)) {
      }
      break;
    case Handoff::single_try_wait:
      static_cast<void>(attnbench::mbarrier_try_wait_parity(barrier, 0, 1000));
      break;
    case Handoff::no_sync:
      break;
  }
  out[t] = tile[(t + 1) % 32];
}

__global__ void mbarrier_arrive_and_wait_kernel(const float* in, float* out, bool wait) {
  unsigned char* smem = dynamic_shared_memory();
  const std::uint32_t barrier = shared_address(smem);
  float* tile = reinterpret_cast<float*>(smem + 128);
  const unsigned t = threadIdx.x;
  if (t == 0) {
    attnbench::mbarrier_init(barrier, 64);
    attnbench::fence_mbarrier_init();
  }
  __syncthreads();
  tile[t] = in[t];
  const std::uint64_t state = attnbench::mbarrier_arrive(barrier);
  if (wait) {
    while (!attnbench::mbarrier_try_wait(barrier, state)) {
    }
  }
  out[t] = tile[(t + 1) % 64];
}

__global__ void mbarrier_rearm_kernel(float* out, bool observe) {
  ATTNBENCH_STATIC_SHARED(barrier_object, std::uint64_t);
  const std::uint32_t barrier = shared_address(&barrier_object);
  if (threadIdx.x == 0) {
    attnbench::mbarrier_init(barrier, 32);
    attnbench::fence_mbarrier_init();
  }
  __syncwarp();
  attnbench::mbarrier_arrive(barrier);
  if (observe) attnbench::mbarrier_wait_parity(barrier, 0);
  __syncwarp();
  attnbench::mbarrier_arrive(barrier);
  attnbench::mbarrier_wait_parity(barrier, 1);
  out[threadIdx.x] = 1.0f;
}

__global__ void mbarrier_self_completion_kernel(float* out, SelfCompletion variant) {
  ATTNBENCH_STATIC_SHARED(barrier_object, std::uint64_t);
  const std::uint32_t barrier = shared_address(&barrier_object);
  const unsigned lane = threadIdx.x;
  if (lane == 0) {
    attnbench::mbarrier_init(barrier, variant == SelfCompletion::state ? 2 : variant == SelfCompletion::warp ? 32 : 1);
    attnbench::fence_mbarrier_init();
  }
  if (variant == SelfCompletion::warp) __syncwarp();
  if (variant == SelfCompletion::warp && lane > 0) {
    attnbench::mbarrier_arrive(barrier);
    attnbench::mbarrier_wait_parity(barrier, 0);
    out[1 + lane] = 1.0f;
    return;
  }
  const std::uint64_t state = variant == SelfCompletion::state ? attnbench::mbarrier_arrive(barrier) : 0;
  const auto poll = [&] {
    switch (variant) {
      case SelfCompletion::state:
        return attnbench::mbarrier_try_wait(barrier, state);
      case SelfCompletion::hinted:
        return attnbench::mbarrier_try_wait_parity(barrier, 0, 1000);
      default:
        return attnbench::mbarrier_try_wait_parity(barrier, 0);
    }
  };
  const int polls = variant == SelfCompletion::many_polls ? 500 : 2;
  int refused = 0;
  for (int i = 0; i < polls || variant == SelfCompletion::never; ++i) {
    refused += poll() ? 0 : 1;
    if (variant == SelfCompletion::older_phase && i == 0 && !attnbench::mbarrier_try_wait_parity(barrier, 1)) {
      refused += 1000;  // the phase before phase 0 counts as complete
    }
  }
  attnbench::mbarrier_arrive(barrier);
  out[0] = static_cast<float>(refused);
  out[1] = poll() ? 1.0f : 0.0f;
}

// ---- TMA -----------------------------------------------------------------------------

struct BoxLoad {
  int rank;
  std::int32_t coordinates[5];
  std::uint32_t bytes;
  TmaLoad variant;
};

__global__ void tma_load_box_kernel(const __grid_constant__ CUtensorMap map, BoxLoad load, std::uint16_t* out) {
  unsigned char* smem = dynamic_shared_memory();
  const std::uint32_t box = shared_address(smem);
  const std::uint32_t barrier_offset = (load.bytes + 127) / 128 * 128;
  const std::uint32_t barrier = box + barrier_offset;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    attnbench::mbarrier_init(barrier, 1);
    if (load.variant != TmaLoad::init_not_fenced) attnbench::fence_mbarrier_init();
  }
  if (load.variant != TmaLoad::init_not_synchronised) __syncthreads();
  if (t == 0) {
    if (load.variant == TmaLoad::barrier_overwritten) *reinterpret_cast<std::uint32_t*>(smem + barrier_offset) = 0;
    if (load.variant == TmaLoad::separate_expect_tx) {
      attnbench::mbarrier_expect_tx(barrier, load.bytes);
      attnbench::mbarrier_arrive(barrier);
    } else if (load.variant != TmaLoad::never_arrives) {
      attnbench::mbarrier_arrive_expect_tx(barrier, load.bytes - (load.variant == TmaLoad::expect_short ? 16 : 0));
    }
    if (load.variant == TmaLoad::extra_arrival) attnbench::mbarrier_arrive(barrier);
    const std::int32_t* c = load.coordinates;
    switch (load.rank) {
      case 1:
        attnbench::tma_load(box, &map, barrier, c[0]);
        break;
      case 2:
        attnbench::tma_load(box, &map, barrier, c[0], c[1]);
        break;
      case 3:
        attnbench::tma_load(box, &map, barrier, c[0], c[1], c[2]);
        break;
      case 4:
        attnbench::tma_load(box, &map, barrier, c[0], c[1], c[2], c[3]);
        break;
      default:
        attnbench::tma_load(box, &map, barrier, c[0], c[1], c[2], c[3], c[4]);
        break;
    }
  }
  if (load.variant == TmaLoad::never_waited) return;
  if (load.variant == TmaLoad::wrong_parity) {
    attnbench::mbarrier_wait_parity(barrier, 1);
  } else if (load.variant != TmaLoad::no_wait) {
    attnbench::mbarrier_wait_parity(barrier, 0);
  }
  const auto* values = reinterpret_cast<const std::uint16_t*>(smem);
  for (std::uint32_t i = t; i < load.bytes / 2; i += 32) out[i] = values[i];
  // Done with the mbarrier: invalidated, its memory may be reused.
  __syncwarp();
  if (t == 0) {
    attnbench::mbarrier_inval(barrier);
    if (load.variant == TmaLoad::used_after_inval) attnbench::mbarrier_wait_parity(barrier, 0);
    *reinterpret_cast<std::uint64_t*>(smem + barrier_offset) = 0;
  }
}

// Row pitch of the packed test tensors: dimension 0 rounded up to 8 elements (16 bytes).
attnbench::TensorMapShape packed_shape(int rank, const std::uint64_t* dims, const std::uint32_t* box) {
  attnbench::TensorMapShape shape;
  shape.rank = rank;
  std::uint64_t stride = (dims[0] + 7) / 8 * 8 * 2;
  for (int i = 0; i < rank; ++i) {
    shape.dims[i] = dims[i];
    shape.box[i] = box[i];
    if (i > 0) {
      shape.byte_strides[i - 1] = stride;
      stride *= dims[i];
    }
  }
  return shape;
}

struct BoxStore {
  int box_rows, x, y;
  TmaStore variant;
};

__global__ void tma_store_box_kernel(const __grid_constant__ CUtensorMap map, BoxStore store) {
  unsigned char* smem = dynamic_shared_memory();
  const unsigned c = threadIdx.x;  // one column of the 64-element (128-byte) rows each
  for (int r = 0; r < store.box_rows; ++r) {
    // 128-byte swizzle: 16-byte chunk c / 8 of row r sits at chunk (c / 8) XOR (r mod 8).
    const unsigned chunk = (c / 8) ^ (static_cast<unsigned>(r) % 8);
    *reinterpret_cast<std::uint16_t*>(smem + 128 * r + 16 * chunk + 2 * (c % 8)) =
        static_cast<std::uint16_t>(1000 + 64 * r + static_cast<int>(c));
  }
  if (store.variant != TmaStore::not_fenced) attnbench::fence_proxy_async();
  __syncthreads();
  if (c != 0) return;
  attnbench::tma_store(&map, shared_address(smem), store.x, store.y);
  attnbench::bulk_commit_group();
  if (store.variant == TmaStore::never_waited) return;
  if (store.variant == TmaStore::overwritten_in_flight) *reinterpret_cast<std::uint16_t*>(smem) = 0;
  attnbench::bulk_wait_group_read<0>();
  *reinterpret_cast<std::uint16_t*>(smem) = 0;  // the source may be reused now
  attnbench::bulk_wait_group<0>();
}

// ---- wgmma ---------------------------------------------------------------------------

struct WgmmaLaunch {
  int image_bytes;
  bool accumulate;
  std::uint64_t descriptor_a, descriptor_b;
};

template <int N, typename Element, Major kMajorA, Major kMajorB, bool kRegisters>
__global__ void wgmma_product_kernel(const unsigned char* image, const std::uint32_t* a_fragments, const float* c,
                                     float* out, WgmmaLaunch launch) {
  unsigned char* smem = dynamic_shared_memory();
  const unsigned t = threadIdx.x;
  for (int i = static_cast<int>(t); i < launch.image_bytes; i += 128) smem[i] = image[i];
  attnbench::fence_proxy_async();
  __syncthreads();
  float d[N / 2];
  for (int i = 0; i < N / 2; ++i) d[i] = c[t * (N / 2) + static_cast<unsigned>(i)];
  std::uint32_t a[4];
  for (int j = 0; j < 4; ++j) a[j] = kRegisters ? a_fragments[4 * t + static_cast<unsigned>(j)] : 0u;
  attnbench::wgmma_fence();
  if constexpr (kRegisters) {
    attnbench::wgmma_rs<N, Element, kMajorB>(d, a, launch.descriptor_b, launch.accumulate);
  } else {
    attnbench::wgmma_ss<N, Element, kMajorA, kMajorB>(d, launch.descriptor_a, launch.descriptor_b, launch.accumulate);
  }
  attnbench::wgmma_commit_group();
  attnbench::wgmma_wait_group<0>();
  for (int i = 0; i < N / 2; ++i) out[t * (N / 2) + static_cast<unsigned>(i)] = d[i];
}

template <int N, typename Element, Major kMajorA, Major kMajorB, bool kRegisters>
int run_product(const WgmmaCase& shape, const unsigned char* image, std::size_t image_bytes,
                const std::uint32_t* a_fragments, const float* c, float* out) {
  const WgmmaLaunch launch{static_cast<int>(image_bytes), shape.accumulate, shape.descriptor_a, shape.descriptor_b};
  return run(&wgmma_product_kernel<N, Element, kMajorA, kMajorB, kRegisters>, 128, image_bytes, image, a_fragments, c,
             out, launch);
}

// m64n8k16 bf16 of ones: A at shared 0 (64 rows, K-major, no swizzle: core
// matrices of 8 rows x 16 bytes, LBO 128, SBO 256), B at 2048 (8 rows).
__global__ void wgmma_use_kernel(float* out, WgmmaUse variant) {
  unsigned char* smem = dynamic_shared_memory();
  auto* elements = reinterpret_cast<std::uint16_t*>(smem);
  const unsigned t = threadIdx.x, warp = t / 32;
  for (unsigned i = t; i < 4096; i += 128) elements[i] = 0x3f80;  // bf16 1.0: A, B and the rest of 8 KiB
  if (variant != WgmmaUse::operand_not_fenced) attnbench::fence_proxy_async();
  __syncthreads();
  const std::uint32_t base = shared_address(smem);
  const std::uint64_t a = attnbench::make_matrix_descriptor(base, 128, 256, attnbench::MatrixSwizzle::none);
  std::uint64_t b = attnbench::make_matrix_descriptor(base + 2048, 128, 256, attnbench::MatrixSwizzle::none);
  constexpr std::uint64_t kBaseOffsetShift = 49;  // the descriptor's bits 51-49
  if (variant == WgmmaUse::mid_pattern_swizzle) {
    b = attnbench::make_matrix_descriptor(base + 2048 + 128, 0, 1024, attnbench::MatrixSwizzle::bytes128) |
        std::uint64_t{1} << kBaseOffsetShift;
  } else if (variant == WgmmaUse::base_offset_at_pattern_start) {
    b = attnbench::make_matrix_descriptor(base + 2048, 0, 1024, attnbench::MatrixSwizzle::bytes128) |
        std::uint64_t{3} << kBaseOffsetShift;
  } else if (variant == WgmmaUse::operand_past_the_end) {
    b = attnbench::make_matrix_descriptor(base + 8192 - 128, 128, 256, attnbench::MatrixSwizzle::none);
  } else if (variant == WgmmaUse::divergent_descriptor && warp == 3) {
    b = attnbench::make_matrix_descriptor(base + 4096, 128, 256, attnbench::MatrixSwizzle::none);
  }
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::uint32_t a_registers[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u};  // A from registers: ones
  if (variant == WgmmaUse::missing_warp && warp == 3) return;
  if (variant != WgmmaUse::no_fence) attnbench::wgmma_fence();
  if (variant == WgmmaUse::divergent_shape && warp == 3) {
    float wide[8] = {};
    attnbench::wgmma_ss<16, __nv_bfloat16>(wide, a, b, false);
  } else if (variant == WgmmaUse::chained_other_shape) {
    float wide[8] = {};
    attnbench::wgmma_ss<8, __nv_bfloat16>(reinterpret_cast<float(&)[4]>(wide), a, b, false);
    attnbench::wgmma_ss<16, __nv_bfloat16>(wide, a, b, true);
  } else if (variant == WgmmaUse::a_written_after_fence) {
    attnbench::wgmma_rs<8, __nv_bfloat16>(d, a_registers, b, false);
  } else {
    attnbench::wgmma_ss<8, __nv_bfloat16>(d, a, b, false);
  }
  attnbench::wgmma_commit_group();
  if (variant == WgmmaUse::read_before_wait) out[512 + t] = d[0];
  if (variant == WgmmaUse::operand_overwritten && t == 0) elements[1024] = 0;
  if (variant == WgmmaUse::wait_leaves_group) {
    attnbench::wgmma_wait_group<1>();
    out[512 + t] = d[0];
  }
  attnbench::wgmma_wait_group<0>();
  // A second product on the same accumulators, scaled first: the wgmma.fence
  // must come after the write.
  for (int i = 0; i < 4; ++i) d[i] *= 2.0f;
  if (variant != WgmmaUse::written_after_fence) attnbench::wgmma_fence();
  if (variant == WgmmaUse::written_after_fence) {
    attnbench::wgmma_fence();
    d[0] += 1.0f;
  }
  if (variant == WgmmaUse::a_written_after_fence) {
    a_registers[0] = 0x3f803f80u + 1u;
    attnbench::wgmma_rs<8, __nv_bfloat16>(d, a_registers, b, true);
  } else {
    attnbench::wgmma_ss<8, __nv_bfloat16>(d, a, b, true);
  }
  attnbench::wgmma_commit_group();
  attnbench::wgmma_wait_group<0>();
  for (int i = 0; i < 4; ++i) out[4 * t + static_cast<unsigned>(i)] = d[i];
}

// A wgmma m64n8k16 of ones (operands as in wgmma_use_kernel) while thread 0
// reloads operand B with a TMA load of 128 ones, before or after the wait.
__global__ void wgmma_operand_reloaded_kernel(const __grid_constant__ CUtensorMap ones, float* out, bool wait_first) {
  unsigned char* smem = dynamic_shared_memory();
  auto* elements = reinterpret_cast<std::uint16_t*>(smem);
  const unsigned t = threadIdx.x;
  const std::uint32_t base = shared_address(smem), barrier = base + 4096;
  for (unsigned i = t; i < 2048; i += 128) elements[i] = 0x3f80;
  if (t == 0) {
    attnbench::mbarrier_init(barrier, 1);
    attnbench::fence_mbarrier_init();
  }
  attnbench::fence_proxy_async();
  __syncthreads();
  const std::uint64_t a = attnbench::make_matrix_descriptor(base, 128, 256, attnbench::MatrixSwizzle::none);
  const std::uint64_t b = attnbench::make_matrix_descriptor(base + 2048, 128, 256, attnbench::MatrixSwizzle::none);
  float d[4] = {};
  attnbench::wgmma_fence();
  attnbench::wgmma_ss<8, __nv_bfloat16>(d, a, b, false);
  attnbench::wgmma_commit_group();
  if (wait_first) attnbench::wgmma_wait_group<0>();
  if (t == 0) {
    attnbench::mbarrier_arrive_expect_tx(barrier, 256);
    attnbench::tma_load(base + 2048, &ones, barrier, 0);
  }
  attnbench::wgmma_wait_group<0>();
  attnbench::mbarrier_wait_parity(barrier, 0);
  for (int i = 0; i < 4; ++i) out[4 * t + static_cast<unsigned>(i)] = d[i];
}

// ---- the rest ------------------------------------------------------------------------

__global__ void elect_lanes_kernel(float* out) {
  const bool leader = attnbench::elect_one_sync();
  out[threadIdx.x] = leader ? 1.0f : 0.0f;
  std::uint32_t lane = 99;
  cudasim::elect_sync(0xffffffffu, &lane);
  out[32 + threadIdx.x] = static_cast<float>(lane);
}

__global__ void set_registers_kernel(int producer, int consumer, bool uneven, float* out) {
  const unsigned warpgroup = threadIdx.x / 128;
  // The counts are the test's: the simulator's own entry point (the wrapper takes them as template arguments).
  if (warpgroup == 0) {
    cudasim::setmaxnreg(false, uneven && threadIdx.x / 32 == 3 ? producer - 8 : producer);
  } else {
    cudasim::setmaxnreg(true, consumer);
  }
  out[threadIdx.x] = 1.0f;
}

__global__ void store_matrices_kernel(bool transposed, std::uint16_t* out) {
  ATTNBENCH_STATIC_SHARED(tile, std::uint16_t[16 * 16]);
  const unsigned lane = threadIdx.x;
  std::uint32_t registers[4];
  for (unsigned m = 0; m < 4; ++m) registers[m] = (100 * m + 2 * lane) | (100 * m + 2 * lane + 1) << 16;
  const unsigned matrix = lane / 8, row = lane % 8;
  const std::uint32_t address = shared_address(&tile[0]) + (8 * (matrix % 2) + row) * 32 + (matrix / 2) * 16;
  if (transposed) {
    attnbench::store_matrix_x4_transposed(address, registers);
  } else {
    attnbench::store_matrix_x4(address, registers);
  }
  __syncwarp();
  for (unsigned i = lane; i < 256; i += 32) out[i] = tile[i];
}

__global__ void mismatched_barrier_count_kernel(float* out) {
  attnbench::named_barrier_sync(1, threadIdx.x < 64 ? 128 : 64);
  out[threadIdx.x] = 1.0f;
}

__global__ void barrier_arrive_kernel(bool twice, float* out) {
  if (threadIdx.x < 32) {
    attnbench::named_barrier_arrive(1, 128);
    if (twice) attnbench::named_barrier_arrive(1, 128);
    attnbench::named_barrier_sync(2, 128);
  } else {
    attnbench::named_barrier_sync(2, 128);
    attnbench::named_barrier_sync(1, 128);
  }
  out[threadIdx.x] = 1.0f;
}

__global__ void warpgroup_fence_kernel(float* out) {
  attnbench::wgmma_fence();
  out[threadIdx.x] = 1.0f;
}

}  // namespace

int named_barrier_handoff(const float* in, float* out, Handoff variant) {
  return run(&named_barrier_handoff_kernel, 128, 256, in, out, variant);
}
int mbarrier_handoff(const float* in, float* out, Handoff variant) {
  return run(&mbarrier_handoff_kernel, 64, 256, in, out, variant);
}
int mbarrier_arrive_and_wait(const float* in, float* out, bool wait) {
  return run(&mbarrier_arrive_and_wait_kernel, 64, 512, in, out, wait);
}
int mbarrier_rearm(float* out, bool observe) { return run(&mbarrier_rearm_kernel, 32, 0, out, observe); }
int mbarrier_self_completion(float* out, SelfCompletion variant) {
  return run(&mbarrier_self_completion_kernel, variant == SelfCompletion::warp ? 32 : 1, 0, out, variant);
}

int tma_load_box(const std::uint16_t* tensor, int rank, const std::uint64_t* dims, const std::uint32_t* box,
                 const std::int32_t* coordinates, int swizzle, std::uint16_t* out, TmaLoad variant) {
  const attnbench::TensorMapShape shape = packed_shape(rank, dims, box);
  const CUtensorMap map = attnbench::make_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT16, tensor, shape,
                                                     static_cast<CUtensorMapSwizzle>(swizzle), "the test tensor");
  BoxLoad load{rank, {}, 2, variant};
  for (int i = 0; i < rank; ++i) {
    load.coordinates[i] = coordinates[i];
    load.bytes *= box[i];
  }
  return run(&tma_load_box_kernel, 32, (load.bytes + 127) / 128 * 128 + 128, map, load, out);
}

int tma_store_box(std::uint16_t* tensor, int rows, int columns, int box_rows, int x, int y, TmaStore variant) {
  attnbench::TensorMapShape shape;
  shape.dims[0] = static_cast<std::uint64_t>(columns);
  shape.dims[1] = static_cast<std::uint64_t>(rows);
  shape.byte_strides[0] = 2 * static_cast<std::uint64_t>(columns);
  shape.box[0] = 64;
  shape.box[1] = static_cast<std::uint32_t>(box_rows);
  const CUtensorMap map = attnbench::make_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT16, tensor, shape,
                                                     CU_TENSOR_MAP_SWIZZLE_128B, "the test tensor");
  return run(&tma_store_box_kernel, 64, static_cast<std::size_t>(128 * box_rows), map, BoxStore{box_rows, x, y, variant});
}

int encode_tensor_map(int data_type, int rank, const void* address, const std::uint64_t* dims,
                      const std::uint64_t* strides, const std::uint32_t* box, const std::uint32_t* element_strides,
                      int swizzle, const char** why) {
  alignas(64) CUtensorMap map;
  const CUresult result = attnbench::tensor_map_encoder()(
      &map, static_cast<CUtensorMapDataType>(data_type), static_cast<cuuint32_t>(rank), const_cast<void*>(address),
      dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, static_cast<CUtensorMapSwizzle>(swizzle),
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  *why = cudasim::tensor_map_error_text();
  return static_cast<int>(result);
}

int wgmma_product(const WgmmaCase& shape, const unsigned char* image, std::size_t image_bytes,
                  const std::uint32_t* a_fragments, const float* c, float* out) {
  using bf16 = __nv_bfloat16;
  using f16 = __half;
  constexpr Major K = Major::k, MN = Major::mn;
  const auto is = [&](int n, bool bf, bool rs, bool a_mn, bool b_mn) {
    return shape.n == n && shape.bf16 == bf && shape.a_in_registers == rs && (rs || shape.a_mn_major == a_mn) &&
           shape.b_mn_major == b_mn;
  };
  const auto go = [&](auto product) { return product(shape, image, image_bytes, a_fragments, c, out); };
  if (is(8, true, false, false, false)) return go(run_product<8, bf16, K, K, false>);
  if (is(16, false, false, false, false)) return go(run_product<16, f16, K, K, false>);
  if (is(64, false, false, false, true)) return go(run_product<64, f16, K, MN, false>);
  if (is(64, true, false, true, true)) return go(run_product<64, bf16, MN, MN, false>);
  if (is(128, true, false, false, false)) return go(run_product<128, bf16, K, K, false>);
  if (is(128, false, false, true, false)) return go(run_product<128, f16, MN, K, false>);
  if (is(176, true, false, false, false)) return go(run_product<176, bf16, K, K, false>);
  if (is(256, true, false, false, true)) return go(run_product<256, bf16, K, MN, false>);
  if (is(256, false, false, false, false)) return go(run_product<256, f16, K, K, false>);
  if (is(8, false, true, false, false)) return go(run_product<8, f16, K, K, true>);
  if (is(64, true, true, false, true)) return go(run_product<64, bf16, K, MN, true>);
  if (is(128, false, true, false, false)) return go(run_product<128, f16, K, K, true>);
  if (is(256, true, true, false, true)) return go(run_product<256, bf16, K, MN, true>);
  throw std::invalid_argument("wgmma_product: no kernel built for this shape");
}

int wgmma_use(float* out, WgmmaUse variant) { return run(&wgmma_use_kernel, 128, 8192, out, variant); }
int wgmma_operand_reloaded(const std::uint16_t* ones, float* out, bool wait_first) {
  attnbench::TensorMapShape shape;
  shape.rank = 1;
  shape.dims[0] = 128;
  shape.box[0] = 128;
  const CUtensorMap map =
      attnbench::make_tensor_map(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, ones, shape, CU_TENSOR_MAP_SWIZZLE_NONE, "ones");
  return run(&wgmma_operand_reloaded_kernel, 128, 8192, map, out, wait_first);
}

int elect_lanes(float* out) { return run(&elect_lanes_kernel, 32, 0, out); }
int set_registers(int producer, int consumer, bool uneven, float* out) {
  return run(&set_registers_kernel, 384, 0, producer, consumer, uneven, out);
}
int store_matrices(bool transposed, std::uint16_t* out) { return run(&store_matrices_kernel, 32, 0, transposed, out); }
int mismatched_barrier_count(float* out) { return run(&mismatched_barrier_count_kernel, 128, 0, out); }
int barrier_arrive(bool twice, float* out) { return run(&barrier_arrive_kernel, 128, 0, twice, out); }
int warpgroup_fence(int threads, float* out) { return run(&warpgroup_fence_kernel, threads, 0, out); }

}  // namespace cudasim_test
