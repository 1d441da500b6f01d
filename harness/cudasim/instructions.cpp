// The PTX semantics of instructions.hpp, and the per-thread entry points of
// device_runtime.hpp that execute them on the simulator: barriers, warp
// collectives, shared-memory and asynchronous-copy instructions, atomics.
#include "harness/cudasim/instructions.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/device_runtime.hpp"
#include "harness/cudasim/report_text.hpp"
#include "harness/cudasim/schedule_trace.hpp"
#include "harness/dtype.hpp"

namespace cudasim {
namespace ptx {

Element mma_a_element(int lane, int i) {
  const int group = lane >> 2, thread_in_group = lane % 4;
  const int row = (i < 2 || (i >= 4 && i < 6)) ? group : group + 8;
  const int column = thread_in_group * 2 + (i & 1) + (i >= 4 ? 8 : 0);
  return Element{row, column};
}

Element mma_b_element(int lane, int i) {
  const int group = lane >> 2, thread_in_group = lane % 4;
  return Element{thread_in_group * 2 + (i & 1) + (i >= 2 ? 8 : 0), group};
}

Element mma_c_element(int lane, int i) {
  const int group = lane >> 2, thread_in_group = lane % 4;
  return Element{i < 2 ? group : group + 8, thread_in_group * 2 + (i & 1)};
}

namespace {

// Every fp16 value, decoded once (mma reads 512 of them per instruction).
const std::vector<float>& half_values() {
  static const std::vector<float> values = [] {
    std::vector<float> table(65536);
    for (std::uint32_t bits = 0; bits < 65536; ++bits) table[bits] = attnbench::half_to_float(static_cast<std::uint16_t>(bits));
    return table;
  }();
  return values;
}

double decode(MmaInputType type, std::uint16_t bits) {
  return type == MmaInputType::f16 ? half_values()[bits] : attnbench::bfloat16_to_float(bits);
}
std::uint16_t half_of(std::uint32_t reg, int half) { return static_cast<std::uint16_t>(reg >> (16 * half)); }

}  // namespace

namespace {

// Where element i of lane l's fragments sits, for the loops of mma_m16n8k16.
struct FragmentMaps {
  Element a[32][8], b[32][4], c[32][4];
};
const FragmentMaps& fragment_maps() {
  static const FragmentMaps maps = [] {
    FragmentMaps m{};
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 8; ++i) m.a[lane][i] = mma_a_element(lane, i);
      for (int i = 0; i < 4; ++i) {
        m.b[lane][i] = mma_b_element(lane, i);
        m.c[lane][i] = mma_c_element(lane, i);
      }
    }
    return m;
  }();
  return maps;
}

}  // namespace

void mma_m16n8k16(MmaInputType type, const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][2],
                  const float (&c)[32][4], float (&d)[32][4]) {
  const FragmentMaps& maps = fragment_maps();
  double A[16][16], B[16][8], D[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) A[maps.a[lane][i].row][maps.a[lane][i].column] = decode(type, half_of(a[lane][i / 2], i % 2));
    for (int i = 0; i < 4; ++i) {
      B[maps.b[lane][i].row][maps.b[lane][i].column] = decode(type, half_of(b[lane][i / 2], i % 2));
      D[maps.c[lane][i].row][maps.c[lane][i].column] = c[lane][i];
    }
  }
  // D = C + A[·][0]·B[0][·] + A[·][1]·B[1][·] + …: every element sums in order of k.
  for (int row = 0; row < 16; ++row) {
    for (int k = 0; k < 16; ++k) {
      for (int column = 0; column < 8; ++column) D[row][column] += A[row][k] * B[k][column];
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) d[lane][i] = static_cast<float>(D[maps.c[lane][i].row][maps.c[lane][i].column]);
  }
}

std::uint32_t ldmatrix_register(const std::uint16_t (&rows)[4][8][8], int matrix, int lane, bool transposed) {
  const auto (&m)[8][8] = rows[matrix];
  const int quad = lane / 4, pair = 2 * (lane % 4);
  const std::uint16_t low = transposed ? m[pair][quad] : m[quad][pair];
  const std::uint16_t high = transposed ? m[pair + 1][quad] : m[quad][pair + 1];
  return std::uint32_t{low} | std::uint32_t{high} << 16;
}

