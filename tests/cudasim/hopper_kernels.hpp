// Small kernels that use the Hopper instructions (kernels/cuda/hopper_primitives.hpp)
// right or wrong in one way each, built for the simulator (hopper_kernels.cpp),
// for tests/test_cudasim_hopper.cpp. Every function launches its kernel on
// buffers of the cudasim device and returns cudaGetLastError() after it (0 on
// success); a sanitizer finding comes back as an attnbench::DeviceError.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cudasim_test {

// ---- happens-before through named barriers and mbarriers ---------------------------

enum class Handoff {
  right,
  no_sync,           // the readers skip the synchronisation
  wrong_parity,      // mbarrier: the reader waits for parity 1 (the phase before), which returns at once
  relay,             // mbarrier: one reader waits, then bar.sync passes the phase on to the rest
  relay_without_bar,  // … the rest read without the bar.sync
  hinted,            // mbarrier: the readers wait with a suspend-time hint
  single_try_wait    // mbarrier: the readers take one try_wait as the wait, ignoring its answer
};
// 128 threads: warps 0-1 write tile[t] = in[t], then bar.arrive 1, 128;
// warps 2-3 bar.sync 1, 128 and write out[t - 64] = tile[t - 64].
int named_barrier_handoff(const float* in, float* out, Handoff variant);
// 64 threads: warp 1 writes tile[t - 32] = in[t - 32] and arrives on an
// mbarrier of 32 arrivals; warp 0 waits for phase 0 and writes out[t] =
// tile[(t + 1) % 32].
int mbarrier_handoff(const float* in, float* out, Handoff variant);
// 64 threads write tile[t] = in[t], arrive on an mbarrier of 64 arrivals and
// (when `wait`) wait with the state mbarrier.arrive returned; out[t] = tile[(t + 1) % 64].
int mbarrier_arrive_and_wait(const float* in, float* out, bool wait);
// One warp arrives twice on an mbarrier of 32 arrivals, waiting for phase 0
// between the two (`observe`) or only __syncwarp-ing, then waits for phase 1;
// out[l] = 1 for every lane.
int mbarrier_rearm(float* out, bool observe);

// A thread that polls an mbarrier before it completes the phase itself: legal,
// since a try_wait may return false after a time limit (PTX ISA 9.7.13.15.16).
enum class SelfCompletion {
  parity,       // try_wait.parity 0 twice, arrive, try_wait.parity 0
  state,        // arrive (of 2), try_wait on its state twice, arrive, try_wait on the state
  hinted,       // as parity, each try_wait with a suspend-time hint
  older_phase,  // try_wait.parity 0, try_wait.parity 1 (the phase before), try_wait.parity 0, arrive, wait
  many_polls,   // as parity with 500 polls before the arrival
  never,        // polls for ever, and nobody arrives: a deadlock
  warp          // 32 threads, 32 arrivals: lanes 1-31 arrive and wait; lane 0 polls twice, then arrives and waits
};
// One thread (a warp for `warp`), one mbarrier: out[0] = the polls of the
// current phase that returned false, out[1 + lane] = 1 once the final wait returned true.
int mbarrier_self_completion(float* out, SelfCompletion variant);

// ---- TMA ---------------------------------------------------------------------------

enum class TmaLoad {
  right,
  no_wait,            // the threads read the box without waiting for the mbarrier
  wrong_parity,       // … waiting for parity 1
  expect_short,       // expect_tx announces 16 bytes fewer than the box
  extra_arrival,      // a second arrive-on on an mbarrier of one arrival
  never_arrives,      // nobody arrives: the phase never completes
  init_not_fenced,    // no fence.mbarrier_init after mbarrier.init
  init_not_synchronised,  // no __syncthreads between mbarrier.init and the other threads' waits
  barrier_overwritten,  // a thread stores to the mbarrier's bytes while it is in use
  separate_expect_tx,   // mbarrier.expect_tx, then a plain arrive (right)
  used_after_inval,     // a thread waits on the mbarrier after mbarrier.inval
  never_waited          // the threads exit without waiting for the load (or reading its box)
};
// A tensor of 16-bit elements (`rank` dimensions, `dims` innermost first, rows
// packed: element i of dimension 0 at index i, strides the product of the
// inner dims rounded up to 8 elements), its box of `box` elements at
// `coordinates` loaded by one thread into shared memory with swizzle `swizzle`
// (0 none, 1: 32B, 2: 64B, 3: 128B as CUtensorMapSwizzle); 32 threads then
// copy the shared bytes, in shared-memory order, to `out` (box bytes / 2
// values), and the mbarrier is invalidated and its bytes reused.
int tma_load_box(const std::uint16_t* tensor, int rank, const std::uint64_t* dims, const std::uint32_t* box,
                 const std::int32_t* coordinates, int swizzle, std::uint16_t* out, TmaLoad variant);

