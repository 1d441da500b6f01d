// What a simulated thread has in flight: its cp.async groups, its part of its
// warpgroup's wgmma operations, and its bulk async-groups (TMA stores). Each
// completes at the wait that covers it (docs/cudasim.md): until then its
// destination reads as poison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace cudasim {

// One cp.async, from issue until the cp.async.wait_group that covers its group.
struct PendingCopy {
  std::uint32_t destination = 0;          // shared-window address
  const unsigned char* source = nullptr;  // global memory
  std::uint32_t source_bytes = 0;         // the rest of the 16 bytes is zero-filled
  const void* pc = nullptr;
};

// A wgmma's accumulator registers, from issue until the wgmma.wait_group that
// covers its wgmma-group: the registers hold poison, `values` what lands.
struct InFlightAccumulator {
  float* registers = nullptr;
  int count = 0;  // N/2 registers of m64nNk16
  std::uint32_t group = 0;
  std::vector<float> values;
  const void* pc = nullptr;
};

// Registers of an in-flight wgmma (accumulators, or the A fragment of the
// register form) that the thread must not touch until the group completes.
struct InFlightRegisters {
  const unsigned char* begin = nullptr;
  std::size_t bytes = 0;
  std::uint32_t group = 0;
  const char* what = "";
  const void* pc = nullptr;
};

// What the thread's registers held when the simulator last wrote or read them
// for a wgmma (landing, issue) and at the last wgmma.fence: a wgmma whose
// register operands changed since, with no wgmma.fence after the change, is a
// finding (wgmma.fence orders the warpgroup's register accesses before it).
struct RegisterRecord {
  const unsigned char* begin = nullptr;
  std::vector<unsigned char> known;   // as the simulator last left them
  std::vector<unsigned char> fenced;  // as they were at the last wgmma.fence since
  bool has_fenced = false;
};

struct WgmmaThreadState {
  std::vector<InFlightAccumulator> accumulators;
  std::vector<InFlightRegisters> registers;
  std::vector<RegisterRecord> records;
  std::uint32_t committed = 0;  // wgmma-groups committed; the open group is committed + 1
  std::uint32_t completed = 0;  // groups a wgmma.wait_group covered
  std::uint64_t fences = 0;     // wgmma.fence executed
  std::uint64_t fences_at_last_issue = 0;
  std::uint64_t fences_at_last_commit = 0;
  std::uint32_t issued = 0;     // wgmma.mma_async issued
};

// A TMA store's global writes (or a cp.reduce.async.bulk's adds), from issue
// until its bulk async-group completes.
struct BulkStore {
  std::vector<unsigned char> data;
  bool add = false;  // .add.f32: each fp32 element is added to its destination, atomically
  struct Run {
    unsigned char* destination;
    std::uint32_t offset, bytes;
  };
  std::vector<Run> runs;
  const void* pc = nullptr;
};

struct BulkThreadState {
  int agent = -1;  // the slot whose clock counts this thread's bulk async-groups
  std::vector<BulkStore> open;
  std::deque<std::vector<BulkStore>> committed;  // oldest first; reads done or not
  std::uint32_t committed_count = 0;
  std::uint32_t read_complete = 0;  // groups a wait_group (.read or not) covered
  const void* first_pc = nullptr;
};

}  // namespace cudasim
