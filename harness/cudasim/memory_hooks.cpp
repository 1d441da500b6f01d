// How the simulator sees the loads and stores a kernel makes through ordinary
// C++ pointers (shared-memory structs, global tensors): the simulated
// translation units are compiled with GCC's (or Clang's) thread-sanitizer
// instrumentation, which calls __tsan_read4(address) and its kin before every
// memory access, but they are linked without the thread-sanitizer runtime:
// these functions are its replacement. Outside a simulated thread they return
// at once; inside one, an access to the CTA's shared window goes through
// SharedMemory::access and an access to device memory through the bounds and
// alignment check. Accesses to anything else (the kernel's stack, its
// parameters) are not device memory and pass.
//
// Atomic operations of instrumented code (static-local guards, reference
// counts) arrive as __tsan_atomic*; they are performed as sequentially
// consistent atomics and not checked.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/cudasim/cta.hpp"

namespace cudasim {
namespace {

// 9.7.15.7.3 "wgmma.wait_group": accessing the accumulator or A-fragment
// registers of a wgmma.mma_async before a wait covers it is undefined. The
// registers are the kernel's arrays, whose address the wgmma entry point takes.
void check_wgmma_registers(SimThread& thread, const void* address, std::size_t bytes, bool write, const void* pc) {
  const auto* begin = static_cast<const unsigned char*>(address);
  for (const InFlightRegisters& registers : thread.wgmma.registers) {
    if (begin < registers.begin + registers.bytes && registers.begin < begin + bytes) {
      report(&thread, "wgmma registers accessed before wgmma.wait_group",
             std::string(write ? "write" : "read") + " of " + std::to_string(bytes) + " bytes of the " +
                 registers.what +
                 " registers of an in-flight wgmma.mma_async, which no wgmma.wait_group has covered yet: they hold "
                 "poison until it does",
             pc, false, registers.pc, "the wgmma.mma_async");
      return;
    }
  }
}

void plain_access(void* address, std::size_t bytes, bool write, std::size_t alignment, const void* pc) {
  SimThread* thread = current_thread;
  if (!thread) return;
  if (!thread->wgmma.registers.empty()) check_wgmma_registers(*thread, address, bytes, write, pc);
  SharedMemory& shared = thread->cta->shared();
  if (shared.contains(address)) {
    const auto offset = static_cast<std::uint32_t>(static_cast<unsigned char*>(address) - shared.base());
    shared.access(*thread, offset, bytes, alignment, write ? SharedAccess::write : SharedAccess::read, pc);
    return;
  }
  if (thread->cta->launch().memory().may_touch(reinterpret_cast<std::uintptr_t>(address), bytes)) {
    check_global_access(*thread, address, bytes, alignment, write ? "store" : "load", pc);
    if (thread->cta->sanitize()) thread->cta->launch().global_order().plain(*thread, address, bytes, write, pc);
  }
}

}  // namespace
}  // namespace cudasim

#define CUDASIM_ACCESS_HOOKS(bytes)                                                                    \
  void __tsan_read##bytes(void* a) { cudasim::plain_access(a, bytes, false, bytes, __builtin_return_address(0)); } \
  void __tsan_write##bytes(void* a) { cudasim::plain_access(a, bytes, true, bytes, __builtin_return_address(0)); } \
  void __tsan_unaligned_read##bytes(void* a) {                                                          \
    cudasim::plain_access(a, bytes, false, 1, __builtin_return_address(0));                            \
  }                                                                                                    \
  void __tsan_unaligned_write##bytes(void* a) {                                                         \
    cudasim::plain_access(a, bytes, true, 1, __builtin_return_address(0));                             \
  }                                                                                                    \
  void __tsan_volatile_read##bytes(void* a) {                                                           \
    cudasim::plain_access(a, bytes, false, bytes, __builtin_return_address(0));                        \
  }                                                                                                    \
  void __tsan_volatile_write##bytes(void* a) {                                                          \
    cudasim::plain_access(a, bytes, true, bytes, __builtin_return_address(0));                         \
  }

#define CUDASIM_ATOMIC_HOOKS(bits, type)                                                                           \
  type __tsan_atomic##bits##_load(const volatile type* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); }   \
  void __tsan_atomic##bits##_store(volatile type* a, type v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); }   \
  type __tsan_atomic##bits##_exchange(volatile type* a, type v, int) {                                           \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                           \
  }                                                                                                              \
  type __tsan_atomic##bits##_fetch_add(volatile type* a, type v, int) {                                          \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                            \
  }                                                                                                              \
  type __tsan_atomic##bits##_fetch_sub(volatile type* a, type v, int) {                                          \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                            \
  }                                                                                                              \
  type __tsan_atomic##bits##_fetch_and(volatile type* a, type v, int) {                                          \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                            \
  }                                                                                                              \
  type __tsan_atomic##bits##_fetch_or(volatile type* a, type v, int) {                                           \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                             \
  }                                                                                                              \
  type __tsan_atomic##bits##_fetch_xor(volatile type* a, type v, int) {                                          \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                            \
  }                                                                                                              \
  type __tsan_atomic##bits##_fetch_nand(volatile type* a, type v, int) {                                         \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                           \
  }                                                                                                              \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile type* a, type* expected, type v, int, int) {         \
    return __atomic_compare_exchange_n(a, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);               \
  }                                                                                                              \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile type* a, type* expected, type v, int, int) {           \
    return __atomic_compare_exchange_n(a, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                \
  }                                                                                                              \
  type __tsan_atomic##bits##_compare_exchange_val(volatile type* a, type expected, type v, int, int) {            \
    __atomic_compare_exchange_n(a, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                     \
    return expected;                                                                                             \
  }

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_read_range(void* a, unsigned long size) {
  cudasim::plain_access(a, size, false, 1, __builtin_return_address(0));
}
void __tsan_write_range(void* a, unsigned long size) {
  cudasim::plain_access(a, size, true, 1, __builtin_return_address(0));
}
CUDASIM_ACCESS_HOOKS(1)
CUDASIM_ACCESS_HOOKS(2)
CUDASIM_ACCESS_HOOKS(4)
CUDASIM_ACCESS_HOOKS(8)
CUDASIM_ACCESS_HOOKS(16)
CUDASIM_ATOMIC_HOOKS(8, char)
CUDASIM_ATOMIC_HOOKS(16, short)
CUDASIM_ATOMIC_HOOKS(32, int)
CUDASIM_ATOMIC_HOOKS(64, long)
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"