int shuffle_source_lane(ShuffleMode mode, int lane, std::uint32_t b, std::uint32_t c, bool& in_range) {
  const int bval = static_cast<int>(b & 0x1f);
  const int cval = static_cast<int>(c & 0x1f);
  const int segmask = static_cast<int>((c >> 8) & 0x1f);
  const int max_lane = (lane & segmask) | (cval & ~segmask);
  const int min_lane = lane & segmask;
  int j = lane;
  switch (mode) {
    case ShuffleMode::up:
      j = lane - bval;
      in_range = j >= max_lane;
      break;
    case ShuffleMode::down:
      j = lane + bval;
      in_range = j <= max_lane;
      break;
    case ShuffleMode::butterfly:
      j = lane ^ bval;
      in_range = j <= max_lane;
      break;
    case ShuffleMode::index:
      j = min_lane | (bval & ~segmask);
      in_range = j <= max_lane;
      break;
  }
  return in_range ? j : lane;
}

float ex2_approx_ftz(float x) {
  if (std::fpclassify(x) == FP_SUBNORMAL) x = std::copysign(0.0f, x);
  const float y = static_cast<float>(std::exp2(static_cast<double>(x)));
  return std::fpclassify(y) == FP_SUBNORMAL ? 0.0f : y;
}

// ---- Hopper (sm_90a) -----------------------------------------------------------------

int swizzle_bytes(Swizzle swizzle) {
  switch (swizzle) {
    case Swizzle::none:
      return 16;
    case Swizzle::bytes32:
      return 32;
    case Swizzle::bytes64:
      return 64;
    case Swizzle::bytes128:
      return 128;
  }
  return 16;
}

// 5.5.7: the pattern tables (16-byte chunks, 128-byte lines) are an XOR of the
// chunk index (address bits 4 and up) with the line index within the pattern
// (address bits 7 and up): one bit for 32-byte swizzle, two for 64, three for 128.
std::uint32_t swizzle_address(std::uint32_t address, Swizzle swizzle) {
  const int bits = swizzle == Swizzle::bytes32 ? 1 : swizzle == Swizzle::bytes64 ? 2 : swizzle == Swizzle::bytes128 ? 3 : 0;
  const std::uint32_t mask = (1u << bits) - 1;
  return address ^ (((address >> 7) & mask) << 4);
}

MatrixDescriptor decode_matrix_descriptor(std::uint64_t descriptor) {
  const auto field = [descriptor](int low, int width) {
    return static_cast<std::uint32_t>(descriptor >> low) & ((1u << width) - 1);
  };
  MatrixDescriptor decoded;
  decoded.start_address = field(0, 14) << 4;
  decoded.leading_byte_offset = field(16, 14) << 4;
  decoded.stride_byte_offset = field(32, 14) << 4;
  decoded.base_offset = field(49, 3);
  static constexpr Swizzle kModes[4] = {Swizzle::none, Swizzle::bytes128, Swizzle::bytes64, Swizzle::bytes32};
  decoded.swizzle = kModes[field(62, 2)];
  return decoded;
}

std::uint32_t wgmma_element_address(const MatrixDescriptor& d, bool mn_major, int mn, int k) {
  const auto umn = static_cast<std::uint32_t>(mn), uk = static_cast<std::uint32_t>(k);
  const std::uint32_t width = static_cast<std::uint32_t>(swizzle_bytes(d.swizzle));
  std::uint32_t offset;
  if (!mn_major) {
    // ((8,m),(T,2k)):((1T,SBO),(1,LBO)) without swizzle; ((8,m),(T,2k)):((S·T,SBO),(1,T)) with.
    offset = d.swizzle == Swizzle::none ? umn % 8 * 16 + umn / 8 * d.stride_byte_offset + uk % 8 * 2 +
                                              uk / 8 * d.leading_byte_offset
                                        : umn % 8 * width + umn / 8 * d.stride_byte_offset + uk * 2;
  } else if (d.swizzle == Swizzle::none) {
    // ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
    offset = umn % 8 * 2 + umn / 8 * d.stride_byte_offset + uk % 8 * 16 + uk / 8 * d.leading_byte_offset;
  } else {
    // ((T,S,m),(8,k)):((1,T,LBO),(S·T,SBO)): S·T = width / 2 elements of mn per line.
    const std::uint32_t span = width / 2;
    offset = umn % span * 2 + umn / span * d.leading_byte_offset + uk % 8 * width + uk / 8 * d.stride_byte_offset;
  }
  return swizzle_address(d.start_address + offset, d.swizzle);
}

