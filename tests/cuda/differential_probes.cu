// The differential check's instruction probes (see differential_probes.hpp):
// for each form, a one-CTA kernel that loads its inputs from global memory,
// issues the wrapper under test (kernels/cuda/warp_primitives.hpp,
// hopper_primitives.hpp, element_conversion.hpp; tensor maps from
// tensor_map.hpp, wgmma descriptors from matrix_descriptor.hpp) and stores
// what the instruction produced, as raw bits, to global memory: registers in
// lane order, shared memory as the instruction left it (swizzled as it is),
// global tensors whole. Nothing here decides anything: the host test
// (tests/test_differential.cpp) makes the inputs and compares two runs.
//
// Built twice (tests/CMakeLists.txt): by nvcc for sm_90a, and for the
// simulator, whose copy lives in namespace attnbench::simulated.
#include "tests/cuda/differential_probes.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/cuda/element_conversion.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"
#include "kernels/cuda/sm90a_device.hpp"
#include "kernels/cuda/tensor_map.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

using differential::Probe;
using differential::ProbeForm;

__device__ __forceinline__ std::uint32_t float_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
__device__ __forceinline__ float bits_float(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The 1024-byte aligned start of the dynamic shared memory (launches ask for 1024 bytes more).
__device__ __forceinline__ unsigned char* aligned_shared() {
  unsigned char* window = dynamic_shared_memory();
  const std::uint32_t address = shared_address(window);
  return window + ((address + 1023) / 1024 * 1024 - address);
}

// Lane l's row of the four 8x8 matrices lies in 16-byte slot (5l + 3) mod 32: a
// permutation, so that no matrix's rows are simply consecutive.
__device__ __forceinline__ std::uint32_t row_slot(unsigned lane) { return (5 * lane + 3) % 32; }

// ---- warp-level forms (sm_80 instructions) -------------------------------------------

template <typename Element>
__global__ void mma_kernel(const std::uint32_t* in, std::uint32_t* out) {
  const unsigned lane = threadIdx.x;
  const std::uint32_t* mine = in + 10 * lane;
  const std::uint32_t a[4] = {mine[0], mine[1], mine[2], mine[3]};
  float d[4] = {bits_float(mine[6]), bits_float(mine[7]), bits_float(mine[8]), bits_float(mine[9])};
  mma_16x8x16<Element>(d, a, mine[4], mine[5]);
  for (int i = 0; i < 4; ++i) out[4 * lane + static_cast<unsigned>(i)] = float_bits(d[i]);
}

// The four matrices go to shared memory with st.shared.u32 (row r of matrix m
// in lane 8m + r's slot); each lane then loads from its own slot's address.
__global__ void ldmatrix_kernel(const std::uint32_t* in, std::uint32_t* out, bool transposed) {
  const unsigned lane = threadIdx.x;
  const std::uint32_t base = shared_address(dynamic_shared_memory());
  for (unsigned w = 0; w < 4; ++w) store_shared_u32(base + 16 * row_slot(lane) + 4 * w, in[4 * lane + w]);
  __syncwarp();
  std::uint32_t registers[4];
  if (transposed) {
    load_matrix_x4_transposed(registers, base + 16 * row_slot(lane));
  } else {
    load_matrix_x4(registers, base + 16 * row_slot(lane));
  }
  for (unsigned i = 0; i < 4; ++i) out[4 * lane + i] = registers[i];
}

// st.shared.u32 as above, then a 16-byte load of the next lane's slot and an
// 8-byte load of the second half of the slot after it.
__global__ void shared_vectors_kernel(const std::uint32_t* in, std::uint32_t* out) {
  const unsigned lane = threadIdx.x;
  const std::uint32_t base = shared_address(dynamic_shared_memory());
  for (unsigned w = 0; w < 4; ++w) store_shared_u32(base + 16 * row_slot(lane) + 4 * w, in[4 * lane + w]);
  __syncwarp();
  const uint4 chunk = load_shared_16(base + 16 * row_slot((lane + 1) % 32));
  const float2 pair = load_shared_float2(base + 16 * row_slot((lane + 2) % 32) + 8);
  std::uint32_t* mine = out + 6 * lane;
  mine[0] = chunk.x;
  mine[1] = chunk.y;
  mine[2] = chunk.z;
  mine[3] = chunk.w;
  mine[4] = float_bits(pair.x);
  mine[5] = float_bits(pair.y);
}

// Each lane copies the chunk of lane (l + 7) mod 32 into its first 16 bytes and
// zero-fills its second 16 bytes (both first filled with 0xA5 bytes).
__global__ void cp_async_kernel(const std::uint32_t* in, std::uint32_t* out) {
  const unsigned lane = threadIdx.x;
  const std::uint32_t base = shared_address(dynamic_shared_memory());
  const std::uint32_t mine = base + 32 * lane;
  for (unsigned w = 0; w < 8; ++w) store_shared_u32(mine + 4 * w, 0xA5A5A5A5u);
  copy_async_16(mine, in + 4 * ((lane + 7) % 32), true);
  copy_async_16(mine + 16, in, false);
  copy_async_commit();
  copy_async_wait<0>();
  const uint4 copied = load_shared_16(mine), filled = load_shared_16(mine + 16);
  const std::uint32_t words[8] = {copied.x, copied.y, copied.z, copied.w, filled.x, filled.y, filled.z, filled.w};
  for (unsigned w = 0; w < 8; ++w) out[8 * lane + w] = words[w];
}

__global__ void shuffle_kernel(const std::uint32_t* in, std::uint32_t* out) {
  const unsigned lane = threadIdx.x;
  const std::uint32_t word = in[2 * lane];
  const float value = bits_float(in[2 * lane + 1]);
  for (unsigned step = 0; step < 5; ++step) {
    out[10 * lane + step] = __shfl_xor_sync(0xffffffffu, word, 1 << step);
    out[10 * lane + 5 + step] = float_bits(__shfl_xor_sync(0xffffffffu, value, 1 << step));
  }
}

__global__ void ex2_kernel(const std::uint32_t* in, std::uint32_t* out) {
  for (unsigned i = threadIdx.x; i < differential::kEx2Count; i += blockDim.x) {
    out[i] = float_bits(FastExp2::exp(bits_float(in[i])));
  }
}

// fp32 -> 16 bits: from_float of each value (two per output word, the even
// one low), then pack_pair of each pair of values.
template <typename Element>
__global__ void narrow_kernel(const std::uint32_t* in, std::uint32_t* out) {
  constexpr unsigned kPairs = differential::kConversionCount / 2;
  for (unsigned i = threadIdx.x; i < kPairs; i += blockDim.x) {
    const float first = bits_float(in[2 * i]), second = bits_float(in[2 * i + 1]);
    const Element low = from_float<Element>(first), high = from_float<Element>(second);
    std::uint16_t low_bits, high_bits;
    std::memcpy(&low_bits, &low, 2);
    std::memcpy(&high_bits, &high, 2);
    out[i] = low_bits | std::uint32_t{high_bits} << 16;
    out[kPairs + i] = pack_pair<Element>(first, second);
  }
}

// 16 bits -> fp32: to_float of each half of each input word, low half first.
template <typename Element>
__global__ void widen_kernel(const std::uint32_t* in, std::uint32_t* out) {
  for (unsigned i = threadIdx.x; i < differential::kWidenCount / 2; i += blockDim.x) {
    const std::uint16_t halves[2] = {static_cast<std::uint16_t>(in[i] & 0xffffu), static_cast<std::uint16_t>(in[i] >> 16)};
    for (unsigned h = 0; h < 2; ++h) {
      Element x;
      std::memcpy(&x, &halves[h], 2);
      out[2 * i + h] = float_bits(to_float(x));
    }
  }
}

// Thread t adds its pair of values to pair t mod kRedPairs of the output.
__global__ void red_add_pair_kernel(const std::uint32_t* in, std::uint32_t* out) {
  const unsigned t = threadIdx.x;
  float* pairs = reinterpret_cast<float*>(out);
  add_pair_to_global(pairs + 2 * (t % differential::kRedPairs), bits_float(in[2 * t]), bits_float(in[2 * t + 1]));
}

// Thread t adds its quad to quad t mod kRedQuads of the output with
// red.global.add.v4.f32, and its first value to word 4·kRedQuads + t mod
// kRedQuads with red.global.add.f32.
__global__ void red_add_vector_kernel(const std::uint32_t* in, std::uint32_t* out) {
  const unsigned t = threadIdx.x;
  float* sums = reinterpret_cast<float*>(out);
  const float4 quad = make_float4(bits_float(in[4 * t]), bits_float(in[4 * t + 1]), bits_float(in[4 * t + 2]),
                                  bits_float(in[4 * t + 3]));
  red_add_global_v4(sums + 4 * (t % differential::kRedQuads), quad);
  red_add_global(sums + 4 * differential::kRedQuads + t % differential::kRedQuads, quad.x);
}

// 32 threads put the input into shared memory; thread 0 adds it to the output
// twice with cp.reduce.async.bulk (one bulk group), then waits for it.
__global__ void bulk_reduce_kernel(const std::uint32_t* in, std::uint32_t* out) {
  unsigned char* shared = aligned_shared();
  auto* words = reinterpret_cast<std::uint32_t*>(shared);
  for (unsigned i = threadIdx.x; i < differential::kBulkReduceWords; i += 32) words[i] = in[i];
  fence_proxy_async();
  __syncthreads();
  if (threadIdx.x != 0) return;
  float* sums = reinterpret_cast<float*>(out);
  bulk_reduce_add_global(sums, shared_address(shared), 4 * differential::kBulkReduceWords);
  bulk_reduce_add_global(sums, shared_address(shared), 4 * differential::kBulkReduceWords);
  bulk_commit_group();
  bulk_wait_group<0>();
}

// ---- Hopper forms (sm_90a) -----------------------------------------------------------

__global__ void elect_kernel(std::uint32_t* out) { out[threadIdx.x] = elect_one_sync() ? 1u : 0u; }

// Each lane's four registers go to the row addresses of ldmatrix_kernel's
// slots (shared memory zeroed first); the output is the 512 bytes as stored.
__global__ void stmatrix_kernel(const std::uint32_t* in, std::uint32_t* out, bool transposed) {
  const unsigned lane = threadIdx.x;
  const std::uint32_t base = shared_address(dynamic_shared_memory());
  for (unsigned w = 0; w < 4; ++w) store_shared_u32(base + 16 * lane + 4 * w, 0u);
  __syncwarp();
  const std::uint32_t registers[4] = {in[4 * lane], in[4 * lane + 1], in[4 * lane + 2], in[4 * lane + 3]};
  if (transposed) {
    store_matrix_x4_transposed(base + 16 * row_slot(lane), registers);
  } else {
    store_matrix_x4(base + 16 * row_slot(lane), registers);
  }
  __syncwarp();
  const uint4 chunk = load_shared_16(base + 16 * lane);
  out[4 * lane] = chunk.x;
  out[4 * lane + 1] = chunk.y;
  out[4 * lane + 2] = chunk.z;
  out[4 * lane + 3] = chunk.w;
}

struct WgmmaOperands {
  differential::OperandLayout a, b;
  std::uint32_t image_words;
  unsigned base_offset;  // the descriptor field of B (bits 51-49)
};

__device__ __forceinline__ std::uint64_t descriptor_of(std::uint32_t image, const differential::OperandLayout& o,
                                                       unsigned base_offset) {
  const MatrixSwizzle swizzle = o.swizzle == 128  ? MatrixSwizzle::bytes128
                                : o.swizzle == 64 ? MatrixSwizzle::bytes64
                                : o.swizzle == 32 ? MatrixSwizzle::bytes32
                                                  : MatrixSwizzle::none;
  constexpr int kBaseOffsetShift = 49;
  return make_matrix_descriptor(image + o.offset, o.lbo, o.sbo, swizzle) |
         std::uint64_t{base_offset} << kBaseOffsetShift;
}

// One warpgroup: the image into shared memory, one wgmma (accumulating onto
// the input accumulators), the accumulators out in thread order.
template <int N, typename Element, Major kMajorA, Major kMajorB, bool kRegisters>
__global__ void wgmma_kernel(const std::uint32_t* in, std::uint32_t* out, WgmmaOperands operands) {
  unsigned char* image = aligned_shared();
  const unsigned t = threadIdx.x;
  auto* words = reinterpret_cast<std::uint32_t*>(image);
  for (unsigned i = t; i < operands.image_words; i += 128) words[i] = in[i];
  fence_proxy_async();
  __syncthreads();
  const std::uint32_t* fragments = in + operands.image_words;
  const std::uint32_t* accumulators = fragments + 128 * 4;
  float d[N / 2];
  for (unsigned i = 0; i < N / 2; ++i) d[i] = bits_float(accumulators[t * (N / 2) + i]);
  std::uint32_t a[4] = {fragments[4 * t], fragments[4 * t + 1], fragments[4 * t + 2], fragments[4 * t + 3]};
  const std::uint32_t base = shared_address(image);
  const std::uint64_t descriptor_b = descriptor_of(base, operands.b, operands.base_offset);
  wgmma_fence();
  if constexpr (kRegisters) {
    wgmma_rs<N, Element, kMajorB>(d, a, descriptor_b, true);
  } else {
    wgmma_ss<N, Element, kMajorA, kMajorB>(d, descriptor_of(base, operands.a, 0), descriptor_b, true);
  }
  wgmma_commit_group();
  wgmma_wait_group<0>();
  wgmma_fence_operand(d);
  for (unsigned i = 0; i < N / 2; ++i) out[t * (N / 2) + i] = float_bits(d[i]);
}

// Copies `words` 32-bit words of shared memory to `out`.
__device__ __forceinline__ void copy_out(const unsigned char* shared, std::uint32_t* out, int words) {
  const auto* source = reinterpret_cast<const std::uint32_t*>(shared);
  for (int i = static_cast<int>(threadIdx.x); i < words; i += static_cast<int>(blockDim.x)) out[i] = source[i];
}

// One warp: thread 0 announces the box's bytes and loads it (out-of-bound
// elements zero-filled), every thread waits on the phase, the box goes out as
// shared memory holds it.
__global__ void tma_load_kernel(const __grid_constant__ CUtensorMap map, std::uint32_t* out, int box_words) {
  unsigned char* box = aligned_shared();
  const std::uint32_t barrier = shared_address(box) + 4 * static_cast<std::uint32_t>(box_words);
  if (threadIdx.x == 0) {
    mbarrier_init(barrier, 1);
    fence_mbarrier_init();
  }
  __syncwarp();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(barrier, 4 * static_cast<std::uint32_t>(box_words));
    tma_load(shared_address(box), &map, barrier, differential::kLoadX, differential::kLoadY);
  }
  mbarrier_wait_parity(barrier, 0);
  copy_out(box, out, box_words);
}