enum class TmaStore {
  right,
  not_fenced,             // the threads write the box with st.shared and no fence.proxy.async
  overwritten_in_flight,  // the source is overwritten before cp.async.bulk.wait_group.read
  never_waited            // the thread exits without waiting for its bulk group
};
// A rows x columns tensor of 16-bit elements (row stride `columns`, a multiple
// of 8): 64 threads write the box (box_rows x 64 elements, 128B-swizzled in
// shared memory) with value 1000 + index-in-box, and one thread stores it at
// (column, row) = (x, y) with a TMA store.
int tma_store_box(std::uint16_t* tensor, int rows, int columns, int box_rows, int x, int y, TmaStore variant);

// cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion, as a kernel's
// host code reaches it: the CUresult, and the simulator's explanation in `why`.
int encode_tensor_map(int data_type, int rank, const void* address, const std::uint64_t* dims,
                      const std::uint64_t* strides, const std::uint32_t* box, const std::uint32_t* element_strides,
                      int swizzle, const char** why);

// ---- wgmma -------------------------------------------------------------------------

// One m64nNk16 product by one warpgroup: `image` (copied into dynamic shared
// memory at address 0, then fence.proxy.async and __syncthreads) holds A (SS
// form) and B where the descriptors say; the RS form takes thread t's A
// fragment from a_fragments[4t .. 4t + 3]. Thread t's accumulators start as
// c[t·N/2 + i] and end in out[t·N/2 + i]. Supported shapes: see hopper_kernels.cpp.
struct WgmmaCase {
  int n;
  bool bf16;
  bool a_in_registers;
  bool a_mn_major, b_mn_major;
  bool accumulate;
  std::uint64_t descriptor_a, descriptor_b;
};
int wgmma_product(const WgmmaCase& shape, const unsigned char* image, std::size_t image_bytes,
                  const std::uint32_t* a_fragments, const float* c, float* out);

enum class WgmmaUse {
  right,
  no_fence,                 // no wgmma.fence before the first wgmma
  written_after_fence,      // the accumulators are written after the wgmma.fence
  a_written_after_fence,    // both products take A from registers; one is written after the second's wgmma.fence
  read_before_wait,         // the accumulators are read before wgmma.wait_group
  wait_leaves_group,        // wgmma.wait_group 1 with the only group still needed
  operand_overwritten,      // a thread stores to operand B before the wait
  operand_not_fenced,       // operand B written with st.shared and no fence.proxy.async
  missing_warp,             // warp 3 of the warpgroup skips the wgmma
  divergent_shape,          // warp 3 issues m64n16k16 where the others issue m64n8k16
  mid_pattern_swizzle,      // a 128-byte swizzled operand starting 128 bytes into its pattern (base offset 1)
  base_offset_at_pattern_start,  // a 128-byte swizzled operand at its pattern's start with base offset 3
  operand_past_the_end,     // operand B's descriptor reaches past the shared memory
  divergent_descriptor,     // warp 3 passes another descriptor for B
  chained_other_shape       // an m64n16k16 issued on the accumulators of an m64n8k16 in flight
};
// One warpgroup, m64n8k16 bf16, K-major operands (no swizzle) of ones: a
// product (16 in every accumulator), the accumulators doubled, a second product
// accumulated on them; out[4t + i] = thread t's accumulators then (48 each).
// The early reads of the two *_wait variants go to out[512 + t].
int wgmma_use(float* out, WgmmaUse variant);
// The same product while thread 0 reloads operand B (128 bf16 ones from
// `ones`) with a TMA load, after the wgmma.wait_group (`wait_first`) or before
// it; out[4t + i] = thread t's accumulators (16 each).
int wgmma_operand_reloaded(const std::uint16_t* ones, float* out, bool wait_first);

// ---- the rest ----------------------------------------------------------------------

// One warp: out[l] = 1 where lane l was elected, else 0; out[32 + l] = the leader lane.
int elect_lanes(float* out);
// Three warpgroups: warpgroup 0 setmaxnreg.dec `producer`, 1 and 2 .inc
// `consumer`; `uneven` makes warp 3 of warpgroup 0 ask for 8 fewer.
int set_registers(int producer, int consumer, bool uneven, float* out);
// One warp stores four 8x8 matrices (register m of lane l = 1000·m + l in both
// halves' low bits: low half 100·m + 2·l, high half 100·m + 2·l + 1) with
// stmatrix .x4 (transposed when asked) to a 16x16 tile (rows 16 bytes apart
// per matrix: matrix m at rows 8·(m % 2), columns 8·(m / 2)); out[i] holds tile
// element i.
int store_matrices(bool transposed, std::uint16_t* out);
// 128 threads: warps 0-1 bar.sync 1, 128; warps 2-3 bar.sync 1, 64.
int mismatched_barrier_count(float* out);
// 128 threads: warp 0 bar.arrive 1, 128 (twice when `twice`), then bar.sync 2,
// 128; warps 1-3 bar.sync 2, 128, then bar.sync 1, 128 (so warp 0's second
// arrival comes while barrier 1 still waits for them). out[t] = 1.
int barrier_arrive(bool twice, float* out);
// `threads` threads each execute wgmma.fence; out[t] = 1.
int warpgroup_fence(int threads, float* out);

}  // namespace cudasim_test