Element wgmma_accumulator_element(int thread, int i) {
  const int warp = thread / 32, lane = thread % 32;
  return Element{16 * warp + lane / 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)};
}

Element wgmma_a_element(int thread, int i) {
  const int warp = thread / 32, lane = thread % 32;
  return Element{16 * warp + lane / 4 + 8 * ((i >> 1) & 1), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)};
}

void wgmma_m64nNk16(int n, const double* a, const double* b, bool scale_d, float* d) {
  thread_local std::vector<double> sum;
  sum.resize(static_cast<std::size_t>(64 * n));
  for (int i = 0; i < 64 * n; ++i) sum[static_cast<std::size_t>(i)] = scale_d ? d[i] : 0.0;
  for (int row = 0; row < 64; ++row) {
    double* out = &sum[static_cast<std::size_t>(row * n)];
    for (int k = 0; k < 16; ++k) {
      const double x = a[row * 16 + k];
      const double* in = b + k * n;
      for (int column = 0; column < n; ++column) out[column] += x * in[column];
    }
  }
  for (int i = 0; i < 64 * n; ++i) d[i] = static_cast<float>(sum[static_cast<std::size_t>(i)]);
}

Element stmatrix_element(int lane, int half, bool transposed) {
  const int quad = lane / 4, pair = 2 * (lane % 4) + half;
  return transposed ? Element{pair, quad} : Element{quad, pair};
}

}  // namespace ptx

// ---- entry points ------------------------------------------------------------------

namespace {

#define CUDASIM_PC __builtin_return_address(0)

SimThread& me() { return *current_thread; }

}  // namespace

void check_global_access(SimThread& thread, const void* address, std::size_t bytes, std::size_t alignment,
                         const char* what, const void* pc) {
  std::string why;
  const auto placement =
      thread.cta->launch().memory().place(reinterpret_cast<std::uintptr_t>(address), bytes, &why);
  if (placement == DeviceMemoryMap::Placement::host) return;
  if (alignment > 1 && reinterpret_cast<std::uintptr_t>(address) % alignment != 0) {
    report_fatal(&thread, "misaligned global access",
                 std::string(what) + " of " + std::to_string(bytes) + " bytes at " +
                     hex(reinterpret_cast<std::uintptr_t>(address)) + ", which is not a multiple of " +
                     std::to_string(alignment),
                 pc);
  }
  if (placement == DeviceMemoryMap::Placement::outside) {
    report_fatal(&thread, "out-of-bounds global access",
                 std::string(what) + " of " + std::to_string(bytes) + " bytes at " +
                     hex(reinterpret_cast<std::uintptr_t>(address)) + ": " + why,
                 pc);
  }
}

// 9.7.13.1 "Parallel Synchronization and Communication Instructions: bar, barrier":
// bar.sync without a thread count (__syncthreads) waits for every thread of the
// CTA; with one, for that many; bar.arrive signals without waiting. A barrier
// orders every access before an arrival before every access after a bar.sync.
void barrier_sync() { current_cta().arrive_at_barrier(me(), 0, 0, true, CUDASIM_PC); }
void named_barrier_sync(int id, int threads) { current_cta().arrive_at_barrier(me(), id, threads, true, CUDASIM_PC); }
void named_barrier_arrive(int id, int threads) {
  if (threads == 0) {
    report_fatal(&me(), "invalid barrier", "bar.arrive needs a non-zero thread count", CUDASIM_PC);
  }
  current_cta().arrive_at_barrier(me(), id, threads, false, CUDASIM_PC);
}