// One warp: the box (input words, already in the map's swizzled layout) into
// shared memory, then thread 0 stores it to the tensor; elements past the
// tensor's edges are not written.
__global__ void tma_store_kernel(const __grid_constant__ CUtensorMap map, const std::uint32_t* in, int box_words) {
  unsigned char* box = aligned_shared();
  auto* words = reinterpret_cast<std::uint32_t*>(box);
  for (int i = static_cast<int>(threadIdx.x); i < box_words; i += 32) words[i] = in[i];
  fence_proxy_async();
  __syncwarp();
  if (threadIdx.x == 0) {
    tma_store(&map, shared_address(box), differential::kStoreX, differential::kStoreY);
    bulk_commit_group();
    bulk_wait_group_read<0>();
    bulk_wait_group<0>();
  }
}

// mbarrier transaction counting. Phase 0, thread 0: expect_tx of a box's
// bytes, its TMA load and an arrive, waited on with the arrive's state (the
// other threads wait by parity). Phase 1: arrive.expect_tx of two boxes' bytes
// and their loads, waited on by every thread by parity with a suspend-time
// hint. The flags record try_wait.parity on a phase just completed (1: it
// says so at once): parity 1 on the new barrier (the phase before phase 0),
// parity 0 after phase 0, parity 1 after phase 1. (A wait on an incomplete
// phase would return only at the hardware's time limit.)
__global__ void mbarrier_tx_kernel(const __grid_constant__ CUtensorMap map, std::uint32_t* out) {
  constexpr std::uint32_t kBoxBytes = 16 * 64 * 2;
  unsigned char* boxes = aligned_shared();
  const std::uint32_t box = shared_address(boxes);
  const std::uint32_t barrier = box + 3 * kBoxBytes;
  std::uint32_t* flags = out;
  if (threadIdx.x == 0) {
    mbarrier_init(barrier, 1);
    fence_mbarrier_init();
  }
  __syncwarp();
  if (threadIdx.x == 0) {
    flags[0] = mbarrier_try_wait_parity(barrier, 1) ? 1u : 0u;
    mbarrier_expect_tx(barrier, kBoxBytes);
    tma_load(box, &map, barrier, differential::kLoadX, differential::kLoadY);
    const std::uint64_t state = mbarrier_arrive(barrier);
    while (!mbarrier_try_wait(barrier, state)) {
    }
    flags[1] = mbarrier_try_wait_parity(barrier, 0) ? 1u : 0u;
  } else {
    mbarrier_wait_parity(barrier, 0);
  }
  __syncwarp();  // every thread is past phase 0 before phase 1 can complete
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(barrier, 2 * kBoxBytes);
    tma_load(box + kBoxBytes, &map, barrier, 0, 0);
    tma_load(box + 2 * kBoxBytes, &map, barrier, 8, 8);
  }
  while (!mbarrier_try_wait_parity(barrier, 1, 1000)) {
  }
  if (threadIdx.x == 0) flags[2] = mbarrier_try_wait_parity(barrier, 1) ? 1u : 0u;
  copy_out(boxes, out + differential::kTxFlags, static_cast<int>(3 * kBoxBytes / 4));
}

