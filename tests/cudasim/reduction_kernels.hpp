// Small kernels that use the global reductions of kernels/cuda/hopper_primitives.hpp
// (red.global.add.f32 and its vector forms, cp.reduce.async.bulk .add.f32)
// right or wrong in one way each, built for the simulator
// (reduction_kernels.cpp), for tests/test_cudasim_reductions.cpp. Every
// function launches its kernel on buffers of the cudasim device and returns
// cudaGetLastError() after it (0 on success); a sanitizer finding comes back as
// an attnbench::DeviceError.
#pragma once

namespace cudasim_test {

enum class RedForm { scalar, v2, v4 };
// `ctas` CTAs of 64 threads; thread t of CTA c adds (c + 1)·(t + 1) to sums[4t + i]
// for i < 4, with red_add_global (four of them), red_add_global_v2 (two) or
// red_add_global_v4 (one). `offset` (in floats) shifts the address of every add.
int red_add(float* sums, int ctas, RedForm form, int offset);
// One thread: red_add_global on an address in its CTA's shared memory (the
// wrong space), then out[0] = the shared value.
int red_add_to_shared(float* out);

enum class BulkReduce {
  right,
  not_fenced,        // the shared source is written with ordinary stores and no fence.proxy.async
  size_not_16,       // 20 bytes
  misaligned_global,  // the destination 4 bytes past a 16-byte boundary
  misaligned_shared,  // the source 4 bytes past a 16-byte boundary
  never_waited,      // the thread exits without bulk_commit_group / wait
  waited_too_late    // thread 0 waits for the group only after the __syncthreads before thread 1's read
};
// One CTA of 32 threads: thread t writes t + 1 to shared[t] (thread 0 also
// adds 0 to sums[0] with red_add_global); after a __syncthreads, thread 0 adds
// the 32 values to sums[0..31] with one bulk_reduce_add_global, commits and
// waits (.read, then without); after another __syncthreads, thread 1 writes
// sums[1] to out[1] and thread 0 sums[0] to out[0].
int bulk_reduce_add(float* sums, float* out, BulkReduce variant);

// ---- plain accesses to words reductions reach --------------------------------------

enum class MixedAccess {
  counted_read,          // every CTA adds, then releases a counter; the last CTA waits for all, then reads
  uncounted_read,        // … the last CTA reads without waiting for the counter
  read_without_barrier,  // … its thread 0 waits, the other threads read without the __syncthreads after it
  store_then_add,        // one CTA: adds, __syncthreads, stores to the next thread's word, __syncthreads, adds
  store_then_add_unsynced  // … without the second __syncthreads
};
// `ctas` CTAs of 64 threads: thread t adds 1 to sums[t] with red_add_global;
// the read variants leave the last CTA's view of sums in out[0..63].
int mixed_access(float* sums, float* out, int* counter, int ctas, MixedAccess variant);

// ---- the order of an accumulation across CTAs ------------------------------------

enum class Accumulation {
  unordered,      // every CTA adds at once
  ordered,        // CTA c waits for the semaphore to reach c, adds, and releases c + 1
  wait_too_long,  // … waits for c + 1: the last CTA's turn never comes
  reversed        // CTA c waits for ctas - 1 - c: the last CTA of the grid goes first
};
// `ctas` CTAs of 64 threads; CTA c adds addend(c, t) to sums[t] with
// red_add_global, in the order the variant says; `semaphore` starts at 0.
// Runs on `host_threads` host threads.
int accumulate(float* sums, int* semaphore, int ctas, Accumulation variant, int host_threads);
// What CTA c's thread t adds: values of very different magnitudes and both
// signs, so that the fp32 sum depends on the order of the adds.
float addend(int cta, int thread);

}  // namespace cudasim_test