// 9.7.13.2 "Parallel Synchronization and Communication Instructions: bar.warp.sync":
// the lanes of the member mask synchronise, which orders their accesses.
void warp_sync(unsigned member_mask) {
  warp_collective(CollectiveKind::warp_sync, 0, member_mask, false, CUDASIM_PC, nullptr, nullptr,
                  [](WarpState& warp, Cta& cta) {
                    if (!cta.sanitize()) return;
                    std::vector<int> lanes;
                    const int warp_index = static_cast<int>(&warp - &cta.warp(0));
                    for (int lane = 0; lane < 32; ++lane) {
                      if (warp.mask >> lane & 1u) lanes.push_back(32 * warp_index + lane);
                    }
                    cta.order().synchronize(lanes);
                  });
}

namespace {
struct ShuffleOperands {
  std::uint32_t value, b, c;
};
}  // namespace

std::uint32_t shuffle_b32(ShuffleMode mode, std::uint32_t value, std::uint32_t b, std::uint32_t c,
                          unsigned member_mask) {
  const ShuffleOperands in{value, b, c};
  std::uint32_t out = 0;
  warp_collective(CollectiveKind::shuffle, static_cast<std::uint32_t>(mode), member_mask, false, CUDASIM_PC, &in,
                  &out, [](WarpState& warp, Cta& cta) {
                    const auto mode_of = static_cast<ShuffleMode>(warp.qualifiers);
                    for (int lane = 0; lane < 32; ++lane) {
                      if (!(warp.mask >> lane & 1u)) continue;
                      const auto* operands = static_cast<const ShuffleOperands*>(warp.inputs[lane]);
                      bool in_range = false;
                      const int source = ptx::shuffle_source_lane(mode_of, lane, operands->b, operands->c, in_range);
                      std::uint32_t result = operands->value;
                      if (in_range && !(warp.mask >> source & 1u)) {
                        SimThread& t = lane_thread(cta, static_cast<int>(&warp - &cta.warp(0)), lane);
                        report(&t, "shuffle from a lane outside the member mask",
                               "lane " + std::to_string(lane) + " reads lane " + std::to_string(source) +
                                   ", which the member mask does not name: the value is undefined",
                               warp.pc, false);
                      } else if (in_range) {
                        result = static_cast<const ShuffleOperands*>(warp.inputs[source])->value;
                      }
                      *static_cast<std::uint32_t*>(warp.outputs[lane]) = result;
                    }
                  });
  return out;
}

// ---- shared memory -----------------------------------------------------------------

unsigned char* dynamic_shared_memory() { return current_cta().shared().base(); }

void* static_shared_memory(const void* site, std::size_t bytes, std::size_t alignment) {
  return current_cta().shared().static_variable(me(), site, bytes, alignment, CUDASIM_PC);
}

// "Data Movement and Conversion Instructions: cvta" (cvta.to.shared).
std::uint32_t generic_to_shared(const void* pointer) {
  SharedMemory& shared = current_cta().shared();
  if (!shared.contains(pointer)) {
    report_fatal(&me(), "cvta.to.shared of a non-shared address",
                 "the generic address " + hex(reinterpret_cast<std::uintptr_t>(pointer)) +
                     " is not in the CTA's shared memory",
                 CUDASIM_PC);
  }
  return static_cast<std::uint32_t>(static_cast<const unsigned char*>(pointer) - shared.base());
}

// "Data Movement and Conversion Instructions: ld / st" (.shared, .u32 / .v2 / .v4).
std::uint32_t load_shared_u32(std::uint32_t address) {
  std::uint32_t value;
  std::memcpy(&value, current_cta().shared().access(me(), address, 4, 4, SharedAccess::read, CUDASIM_PC), 4);
  return value;
}
void store_shared_u32(std::uint32_t address, std::uint32_t value) {
  std::memcpy(current_cta().shared().access(me(), address, 4, 4, SharedAccess::write, CUDASIM_PC), &value, 4);
}
uint2 load_shared_v2_u32(std::uint32_t address) {
  uint2 value;
  std::memcpy(&value, current_cta().shared().access(me(), address, 8, 8, SharedAccess::read, CUDASIM_PC), 8);
  return value;
}
uint4 load_shared_v4_u32(std::uint32_t address) {
  uint4 value;
  std::memcpy(&value, current_cta().shared().access(me(), address, 16, 16, SharedAccess::read, CUDASIM_PC), 16);
  return value;
}