// ---- launching -----------------------------------------------------------------------

template <typename... Params, typename... Args>
void run(void (*kernel)(Params...), int threads, std::size_t shared_bytes, Args... args) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::Stream simulated{1};
  cudaStream_t stream = &simulated;
#else
  cudaStream_t stream = nullptr;
#endif
  ATTNBENCH_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)));
  launch_kernel(kernel, dim3(1), dim3(static_cast<unsigned>(threads)), shared_bytes, stream, args...);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
  ATTNBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

CUtensorMapSwizzle tensor_map_swizzle(int swizzle) {
  switch (swizzle) {
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

// The probes' fp16 tensor (kTensorRows x kTensorColumns, row-major) in boxes for `swizzle`.
CUtensorMap tensor_map(const void* tensor, int swizzle) {
  TensorMapShape shape;
  shape.dims[0] = differential::kTensorColumns;
  shape.dims[1] = differential::kTensorRows;
  shape.byte_strides[0] = 2 * differential::kTensorColumns;
  shape.box[0] = static_cast<std::uint32_t>(differential::tma_box_columns(swizzle));
  shape.box[1] = differential::kBoxRows;
  return make_tensor_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, tensor, shape, tensor_map_swizzle(swizzle),
                         "the differential probe's tensor");
}

template <int N, typename Element, Major kMajorA, Major kMajorB, bool kRegisters>
void run_wgmma(const ProbeForm& form, const std::uint32_t* in, std::uint32_t* out) {
  const differential::WgmmaPlacement placement = differential::wgmma_placement(form);
  const WgmmaOperands operands{placement.a, placement.b, placement.image_bytes / 4,
                               form.probe == Probe::base_offset ? static_cast<unsigned>(form.line) : 0u};
  run(&wgmma_kernel<N, Element, kMajorA, kMajorB, kRegisters>, 128, placement.image_bytes + 1024, in, out, operands);
}

// The wgmma instances the form list uses (tests/test_differential.cpp).
void run_wgmma_form(const ProbeForm& f, const std::uint32_t* in, std::uint32_t* out) {
  using bf16 = __nv_bfloat16;
  using f16 = __half;
  constexpr Major K = Major::k, MN = Major::mn;
  const auto is = [&](int n, bool is_bf16, bool registers, bool a_mn, bool b_mn) {
    return f.n == n && f.bf16 == is_bf16 && f.a_in_registers == registers && f.a_mn_major == a_mn &&
           f.b_mn_major == b_mn;
  };
  if (is(64, false, false, false, false)) return run_wgmma<64, f16, K, K, false>(f, in, out);
  if (is(64, false, false, true, true)) return run_wgmma<64, f16, MN, MN, false>(f, in, out);
  if (is(64, true, false, false, true)) return run_wgmma<64, bf16, K, MN, false>(f, in, out);
  if (is(8, true, false, false, false)) return run_wgmma<8, bf16, K, K, false>(f, in, out);
  if (is(128, true, false, false, false)) return run_wgmma<128, bf16, K, K, false>(f, in, out);
  if (is(256, true, false, false, false)) return run_wgmma<256, bf16, K, K, false>(f, in, out);
  if (is(64, true, true, false, false)) return run_wgmma<64, bf16, K, K, true>(f, in, out);
  if (is(64, true, true, false, true)) return run_wgmma<64, bf16, K, MN, true>(f, in, out);
  if (is(8, false, true, false, false)) return run_wgmma<8, f16, K, K, true>(f, in, out);
  if (is(256, false, true, false, false)) return run_wgmma<256, f16, K, K, true>(f, in, out);
  throw std::invalid_argument("differential probes: no wgmma kernel is built for the form " + f.name);
}

}  // namespace

