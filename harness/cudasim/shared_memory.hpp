// A CTA's shared memory on the simulator: one window of host memory between
// two inaccessible guard pages, the dynamic part at shared address 0 and the
// static variables after it, and, while the sanitizer is on, a shadow record
// per byte that finds:
//   - reads of bytes never written, or still being filled by a cp.async;
//   - races: a read and a write, or two writes, of one byte by different
//     threads between the same two barriers (a cp.async counts as a write by
//     its thread at issue and again when its group is waited for);
//     two lanes of one warp separated by a __syncwarp are ordered.
// Out-of-bounds and misaligned accesses are checked with the sanitizer on or
// off: they end the launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cudasim {

struct SimThread;

// sm_90's limits: 227 KiB of shared memory per block, 48 KiB of it static.
inline constexpr std::size_t kMaxSharedBytesPerBlock = 232448;
inline constexpr std::size_t kMaxStaticSharedBytes = 49152;
// The dynamic size a kernel may launch with before cudaFuncSetAttribute raises it.
inline constexpr std::size_t kDefaultDynamicSharedLimit = 49152;

// atomic: bounds and alignment only (atomics of different threads never race).
enum class SharedAccess { read, write, async_issue, async_land, atomic };

class SharedMemory {
 public:
  SharedMemory();
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  // A new CTA: `dynamic_bytes` of dynamic shared memory, no static variables,
  // every byte unwritten, barrier interval 1.
  void begin_cta(std::size_t dynamic_bytes, bool sanitize);
  unsigned char* base() const { return base_; }
  std::size_t reserved() const { return kMaxSharedBytesPerBlock; }
  std::size_t size() const { return dynamic_bytes_ + static_bytes_; }
  bool contains(const void* pointer) const {
    return static_cast<std::size_t>(static_cast<const unsigned char*>(pointer) - base_) < kMaxSharedBytesPerBlock;
  }

  // The storage of the static variable declared at `site` (the same for every
  // thread of the CTA), placed after the dynamic part on first use.
  void* static_variable(SimThread& thread, const void* site, std::size_t bytes, std::size_t alignment,
                        const void* pc);

  // Checks an access of `bytes` at shared address `address` by `thread` and
  // returns the bytes in the window. Out of bounds or not a multiple of
  // `alignment`: a fatal finding.
  unsigned char* access(SimThread& thread, std::uint32_t address, std::size_t bytes, std::size_t alignment,
                        SharedAccess kind, const void* pc);

  // __syncthreads completed: accesses before it are ordered with those after.
  void next_interval() { ++interval_; }

 private:
  // What the sanitizer knows of one byte (20 bytes of shadow per byte).
  struct Shadow {
    std::uint32_t write_interval;  // 0: never written
    std::uint32_t read_interval;   // 0: never read
    std::uint16_t writer, reader;
    std::uint16_t write_site, read_site;  // program counters, as indexes into sites_
    std::uint8_t write_warp_syncs, read_warp_syncs;  // the warp's __syncwarp count (mod 256) then
    std::uint8_t flags;
    std::uint8_t unused;
  };
  static constexpr std::uint8_t kPending = 1;       // a cp.async of `writer` is filling it
  static constexpr std::uint8_t kManyReaders = 2;   // read by more than one thread in read_interval
  static constexpr std::uint8_t kReadersMixed = 4;  // … and by threads of more than one warp
  std::uint16_t site_of(const void* pc);
  // The thread making an access, as the shadow records it.
  struct Accessor {
    std::uint16_t me;     // the thread's linear index
    std::uint8_t syncs;   // its warp's __syncwarp count (mod 256)
    std::uint16_t site;   // the access's place, an index into sites_
    int warp;
    // Whether an earlier access by `other`, made when its warp's count was
    // `other_syncs`, is ordered before this one: the same warp, with a
    // __syncwarp between.
    bool ordered_after(std::uint16_t other, std::uint8_t other_syncs) const {
      return other / 32 == warp && other_syncs != syncs;
    }
  };
  Accessor accessor(const SimThread& thread, const void* pc);
  void check_read(SimThread& thread, std::uint32_t address, std::size_t bytes, const void* pc);
  void check_write(SimThread& thread, std::uint32_t address, std::size_t bytes, SharedAccess kind, const void* pc);
  std::string describe_address(std::uint32_t address) const;

  unsigned char* mapping_ = nullptr;  // guard page, window, guard page
  std::size_t mapping_bytes_ = 0;
  unsigned char* base_ = nullptr;
  std::size_t dynamic_bytes_ = 0;
  std::size_t static_bytes_ = 0;
  struct StaticVariable {
    const void* site;
    std::size_t offset;
  };
  std::vector<StaticVariable> statics_;
  bool sanitize_ = true;
  std::uint32_t interval_ = 1;
  std::vector<Shadow> shadow_;
  std::vector<const void*> sites_;
  const void* last_pc_ = nullptr;
  std::uint16_t last_site_ = 0;
};

}  // namespace cudasim