// "Data Movement and Conversion Instructions: cp.async" (.cg, cp-size 16): the
// destination reads as poison (0xff bytes) from issue until a
// cp.async.wait_group covers the copy's group; then src-size bytes of the source
// land and the rest of the 16 is zero-filled.
void cp_async_cg_16(std::uint32_t shared_destination, const void* global_source, std::uint32_t source_bytes) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  if (source_bytes > 16) {
    report_fatal(&t, "invalid cp.async", "src-size " + std::to_string(source_bytes) + " exceeds cp-size 16", pc);
  }
  if (source_bytes > 0) check_global_access(t, global_source, source_bytes, 16, "cp.async source read", pc);
  unsigned char* destination = t.cta->shared().access(t, shared_destination, 16, 16, SharedAccess::async_issue, pc);
  std::memset(destination, 0xff, 16);
  t.open_group.push_back(PendingCopy{shared_destination, static_cast<const unsigned char*>(global_source),
                                     source_bytes, pc});
}

// "cp.async.commit_group": the copies issued since the last commit form a group
// (possibly empty).
void cp_async_commit_group() {
  SimThread& t = me();
  t.committed_groups.push_back(std::move(t.open_group));
  t.open_group.clear();
}

// "cp.async.wait_group": waits until at most `pending` of the most recent groups
// are still in flight; every older group lands.
void cp_async_wait_group(int pending) {
  SimThread& t = me();
  while (t.committed_groups.size() > static_cast<std::size_t>(std::max(pending, 0))) {
    for (const PendingCopy& copy : t.committed_groups.front()) {
      unsigned char* destination =
          t.cta->shared().access(t, copy.destination, 16, 16, SharedAccess::async_land, copy.pc);
      std::memcpy(destination, copy.source, copy.source_bytes);
      std::memset(destination + copy.source_bytes, 0, 16 - copy.source_bytes);
    }
    t.committed_groups.pop_front();
  }
}

// ---- tensor cores ------------------------------------------------------------------

namespace {
struct LdmatrixOut {
  std::uint32_t registers[4];
};
struct MmaOperands {
  std::uint32_t a[4];
  std::uint32_t b[2];
  float c[4];
};
}  // namespace

void ldmatrix_m8n8_b16(int matrices, bool transposed, std::uint32_t row_address, std::uint32_t* registers) {
  LdmatrixOut out{};
  warp_collective(
      CollectiveKind::ldmatrix, static_cast<std::uint32_t>(2 * matrices + (transposed ? 1 : 0)), 0xffffffffu, true,
      CUDASIM_PC, &row_address, &out, [](WarpState& warp, Cta& cta) {
        const int count = static_cast<int>(warp.qualifiers / 2);
        const bool trans = (warp.qualifiers & 1u) != 0;
        const int warp_index = static_cast<int>(&warp - &cta.warp(0));
        std::uint16_t rows[4][8][8] = {};
        for (int m = 0; m < count; ++m) {
          for (int r = 0; r < 8; ++r) {
            const int lane = 8 * m + r;
            const auto address = *static_cast<const std::uint32_t*>(warp.inputs[lane]);
            const unsigned char* bytes = cta.shared().access(lane_thread(cta, warp_index, lane), address, 16, 16,
                                                             SharedAccess::read, warp.pc);
            std::memcpy(rows[m][r], bytes, 16);
          }
        }
        for (int lane = 0; lane < 32; ++lane) {
          auto* result = static_cast<LdmatrixOut*>(warp.outputs[lane]);
          for (int m = 0; m < count; ++m) result->registers[m] = ptx::ldmatrix_register(rows, m, lane, trans);
        }
      });
  std::memcpy(registers, out.registers, sizeof(std::uint32_t) * static_cast<std::size_t>(matrices));
}