bool differential_probes_run_here(std::string& why) { return sm90a_code_runs_here(why); }

void run_differential_probe(const ProbeForm& form, const std::uint32_t* in, std::uint32_t* out) {
  switch (form.probe) {
    case Probe::mma:
      return form.bf16 ? run(&mma_kernel<__nv_bfloat16>, 32, 0, in, out) : run(&mma_kernel<__half>, 32, 0, in, out);
    case Probe::ldmatrix:
      return run(&ldmatrix_kernel, 32, 512, in, out, form.transposed);
    case Probe::shared_vectors:
      return run(&shared_vectors_kernel, 32, 512, in, out);
    case Probe::cp_async:
      return run(&cp_async_kernel, 32, 1024, in, out);
    case Probe::shuffle:
      return run(&shuffle_kernel, 32, 0, in, out);
    case Probe::ex2:
      return run(&ex2_kernel, 128, 0, in, out);
    case Probe::to_half:
      return run(&narrow_kernel<__half>, 128, 0, in, out);
    case Probe::to_bfloat16:
      return run(&narrow_kernel<__nv_bfloat16>, 128, 0, in, out);
    case Probe::from_half:
      return run(&widen_kernel<__half>, 128, 0, in, out);
    case Probe::from_bfloat16:
      return run(&widen_kernel<__nv_bfloat16>, 128, 0, in, out);
    case Probe::red_add_pair:
      return run(&red_add_pair_kernel, differential::kRedThreads, 0, in, out);
    case Probe::red_add_vector:
      return run(&red_add_vector_kernel, differential::kRedThreads, 0, in, out);
    case Probe::bulk_reduce:
      return run(&bulk_reduce_kernel, 32, 4 * differential::kBulkReduceWords + 1024, in, out);
    case Probe::elect:
      return run(&elect_kernel, 32, 0, out);
    case Probe::stmatrix:
      return run(&stmatrix_kernel, 32, 512, in, out, form.transposed);
    case Probe::wgmma:
    case Probe::base_offset:
      return run_wgmma_form(form, in, out);
    case Probe::tma_load: {
      const int box_words = differential::tma_box_words(form.swizzle);
      return run(&tma_load_kernel, 32, static_cast<std::size_t>(4 * box_words + 1024 + 64), tensor_map(in, form.swizzle),
                 out, box_words);
    }
    case Probe::tma_store:
      return run(&tma_store_kernel, 32, static_cast<std::size_t>(4 * differential::tma_box_words(form.swizzle) + 1024),
                 tensor_map(out, form.swizzle), in, differential::tma_box_words(form.swizzle));
    case Probe::mbarrier_tx:
      return run(&mbarrier_tx_kernel, 32, static_cast<std::size_t>(3 * 4 * differential::tma_box_words(128) + 1024 + 64),
                 tensor_map(in, 128), out);
  }
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
