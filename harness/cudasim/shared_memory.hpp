// A CTA's shared memory on the simulator: one window of host memory between
// two inaccessible guard pages, the dynamic part at shared address 0 and the
// static variables after it, and, while the sanitizer is on, a shadow record
// per byte (its last write and the reads since, as happens-before epochs,
// happens_before.hpp) that finds:
//   - reads of bytes never written, or still being filled by an asynchronous
//     copy (cp.async, a TMA load); writes to bytes still being filled;
//   - races: a read and a write, or two writes, of one byte that are not
//     ordered by happens-before;
//   - generic-proxy writes (st.shared, stmatrix, plain C++) read by the async
//     proxy (a wgmma operand, a TMA store's source) without a fence.proxy.async
//     by the writer before the synchronisation that orders the two;
//   - ordinary accesses to the bytes of a live mbarrier object.
// Out-of-bounds and misaligned accesses are checked with the sanitizer on or
// off: they end the launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/cudasim/happens_before.hpp"

namespace cudasim {

struct SimThread;

// sm_90's limits: 227 KiB of shared memory per block, 48 KiB of it static.
inline constexpr std::size_t kMaxSharedBytesPerBlock = 232448;
inline constexpr std::size_t kMaxStaticSharedBytes = 49152;
// The dynamic size a kernel may launch with before cudaFuncSetAttribute raises it.
inline constexpr std::size_t kDefaultDynamicSharedLimit = 49152;

// A thread's own access (the generic proxy). async_issue and async_land are a
// cp.async's two halves: its issue reserves the bytes, its landing (at the
// issuing thread's cp.async.wait_group) writes them. atomic: bounds and
// alignment only (atomics of different threads never race).
enum class SharedAccess { read, write, async_issue, async_land, atomic };

// An access of the asynchronous proxy on behalf of an operation a thread issued.
struct AsyncAccess {
  const char* what;           // "wgmma operand A", "TMA load", …
  SimThread* issuer;          // named in reports
  const Clock* ordered_after;  // what the operation is ordered after: its issuer's view
  Epoch epoch;                // recorded for the access
  const void* pc;             // the issuing instruction
};

class SharedMemory {
 public:
  SharedMemory();
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  // A new CTA: `dynamic_bytes` of dynamic shared memory, no static variables,
  // every byte unwritten; `order` is the CTA's happens-before.
  void begin_cta(std::size_t dynamic_bytes, bool sanitize, HappensBefore* order);
  unsigned char* base() const { return base_; }
  std::size_t size() const { return dynamic_bytes_ + static_bytes_; }
  bool sanitizing() const { return sanitize_; }
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

  // The asynchronous proxy reads bytes (a wgmma operand, a TMA store's source).
  const unsigned char* async_read(const AsyncAccess& access, std::uint32_t address, std::size_t bytes);
  // A TMA load is issued to these bytes: they are reserved until it lands.
  unsigned char* async_write_issue(const AsyncAccess& access, std::uint32_t address, std::size_t bytes);
  // … and lands, written by `epoch` (the mbarrier's agent).
  unsigned char* async_write_land(std::uint32_t address, std::size_t bytes, Epoch epoch);

  // The 8 bytes at `address` hold a live mbarrier object from init until inval;
  // ordinary accesses to them are findings. `thread` initialises it.
  void begin_mbarrier(SimThread& thread, std::uint32_t address, const void* pc);
  void end_mbarrier(std::uint32_t address);

  // Where a shared address lies, for reports: "shared address 0x40 (dynamic shared memory + 64)".
  std::string describe_address(std::uint32_t address) const;

 private:
  // What the sanitizer knows of one byte (16 bytes of shadow per byte).
  struct Shadow {
    Clock write_clock;   // 0: never written
    std::uint32_t read;  // the reader's clock, or a read set (kReadSet); 0: not read since the write
    std::uint16_t writer : 12;            // slots (happens_before.hpp): threads, then agents
    std::uint16_t flags : 4;
    std::uint16_t reader;
    std::uint16_t write_site, read_site;  // program counters, as indexes into sites_
  };
  static_assert(sizeof(Shadow) == 16, "two words per byte");
  static bool same(const Shadow& a, const Shadow& b) {
    std::uint64_t x[2], y[2];
    std::memcpy(x, &a, 16);
    std::memcpy(y, &b, 16);
    return x[0] == y[0] && x[1] == y[1];
  }
  static constexpr std::uint8_t kPending = 1;    // an asynchronous copy issued by `writer` is filling it
  static constexpr std::uint8_t kPendingTma = 2;  // … and it is a TMA load (else a cp.async)
  static constexpr std::uint8_t kReadSet = 4;    // `read` indexes read_sets_
  static constexpr std::uint8_t kMbarrier = 8;   // part of a live mbarrier object

  // Several unordered reads of one byte: each reader's latest read, those
  // that happen before a later read dropped (they happen before whatever
  // that read happens before).
  struct ReadEntry {
    std::uint16_t slot, site;
    Clock clock;
  };
  struct ReadSetRange {
    std::uint32_t first, count;
  };
  struct TransitionKey {
    std::uint64_t from, to;
    bool operator==(const TransitionKey&) const = default;
  };
  // A direct-mapped cache of read-set transitions: a miss recomputes the
  // transition (a new set), so the cache only saves work and memory.
  struct Transition {
    TransitionKey key;
    std::uint32_t result;
    bool valid;
  };
  static constexpr std::size_t kTransitionCacheSize = 4096;
  static std::size_t transition_slot(const TransitionKey& key) {
    return static_cast<std::size_t>((key.from * 0x9e3779b97f4a7c15ull ^ key.to * 0xc2b2ae3d27d4eb4full) >> 52);
  }
  struct SiteCacheEntry {
    const void* pc;
    std::uint16_t site;
  };
  static constexpr std::size_t kSiteCacheSize = 256;

  // The accessor as the shadow records it.
  struct Accessor {
    const Clock* ordered_after;
    Epoch epoch;
    std::uint16_t site;
    SimThread* thread;  // named in reports
    const char* what;   // async accesses: the operation; null for a thread's own
    const void* pc;
  };

  std::uint16_t site_of(const void* pc);
  void check_bounds(SimThread& thread, std::uint32_t address, std::size_t bytes, std::size_t alignment,
                    const char* what, const void* pc);
  // Calls update(shadow, i) for byte i of [address, address + bytes).
  template <typename Update>
  void update_shadow(std::uint32_t address, std::size_t bytes, Update update);
  void read_bytes(const Accessor& access, std::uint32_t address, std::size_t bytes, bool async_proxy);
  void land(std::uint32_t address, std::size_t bytes, Epoch epoch);
  void write_bytes(const Accessor& access, std::uint32_t address, std::size_t bytes, bool reserve, bool tma);
  // The shadow after `access` reads a byte in state `s` (a read-set transition).
  void record_read(Shadow& s, const Accessor& access);
  // The first read of `s` that does not happen before `access`, if any.
  bool unordered_read(const Shadow& s, const Clock* ordered_after, ReadEntry& found) const;
  void compact_read_sets();
  std::string who(int slot) const;

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
  HappensBefore* order_ = nullptr;
  std::vector<Shadow> shadow_;
  std::vector<const void*> sites_;
  std::unordered_map<const void*, std::uint16_t> site_index_;
  std::vector<ReadEntry> read_entries_;
  std::vector<ReadSetRange> read_sets_;
  std::vector<Transition> transitions_;
  std::uint64_t compactions_ = 0;
  std::vector<ReadEntry> kept_;  // scratch for a new read set
  std::vector<SiteCacheEntry> site_cache_;
};

}  // namespace cudasim