void mma_m16n8k16_f32(MmaInputType type, float* d, const std::uint32_t* a, const std::uint32_t* b, const float* c) {
  MmaOperands in{};
  std::memcpy(in.a, a, sizeof in.a);
  std::memcpy(in.b, b, sizeof in.b);
  std::memcpy(in.c, c, sizeof in.c);
  float out[4];
  warp_collective(CollectiveKind::mma, static_cast<std::uint32_t>(type), 0xffffffffu, true, CUDASIM_PC, &in, out,
                  [](WarpState& warp, Cta&) {
                    std::uint32_t fa[32][4], fb[32][2];
                    float fc[32][4], fd[32][4];
                    for (int lane = 0; lane < 32; ++lane) {
                      const auto* operands = static_cast<const MmaOperands*>(warp.inputs[lane]);
                      std::memcpy(fa[lane], operands->a, sizeof fa[lane]);
                      std::memcpy(fb[lane], operands->b, sizeof fb[lane]);
                      std::memcpy(fc[lane], operands->c, sizeof fc[lane]);
                    }
                    ptx::mma_m16n8k16(static_cast<MmaInputType>(warp.qualifiers), fa, fb, fc, fd);
                    for (int lane = 0; lane < 32; ++lane) std::memcpy(warp.outputs[lane], fd[lane], sizeof fd[lane]);
                  });
  std::memcpy(d, out, sizeof out);
}

float ex2_approx_ftz_f32(float x) {
  if (schedule_traced() && current_thread != nullptr) {
    trace_exponential(current_thread->wgmma.committed > current_thread->wgmma.completed);
  }
  return ptx::ex2_approx_ftz(x);
}

// ---- Hopper warp collectives ---------------------------------------------------------

namespace {
struct ElectOut {
  bool leader;
  std::uint32_t lane;
};
struct StmatrixIn {
  std::uint32_t address;
  std::uint32_t registers[4];
};
}  // namespace

// 9.7.13.14 "elect.sync": one leader of the member mask, the same for the same
// mask every time. The ISA does not say which; the simulator elects the
// highest lane, so that a kernel relying on lane 0 shows it.
bool elect_sync(unsigned member_mask, std::uint32_t* leader) {
  ElectOut out{};
  warp_collective(CollectiveKind::elect, 0, member_mask, false, CUDASIM_PC, nullptr, &out, [](WarpState& warp, Cta&) {
    const auto chosen = static_cast<std::uint32_t>(31 - __builtin_clz(warp.mask));
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
      if (warp.mask >> lane & 1u) *static_cast<ElectOut*>(warp.outputs[lane]) = ElectOut{lane == chosen, chosen};
    }
  });
  if (leader) *leader = out.lane;
  return out.leader;
}

// 9.7.14.5.16 "stmatrix" (.m8n8, .b16, .x1/.x2/.x4, optionally .trans): lane
// 8m + r gives the address of row r of matrix m; register m of each lane holds
// its fragment of matrix m (ptx::stmatrix_element).
void stmatrix_m8n8_b16(int matrices, bool transposed, std::uint32_t row_address, const std::uint32_t* registers) {
  StmatrixIn in{row_address, {}};
  std::memcpy(in.registers, registers, sizeof(std::uint32_t) * static_cast<std::size_t>(matrices));
  warp_collective(
      CollectiveKind::stmatrix, static_cast<std::uint32_t>(2 * matrices + (transposed ? 1 : 0)), 0xffffffffu, true,
      CUDASIM_PC, &in, nullptr, [](WarpState& warp, Cta& cta) {
        const int count = static_cast<int>(warp.qualifiers / 2);
        const bool trans = (warp.qualifiers & 1u) != 0;
        const int warp_index = static_cast<int>(&warp - &cta.warp(0));
        std::uint16_t rows[4][8][8] = {};
        for (int lane = 0; lane < 32; ++lane) {
          const auto* mine = static_cast<const StmatrixIn*>(warp.inputs[lane]);
          for (int m = 0; m < count; ++m) {
            for (int half = 0; half < 2; ++half) {
              const ptx::Element at = ptx::stmatrix_element(lane, half, trans);
              rows[m][at.row][at.column] = static_cast<std::uint16_t>(mine->registers[m] >> (16 * half));
            }
          }
        }
        for (int m = 0; m < count; ++m) {
          for (int r = 0; r < 8; ++r) {
            const int lane = 8 * m + r;
            const auto address = static_cast<const StmatrixIn*>(warp.inputs[lane])->address;
            std::memcpy(cta.shared().access(lane_thread(cta, warp_index, lane), address, 16, 16, SharedAccess::write,
                                            warp.pc),
                        rows[m][r], 16);
          }
        }
      });
}

