// The warpgroup instructions (PTX ISA 9.0, 9.7.15 "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate Instructions"; 9.7.19.5 "setmaxnreg"): the
// entry points of device_runtime.hpp. Each is a warpgroup collective
// (execution.hpp): .aligned, every thread of the warpgroup at one place.
//
// A wgmma.mma_async takes its accumulator input at issue (or, chained on an
// in-flight wgmma of the same shape, that wgmma's result), reads its shared
// operands at issue, and leaves poison in the accumulator registers until the
// wgmma.wait_group that covers its wgmma-group, where its result lands.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/device_runtime.hpp"
#include "harness/cudasim/instructions.hpp"
#include "harness/cudasim/report_text.hpp"
#include "harness/cudasim/schedule_trace.hpp"
#include "harness/dtype.hpp"

namespace cudasim {
namespace {

#define CUDASIM_PC __builtin_return_address(0)

// What each thread brings to a wgmma.mma_async.
struct WgmmaThreadOperands {
  float* d;
  std::uint64_t descriptor_a, descriptor_b;
  const std::uint32_t* a;  // the register form's A fragment (4 registers), else null
  bool scale_d;
};

// The instruction's qualifiers and immediates, the same for every thread.
struct WgmmaShape {
  MmaInputType type;
  int n;
  bool a_in_registers, trans_a, trans_b;
  int scale_a, scale_b;
};
std::uint64_t encode(const WgmmaShape& shape) {
  return static_cast<std::uint64_t>(shape.type) | static_cast<std::uint64_t>(shape.n) << 1 |
         std::uint64_t{shape.a_in_registers} << 10 | std::uint64_t{shape.trans_a} << 11 |
         std::uint64_t{shape.trans_b} << 12 | std::uint64_t{shape.scale_a < 0} << 13 |
         std::uint64_t{shape.scale_b < 0} << 14;
}
WgmmaShape decode(std::uint64_t q) {
  return WgmmaShape{static_cast<MmaInputType>(q & 1), static_cast<int>(q >> 1 & 0x1ff), (q >> 10 & 1) != 0,
                    (q >> 11 & 1) != 0, (q >> 12 & 1) != 0, (q >> 13 & 1) ? -1 : 1, (q >> 14 & 1) ? -1 : 1};
}

double decode_element(MmaInputType type, std::uint16_t bits) {
  return type == MmaInputType::f16 ? attnbench::half_to_float(bits) : attnbench::bfloat16_to_float(bits);
}

// The join of the warpgroup's clocks: what its wgmma is ordered after (every
// access that happens before any of its threads' issue).
const Clock* warpgroup_view(Cta& cta, WarpgroupState& group) {
  HappensBefore& order = cta.order();
  std::uint64_t key = 0;
  for (int i = 0; i < 128; ++i) key += order.clock(128 * group.index + i)[128 * group.index + i];
  if (group.view.empty() || key != group.view_key) {
    group.view = order.empty_clock();
    for (int i = 0; i < 128; ++i) order.join_into(group.view, 128 * group.index + i);
    group.view_key = key;
  }
  return group.view.data();
}

int wgmma_agent(Cta& cta, WarpgroupState& group, SimThread& reporter, const void* pc) {
  if (group.wgmma_agent < 0) {
    group.wgmma_agent = cta.order().new_agent("the wgmma of warpgroup " + std::to_string(group.index));
    if (group.wgmma_agent < 0) {
      report_fatal(&reporter, "too many asynchronous agents",
                   "the simulator tracks at most " + std::to_string(HappensBefore::kMaxAgents) +
                       " mbarriers, warpgroups and bulk-copy threads per CTA",
                   pc);
    }
  }
  return group.wgmma_agent;
}

RegisterRecord* find_record(SimThread& t, const void* begin) {
  for (RegisterRecord& record : t.wgmma.records) {
    if (record.begin == begin) return &record;
  }
  return nullptr;
}

// The simulator writes (landing) or reads (issue) a register operand: what it left there is known.
void remember_registers(SimThread& t, const void* begin, std::size_t bytes) {
  RegisterRecord* record = find_record(t, begin);
  if (!record || record->known.size() != bytes) {
    std::erase_if(t.wgmma.records, [&](const RegisterRecord& r) {
      return r.begin < static_cast<const unsigned char*>(begin) + bytes && static_cast<const unsigned char*>(begin) <
                                                                                r.begin + r.known.size();
    });
    record = &t.wgmma.records.emplace_back();
    record->begin = static_cast<const unsigned char*>(begin);
  }
  record->known.assign(record->begin, record->begin + bytes);
  record->has_fenced = false;
}

// 9.7.15.7.1 "wgmma.fence": a wgmma.fence is needed before the first
// wgmma.mma_async, and between a register access and a wgmma.mma_async that
// accesses the same registers (but for accumulators chained across wgmmas of
// the same shape). The simulator sees a write as a change of the registers'
// contents since it last wrote or read them, or since the last wgmma.fence.
// Registers it has never seen (their first use) count as fenced when a fence
// opened the batch of wgmmas being issued (none committed since it): several
// A fragments written before one fence, then used by consecutive RS wgmmas,
// as a P·V product does.
bool fenced_registers(SimThread& t, const void* begin, std::size_t bytes) {
  if (t.wgmma.fences == 0) return false;
  const RegisterRecord* record = find_record(t, begin);
  if (!record || record->known.size() != bytes) {
    return t.wgmma.issued == 0 || t.wgmma.fences > t.wgmma.fences_at_last_issue ||
           t.wgmma.fences > t.wgmma.fences_at_last_commit;
  }
  const std::vector<unsigned char>& expected = record->has_fenced ? record->fenced : record->known;
  return std::memcmp(expected.data(), begin, bytes) == 0;
}

void register_in_flight(SimThread& t, const void* begin, std::size_t bytes, std::uint32_t group, const char* what,
                        const void* pc) {
  for (InFlightRegisters& registers : t.wgmma.registers) {
    if (registers.begin == begin && registers.bytes == bytes) {
      registers.group = group;
      return;
    }
  }
  t.wgmma.registers.push_back(InFlightRegisters{static_cast<const unsigned char*>(begin), bytes, group, what, pc});
}

}  // namespace

// 9.7.15.7.1 "wgmma.fence.sync.aligned".
void wgmma_fence() {
  warpgroup_collective(CollectiveKind::wgmma_fence, 0, CUDASIM_PC, nullptr, nullptr, [](WarpgroupState& group, Cta& cta) {
    for (int i = 0; i < 128; ++i) {
      SimThread& t = warpgroup_thread(cta, group.index, i);
      ++t.wgmma.fences;
      for (RegisterRecord& record : t.wgmma.records) {
        record.fenced.assign(record.begin, record.begin + record.known.size());
        record.has_fenced = true;
      }
    }
  });
}

// 9.7.15.5.2 "wgmma.mma_async" (.m64nNk16.f32 with .f16 or .bf16 inputs; A
// from a matrix descriptor or from registers, B from a descriptor).
void wgmma_mma_async(MmaInputType type, int n, float* d, std::uint64_t descriptor_a, const std::uint32_t* a_registers,
                     std::uint64_t descriptor_b, bool scale_d, int scale_a, int scale_b, bool trans_a, bool trans_b) {
  const void* pc = CUDASIM_PC;
  SimThread& caller = *current_thread;
  if (n < 8 || n > 256 || n % 8 != 0) {
    report_fatal(&caller, "invalid wgmma", "wgmma.mma_async.m64n" + std::to_string(n) +
                                               "k16: N must be a multiple of 8 from 8 to 256 (9.7.15.2)",
                 pc);
  }
  const WgmmaThreadOperands operands{d, descriptor_a, descriptor_b, a_registers, scale_d};
  const WgmmaShape shape{type, n, a_registers != nullptr, trans_a, trans_b, scale_a, scale_b};
  warpgroup_collective(CollectiveKind::wgmma_mma, encode(shape), pc, &operands, nullptr, [](WarpgroupState& group,
                                                                                             Cta& cta) {
    const WgmmaShape s = decode(group.qualifiers);
    const int columns = s.n;
    const auto* first = static_cast<const WgmmaThreadOperands*>(group.inputs[0]);
    SimThread& leader = warpgroup_thread(cta, group.index, 0);
    for (int i = 1; i < 128; ++i) {
      const auto* mine = static_cast<const WgmmaThreadOperands*>(group.inputs[static_cast<std::size_t>(i)]);
      if ((!s.a_in_registers && mine->descriptor_a != first->descriptor_a) ||
          mine->descriptor_b != first->descriptor_b || mine->scale_d != first->scale_d) {
        report(&warpgroup_thread(cta, group.index, i), "divergent wgmma operands",
               "the matrix descriptors and scale-d of a wgmma.mma_async must be the same in every thread of the "
               "warpgroup (9.7.15.5.2); this thread's differ from thread " + std::to_string(128 * group.index) +
                   "'s (the simulator uses those)",
               group.pc, false);
        break;
      }
    }
    // The operands' shared bytes, read by the async proxy on behalf of the warpgroup.
    const std::uint32_t open_group = leader.wgmma.committed + 1;
    const AsyncAccess access{"", &leader, cta.sanitize() ? warpgroup_view(cta, group) : nullptr,
                             cta.order().counted_epoch(wgmma_agent(cta, group, leader, group.pc), open_group),
                             group.pc};
    std::vector<double> a(64 * 16), b(static_cast<std::size_t>(16 * columns));
    const auto read_operand = [&](std::uint64_t descriptor, bool mn_major, int rows, double negate, bool is_a,
                                  const auto& store) {
      const ptx::MatrixDescriptor decoded = ptx::decode_matrix_descriptor(descriptor);
      const char* what = is_a ? "wgmma operand A" : "wgmma operand B";
      if (decoded.swizzle != ptx::Swizzle::none) {
        const std::uint32_t lines = static_cast<std::uint32_t>(ptx::swizzle_bytes(decoded.swizzle)) / 16;
        const std::uint32_t line = decoded.start_address >> 7 & (lines - 1);
        const std::string start = std::string(what) + ": descriptor " + hex(descriptor) + " starts at " +
                                  cta.shared().describe_address(decoded.start_address) + ", line " +
                                  std::to_string(line) + " of its " +
                                  std::to_string(ptx::swizzle_bytes(decoded.swizzle)) +
                                  "-byte swizzle's repeating pattern, with base offset " +
                                  std::to_string(decoded.base_offset);
        const std::string boundary = std::to_string(8 * ptx::swizzle_bytes(decoded.swizzle)) + "-byte boundary";
        if (line != 0) {
          // Two readings fit 9.7.15.5.1.2.2's text; only a GPU can say which the hardware has.
          report(&leader, "unsettled matrix descriptor",
                 start + ". Whether wgmma swizzles such an operand on the absolute address bits (the simulator's "
                         "reading) or on rows counted from the pattern start its base offset names is unsettled by "
                         "the ISA until a GPU decides it (docs/cudasim.md, \"Matrix descriptors\"; the differential "
                         "check's probe): start the operand at a " + boundary,
                 group.pc, false);
        } else if (decoded.base_offset != 0) {
          report(&leader, "misaligned matrix descriptor",
                 start + " (9.7.15.5.1.2.2: the base offset is 0 when the pattern starts at a " + boundary +
                     ", else (pattern start >> 7) & 7)",
                 group.pc, false);
        }
      }
      AsyncAccess operand = access;
      operand.what = what;
      // Each 16-byte chunk holds 8 consecutive elements along the contiguous dimension.
      for (int mn = 0; mn < rows; mn += mn_major ? 8 : 1) {
        for (int k = 0; k < 16; k += mn_major ? 1 : 8) {
          const std::uint32_t address = ptx::wgmma_element_address(decoded, mn_major, mn, k);
          const unsigned char* bytes = cta.shared().async_read(operand, address, 16);
          for (int e = 0; e < 8; ++e) {
            std::uint16_t bits;
            std::memcpy(&bits, bytes + 2 * e, 2);
            store(mn_major ? mn + e : mn, mn_major ? k : k + e, negate * decode_element(s.type, bits));
          }
        }
      }
    };
    if (s.a_in_registers) {
      for (int i = 0; i < 128; ++i) {
        const auto* mine = static_cast<const WgmmaThreadOperands*>(group.inputs[static_cast<std::size_t>(i)]);
        for (int e = 0; e < 8; ++e) {
          const ptx::Element at = ptx::wgmma_a_element(i, e);
          const auto bits = static_cast<std::uint16_t>(mine->a[e / 2] >> (16 * (e % 2)));
          a[static_cast<std::size_t>(at.row * 16 + at.column)] = s.scale_a * decode_element(s.type, bits);
        }
      }
    } else {
      read_operand(first->descriptor_a, s.trans_a, 64, s.scale_a, true,
                   [&](int row, int k, double value) { a[static_cast<std::size_t>(row * 16 + k)] = value; });
    }
    read_operand(first->descriptor_b, s.trans_b, columns, s.scale_b, false,
                 [&](int column, int k, double value) { b[static_cast<std::size_t>(k * columns + column)] = value; });

    // The accumulator input of every thread, taken now; the result lands at the wait.
    std::vector<float> c(static_cast<std::size_t>(64 * columns));
    const int registers = columns / 2;
    const std::size_t register_bytes = sizeof(float) * static_cast<std::size_t>(registers);
    bool reported = false;
    for (int i = 0; i < 128; ++i) {
      SimThread& t = warpgroup_thread(cta, group.index, i);
      const auto* mine = static_cast<const WgmmaThreadOperands*>(group.inputs[static_cast<std::size_t>(i)]);
      const auto chained = std::find_if(t.wgmma.accumulators.begin(), t.wgmma.accumulators.end(),
                                        [&](const InFlightAccumulator& in) { return in.registers == mine->d; });
      const bool is_chained = chained != t.wgmma.accumulators.end() && chained->count == registers;
      if (chained != t.wgmma.accumulators.end() && !is_chained && !reported) {
        reported = true;
        report(&t, "wgmma on the accumulators of another in flight",
               "this wgmma.mma_async.m64n" + std::to_string(columns) + "k16 uses the accumulator registers of an in-flight "
               "wgmma of another shape (only wgmmas of one shape chain without a wgmma.wait_group, 9.7.15.7.1)",
               group.pc, false, chained->pc, "the in-flight wgmma");
      }
      if (cta.sanitize() && !reported) {
        const bool accumulator_fenced = is_chained || fenced_registers(t, mine->d, register_bytes);
        const bool a_fenced = !s.a_in_registers || fenced_registers(t, mine->a, 4 * sizeof(std::uint32_t));
        if (!accumulator_fenced || !a_fenced) {
          reported = true;
          report(&t, "wgmma without wgmma.fence",
                 t.wgmma.fences == 0
                     ? std::string("no wgmma.fence before the warpgroup's first wgmma.mma_async")
                     : std::string("the thread wrote the ") + (accumulator_fenced ? "A fragment" : "accumulator") +
                           " registers of this wgmma.mma_async with no wgmma.fence between the write and the wgmma",
                 group.pc, false);
        }
      }
      for (int r = 0; r < registers; ++r) {
        const ptx::Element at = ptx::wgmma_accumulator_element(i, r);
        c[static_cast<std::size_t>(at.row * columns + at.column)] =
            is_chained ? chained->values[static_cast<std::size_t>(r)] : mine->d[r];
      }
    }
    ptx::wgmma_m64nNk16(columns, a.data(), b.data(), first->scale_d, c.data());
    for (int i = 0; i < 128; ++i) {
      SimThread& t = warpgroup_thread(cta, group.index, i);
      const auto* mine = static_cast<const WgmmaThreadOperands*>(group.inputs[static_cast<std::size_t>(i)]);
      auto in_flight = std::find_if(t.wgmma.accumulators.begin(), t.wgmma.accumulators.end(),
                                    [&](const InFlightAccumulator& in) { return in.registers == mine->d; });
      if (in_flight == t.wgmma.accumulators.end()) {
        in_flight = t.wgmma.accumulators.insert(t.wgmma.accumulators.end(), InFlightAccumulator{});
        in_flight->registers = mine->d;
      }
      in_flight->count = registers;
      in_flight->group = t.wgmma.committed + 1;
      in_flight->pc = group.pc;
      in_flight->values.resize(static_cast<std::size_t>(registers));
      for (int r = 0; r < registers; ++r) {
        const ptx::Element at = ptx::wgmma_accumulator_element(i, r);
        in_flight->values[static_cast<std::size_t>(r)] = c[static_cast<std::size_t>(at.row * columns + at.column)];
      }
      std::memset(mine->d, 0xff, register_bytes);  // poison until the wait
      if (cta.sanitize()) {
        remember_registers(t, mine->d, register_bytes);
        register_in_flight(t, mine->d, register_bytes, t.wgmma.committed + 1, "accumulator", group.pc);
        if (s.a_in_registers) {
          remember_registers(t, mine->a, 4 * sizeof(std::uint32_t));
          register_in_flight(t, mine->a, 4 * sizeof(std::uint32_t), t.wgmma.committed + 1, "A fragment", group.pc);
        }
      }
      ++t.wgmma.issued;
      t.wgmma.fences_at_last_issue = t.wgmma.fences;
    }
  });
}

// 9.7.15.7.2 "wgmma.commit_group.sync.aligned": the warpgroup's uncommitted
// wgmma.mma_async operations form a wgmma-group (possibly empty).
void wgmma_commit_group() {
  warpgroup_collective(CollectiveKind::wgmma_commit, 0, CUDASIM_PC, nullptr, nullptr, [](WarpgroupState& group, Cta& cta) {
    for (int i = 0; i < 128; ++i) {
      SimThread& t = warpgroup_thread(cta, group.index, i);
      ++t.wgmma.committed;
      t.wgmma.fences_at_last_commit = t.wgmma.fences;
    }
    if (schedule_traced()) {
      const GridLaunch& grid = cta.launch().configuration();
      const uint3 block = cta.block();
      trace_wgmma_commit(block.x + std::uint64_t{grid.grid.x} * (block.y + std::uint64_t{grid.grid.y} * block.z),
                         group.index);
    }
  });
}

// 9.7.15.7.3 "wgmma.wait_group.sync.aligned N": all but the N most recent
// wgmma-groups complete; their results land in the accumulator registers, and
// their shared-memory reads happen before the threads' later accesses (9.7.15.4:
// the completion is followed by an implicit generic-async proxy fence).
void wgmma_wait_group(int pending) {
  warpgroup_collective(CollectiveKind::wgmma_wait, static_cast<std::uint64_t>(std::max(pending, 0)), CUDASIM_PC, nullptr,
                       nullptr, [](WarpgroupState& group, Cta& cta) {
                         const auto keep = static_cast<std::uint32_t>(group.qualifiers);
                         for (int i = 0; i < 128; ++i) {
                           SimThread& t = warpgroup_thread(cta, group.index, i);
                           if (t.wgmma.committed <= keep) continue;
                           const std::uint32_t complete = t.wgmma.committed - keep;
                           if (complete <= t.wgmma.completed) continue;
                           t.wgmma.completed = complete;
                           for (const InFlightAccumulator& in : t.wgmma.accumulators) {
                             if (in.group > complete) continue;
                             std::memcpy(in.registers, in.values.data(), sizeof(float) * in.values.size());
                             if (cta.sanitize()) remember_registers(t, in.registers, sizeof(float) * in.values.size());
                           }
                           std::erase_if(t.wgmma.accumulators,
                                         [&](const InFlightAccumulator& in) { return in.group <= complete; });
                           std::erase_if(t.wgmma.registers,
                                         [&](const InFlightRegisters& in) { return in.group <= complete; });
                           if (cta.sanitize() && group.wgmma_agent >= 0) {
                             cta.order().acquire(t.linear, cta.order().counted_epoch(group.wgmma_agent, complete));
                           }
                         }
                       });
}

// 9.7.19.5 "setmaxnreg.{inc,dec}.sync.aligned.u32": a count from 24 to 256, a
// multiple of 8, the same in every warp of the warpgroup; .inc never lowers
// and .dec never raises the warpgroup's count. Register pressure itself is
// ptxas's to check: the simulator checks only that the CTA's warpgroups do
// not ask for more than the SM's 64K registers, which .inc would wait for forever.
void setmaxnreg(bool increase, int count) {
  const void* pc = CUDASIM_PC;
  SimThread& t = *current_thread;
  if (count < 24 || count > 256 || count % 8 != 0) {
    report_fatal(&t, "invalid setmaxnreg",
                 std::string("setmaxnreg.") + (increase ? "inc" : "dec") + " " + std::to_string(count) +
                     ": the count must be a multiple of 8 from 24 to 256",
                 pc);
  }
  warpgroup_collective(CollectiveKind::setmaxnreg, static_cast<std::uint64_t>(count) << 1 | (increase ? 1u : 0u), pc,
                       nullptr, nullptr, [](WarpgroupState& group, Cta& cta) {
                         const bool inc = (group.qualifiers & 1) != 0;
                         const int requested = static_cast<int>(group.qualifiers >> 1);
                         SimThread& leader = warpgroup_thread(cta, group.index, 0);
                         if (group.registers != 0 && (inc ? requested < group.registers : requested > group.registers)) {
                           report(&leader, "invalid setmaxnreg",
                                  std::string("setmaxnreg.") + (inc ? "inc " : "dec ") + std::to_string(requested) +
                                      " on warpgroup " + std::to_string(group.index) + ", which holds " +
                                      std::to_string(group.registers) + " registers per thread (.inc may only raise "
                                      "and .dec only lower the count)",
                                  group.pc, false);
                         }
                         group.registers = requested;
                         int total = 0, set = 0;
                         const int groups = cta.thread_count() / 128;
                         for (int g = 0; g < groups; ++g) {
                           total += 128 * cta.warpgroup(g).registers;
                           set += cta.warpgroup(g).registers != 0;
                         }
                         if (set == groups && total > 65536) {
                           report(&leader, "setmaxnreg asks for more registers than the SM has",
                                  "the CTA's warpgroups ask for " + std::to_string(total) +
                                      " registers in all, more than the 65536 of an sm_90 SM: setmaxnreg.inc would "
                                      "wait forever for registers no warpgroup releases",
                                  group.pc, false);
                         }
                       });
}

}  // namespace cudasim
