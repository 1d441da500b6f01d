// Small kernels that each do one thing right or one thing wrong, built for the
// simulator (sanitizer_kernels.cpp), for tests/test_cudasim_sanitizer.cpp.
// Every function launches its kernel on `host_threads` host threads over
// buffers of the cudasim device and returns cudaGetLastError() after it (0 on
// success); a sanitizer finding comes back as an attnbench::DeviceError.
#pragma once

#include <cstddef>

namespace cudasim_test {

// 64 threads: out[t] = in[(t + 1) % 64] through a static shared tile, with or
// without the __syncthreads between writing the tile and reading it.
int neighbour_exchange(const float* in, float* out, bool barrier);
// The same, reading the neighbour's value and then overwriting one's own
// element in the same interval (a write-after-read race without the barrier).
int read_then_overwrite(const float* in, float* out, bool barrier);
// Lanes of one warp exchange through shared memory, ordered by __syncwarp.
int warp_exchange(const float* in, float* out);
// 64 threads, each copies 16 bytes of `in` (64 x 4 floats) into each of two
// shared stages with cp.async, one group per stage, waits with
// cp.async.wait_group `waited_groups_pending` (0, 1 or 2), __syncthreads, and
// writes its neighbour's second-stage floats to out.
int two_stage_copy(const float* in, float* out, int waited_groups_pending);
// Issues a cp.async and stores to its destination before waiting.
int write_before_wait(const float* in, float* out);
// Issues a cp.async and never waits for it.
int copy_never_waited(const float* in, float* out);
// Reads a shared float nobody wrote.
int uninitialised_read(float* out);
// 64 threads read in[t + 1].
int read_past_the_end(const float* in, float* out);
// Indexes a 64-float static shared array at 64 + t.
int shared_index_past_the_end(float* out);
// ldmatrix with row addresses 4 bytes off 16-byte alignment.
int misaligned_ldmatrix(float* out);
// Warps 0 and 1 reach different __syncthreads.
int divergent_barrier(float* out);
// Threads 32..63 return before a __syncthreads the others wait at.
int barrier_after_early_exit(float* out);
// Lanes 16..31 skip a full-mask __shfl_xor_sync.
int shuffle_with_missing_lanes(float* out);
// One warp: out[32·m + l] for m = 0..3 is lane l's __shfl_xor_sync(v, 5),
// __shfl_up_sync(v, 3, width), __shfl_down_sync(v, 3, width),
// __shfl_sync(v, 2, width), with v = 100 + l.
int shuffle_modes(float* out, int width);
// One warp loads a 16x16 shared tile of b16 values 16·row + column with
// ldmatrix .x4 (lane l addresses row l % 16, column 8·(l / 16)), plain and
// transposed; out[8·l + r] holds register r (r < 4: plain, else transposed) as
// a float bit pattern.
int ldmatrix_registers(float* out);
// A kernel asking for `dynamic_bytes` of dynamic shared memory, after raising
// its limit with cudaFuncSetAttribute to `raised_limit` (0: not raised).
int launch_with_dynamic_shared(float* out, std::size_t dynamic_bytes, int raised_limit);
// `blocks` CTAs of 64 threads: every thread adds 1 to out[0] with
// atomicAdd(float*) and (1, 2) to out[2..3] with atomicAdd(float2*).
int atomic_adds(float* out, int blocks, int host_threads);

}  // namespace cudasim_test