// ---- atomics -----------------------------------------------------------------------

namespace {

// "Parallel Synchronization and Communication Instructions: atom / red" (.add.f32):
// each element's add is atomic, for the vector forms too.
float add_atomically(float* address, float value) { return std::atomic_ref<float>(*address).fetch_add(value); }

void check_atomic(SimThread& t, void* address, std::size_t bytes, const void* pc) {
  SharedMemory& shared = t.cta->shared();
  if (shared.contains(address)) {
    shared.access(t, static_cast<std::uint32_t>(static_cast<unsigned char*>(address) - shared.base()), bytes, bytes,
                  SharedAccess::atomic, pc);
  } else {
    check_global_access(t, address, bytes, bytes, "atomic add", pc);
    t.cta->launch().global_order().reduction(t, address, bytes, pc, bytes == 4 ? "atom.global.add.f32" : "atom.global.add.v2.f32");
  }
}

}  // namespace

float atomic_add_f32(float* address, float value) {
  check_atomic(me(), address, 4, CUDASIM_PC);
  return add_atomically(address, value);
}

float2 atomic_add_v2_f32(float2* address, float2 value) {
  check_atomic(me(), address, 8, CUDASIM_PC);
  const float x = add_atomically(&address->x, value.x);
  const float y = add_atomically(&address->y, value.y);
  return float2{x, y};
}

// red.global.add.f32, .v2.f32, .v4.f32 ("red"; the vector forms are sm_90's):
// every element's add is atomic, the address aligned to the whole vector's
// size, as every vector memory operand is, and .global names global memory.
void red_add_f32(float* address, const float* values, int count) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  const auto bytes = static_cast<std::size_t>(count) * sizeof(float);
  const char* name = count == 1 ? "red.global.add.f32" : count == 2 ? "red.global.add.v2.f32" : "red.global.add.v4.f32";
  if (t.cta->shared().contains(address)) {
    report_fatal(&t, "red.global on shared memory",
                 std::string(name) + " at an address inside the CTA's shared memory (" +
                     hex(reinterpret_cast<std::uintptr_t>(address)) + "); .global needs a global-memory address",
                 pc);
  }
  check_global_access(t, address, bytes, bytes, name, pc);
  t.cta->launch().global_order().reduction(t, address, bytes, pc, name);
  for (int i = 0; i < count; ++i) add_atomically(address + i, values[i]);
}

// ld.acquire.gpu.global.s32 ("ld", "Memory Consistency Model"). A thread that
// loads the same word and reads the same value as its previous ld.acquire.gpu
// is taken to be spinning on it (from any place: the compiler may unroll the
// loop): it waits until the word changes (other threads and CTAs run
// meanwhile, execution.hpp), and then reads again.
int ld_acquire_gpu_s32(const int* address) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  check_global_access(t, address, 4, 4, "ld.acquire.gpu.global.s32", pc);
  std::atomic_ref<int> word(*const_cast<int*>(address));
  int value = word.load(std::memory_order_acquire);
  if (t.poll_address == address && t.poll_value == value) {
    t.state = ThreadState::at_global_poll;
    t.wait_pc = pc;
    t.wait_what = "a spin on ld.acquire.gpu";
    t.wait_address = address;
    t.wait_value = value;
    t.cta->suspend(t);
    value = word.load(std::memory_order_acquire);
  }
  t.poll_address = address;
  t.poll_value = value;
  t.cta->launch().global_order().acquire(t, address);
  return value;
}

// red.release.gpu.global.add.s32 ("red"): the release makes the thread's
// earlier accesses visible to whoever acquires the word after it.
void red_release_gpu_add_s32(int* address, int value) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  check_global_access(t, address, 4, 4, "red.release.gpu.global.add.s32", pc);
  t.cta->launch().global_order().release(t, address);
  std::atomic_ref<int>(*address).fetch_add(value, std::memory_order_release);
}

}  // namespace cudasim
