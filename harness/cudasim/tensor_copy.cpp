// Tensor maps and the tensor copies of the simulator (PTX ISA 9.0, 5.5
// "Tensors", 9.7.9.25.5.2 "cp.async.bulk.tensor", 9.7.9.25.6 "cp.async.bulk
// commit_group / wait_group"; CUDA driver API, "Tensor Map Object Management",
// cuTensorMapEncodeTiled): the entry points of device_runtime.hpp and the
// driver function of driver_api.hpp.
#include "harness/cudasim/tensor_copy.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/device_runtime.hpp"
#include "harness/cudasim/driver_api.hpp"
#include "harness/cudasim/instructions.hpp"
#include "harness/cudasim/report_text.hpp"

namespace cudasim {
namespace {

#define CUDASIM_PC __builtin_return_address(0)

SimThread& me() { return *current_thread; }

// The simulator's contents of a CUtensorMap.
constexpr std::uint32_t kTensorMapMagic = 0x544d4150;  // "TMAP"
struct TensorMapFields {
  std::uint32_t magic;
  std::uint8_t data_type, rank, swizzle, oob_nan, element_bytes, unused[3];
  std::uint64_t address;
  std::uint64_t dims[5];
  std::uint64_t strides[5];  // bytes; strides[0] is the element size
  std::uint16_t box[5];
  std::uint8_t element_strides[5];
};
static_assert(sizeof(TensorMapFields) <= sizeof(CUtensorMap_st), "a tensor map is 128 bytes");

thread_local std::string encode_error;

CUresult_enum invalid(std::string why) {
  encode_error = "cuTensorMapEncodeTiled: " + std::move(why);
  return CUDA_ERROR_INVALID_VALUE;
}

int element_bytes(CUtensorMapDataType_enum type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

bool is_floating_point(CUtensorMapDataType_enum type) {
  return type >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && type <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

ptx::Swizzle swizzle_of(std::uint8_t mode) {
  switch (mode) {
    case CU_TENSOR_MAP_SWIZZLE_32B:
      return ptx::Swizzle::bytes32;
    case CU_TENSOR_MAP_SWIZZLE_64B:
      return ptx::Swizzle::bytes64;
    case CU_TENSOR_MAP_SWIZZLE_128B:
      return ptx::Swizzle::bytes128;
    default:
      return ptx::Swizzle::none;
  }
}

std::string dim_name(int i) { return "[" + std::to_string(i) + "]"; }

// The tensor map a kernel passed (by the address of its __grid_constant__
// parameter), checked against the instruction's rank and its shared-memory box
// (128-byte aligned, the CUDA programming guide's TMA requirement).
TensorMapFields read_tensor_map(SimThread& t, const void* map, int rank, std::uint32_t box, const char* instruction,
                                const void* pc) {
  TensorMapFields fields;
  std::memcpy(&fields, map, sizeof fields);
  if (fields.magic != kTensorMapMagic) {
    report_fatal(&t, "invalid tensor map",
                 std::string(instruction) + " with a tensorMap operand at " +
                     hex(reinterpret_cast<std::uintptr_t>(map)) + " that cuTensorMapEncodeTiled did not write",
                 pc);
  }
  if (fields.rank != rank) {
    report_fatal(&t, "invalid tensor map",
                 std::string(instruction) + " is ." + std::to_string(rank) + "d but its tensor map has rank " +
                     std::to_string(fields.rank),
                 pc);
  }
  if (box % 128 != 0) {
    report_fatal(&t, "misaligned shared access",
                 std::string(instruction) + " with its shared-memory box at " + t.cta->shared().describe_address(box) +
                     ", which is not a multiple of 128",
                 pc);
  }
  return fields;
}

// The box of a tiled copy (5.5.3 "Tiled Mode"): the elements at coordinates
// coords[i] + j·elementStrides[i] for j < ceil(boxDim[i] / elementStrides[i])
// (dimension 0: every element; 5.5.3.2), packed in shared memory in that order,
// dimension 0 fastest. Calls visit(row, first, count, inside_first, inside_end)
// for each row of the box along dimension 0: `first` is the row's byte offset
// in the box, and elements [inside_first, inside_end) of it lie inside the tensor.
template <typename Visit>
std::size_t for_each_box_row(const TensorMapFields& map, const std::int32_t* coords, Visit visit) {
  std::array<std::int64_t, 5> counts{1, 1, 1, 1, 1};
  for (int i = 0; i < map.rank; ++i) {
    counts[static_cast<std::size_t>(i)] =
        i == 0 ? map.box[0] : (map.box[i] + map.element_strides[i] - 1) / map.element_strides[i];
  }
  const std::int64_t row_bytes = counts[0] * map.element_bytes;
  std::size_t row = 0;
  for (std::int64_t j4 = 0; j4 < counts[4]; ++j4) {
    for (std::int64_t j3 = 0; j3 < counts[3]; ++j3) {
      for (std::int64_t j2 = 0; j2 < counts[2]; ++j2) {
        for (std::int64_t j1 = 0; j1 < counts[1]; ++j1, ++row) {
          const std::int64_t j[5] = {0, j1, j2, j3, j4};
          bool inside = true;
          std::uint64_t offset = 0;
          for (int i = 1; i < map.rank; ++i) {
            const std::int64_t c = std::int64_t{coords[i]} + j[i] * map.element_strides[i];
            inside = inside && c >= 0 && static_cast<std::uint64_t>(c) < map.dims[i];
            offset += static_cast<std::uint64_t>(c) * map.strides[i];
          }
          std::int64_t first = 0, end = 0;
          if (inside) {
            first = std::clamp<std::int64_t>(-std::int64_t{coords[0]}, 0, counts[0]);
            end = std::clamp<std::int64_t>(static_cast<std::int64_t>(map.dims[0]) - coords[0], 0, counts[0]);
          }
          const std::uint64_t global = map.address + offset + static_cast<std::uint64_t>(std::int64_t{coords[0]} *
                                                                                          map.element_bytes);
          visit(row * static_cast<std::size_t>(row_bytes), global, first, std::max(first, end));
        }
      }
    }
  }
  return row * static_cast<std::size_t>(row_bytes);
}

// The swizzled shared address of each 16-byte chunk of a box at `base`, and the
// same addresses merged into runs (for the sanitizer).
void chunk_addresses(std::uint32_t base, std::size_t bytes, ptx::Swizzle swizzle, std::vector<std::uint32_t>& chunks,
                     std::vector<std::pair<std::uint32_t, std::uint32_t>>& runs) {
  chunks.resize(bytes / 16);
  for (std::size_t q = 0; q < chunks.size(); ++q) {
    chunks[q] = ptx::swizzle_address(base + static_cast<std::uint32_t>(16 * q), swizzle);
  }
  std::vector<std::uint32_t> sorted = chunks;
  std::sort(sorted.begin(), sorted.end());
  runs.clear();
  for (const std::uint32_t address : sorted) {
    if (!runs.empty() && runs.back().first + runs.back().second == address) {
      runs.back().second += 16;
    } else {
      runs.emplace_back(address, 16);
    }
  }
}

void fill_out_of_bounds(unsigned char* element, const TensorMapFields& map) {
  // 5.5.3.3 "Out of Boundary Access": zeros, or with the OOB-NaN fill mode a NaN.
  std::memset(element, 0, map.element_bytes);
  if (!map.oob_nan) return;
  static constexpr std::uint64_t kNaN[9] = {0, 0, 0x7fff, 0, 0x7fffffff, 0, 0, 0, 0x7fffffffffffffff};
  std::memcpy(element, &kNaN[map.element_bytes], map.element_bytes);
}

}  // namespace

// ---- the driver: cuTensorMapEncodeTiled -------------------------------------------

CUresult_enum encode_tensor_map_tiled(CUtensorMap_st* tensor_map, CUtensorMapDataType_enum data_type,
                                      cuuint32_t rank, void* global_address, const cuuint64_t* global_dim,
                                      const cuuint64_t* global_strides, const cuuint32_t* box_dim,
                                      const cuuint32_t* element_strides, CUtensorMapInterleave_enum interleave,
                                      CUtensorMapSwizzle_enum swizzle, CUtensorMapL2promotion_enum l2_promotion,
                                      CUtensorMapFloatOOBfill_enum oob_fill) {
  encode_error.clear();
  if (reinterpret_cast<std::uintptr_t>(tensor_map) % 64 != 0) return invalid("tensorMap must be aligned to 64 bytes");
  if (data_type < CU_TENSOR_MAP_DATA_TYPE_UINT8 || data_type > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) {
    return invalid("tensorDataType " + std::to_string(data_type) + " is not a CUtensorMapDataType");
  }
  const int bytes = element_bytes(data_type);
  if (bytes == 0) return invalid("the packed types (16U4, 16U6) are not modelled by the simulator");
  if (rank == 0 || rank > 5) return invalid("tensorRank " + std::to_string(rank) + " is not between 1 and 5");
  if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B) {
    return invalid("interleave " + std::to_string(interleave) + " is not a CUtensorMapInterleave");
  }
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE) {
    return invalid("interleaved layouts are not modelled by the simulator (interleave must be NONE)");
  }
  if (reinterpret_cast<std::uintptr_t>(global_address) % 16 != 0) {
    return invalid("globalAddress " + hex(reinterpret_cast<std::uintptr_t>(global_address)) +
                   " must be 16-byte aligned");
  }
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (global_dim[i] == 0 || global_dim[i] > (std::uint64_t{1} << 32)) {
      return invalid("globalDim" + dim_name(static_cast<int>(i)) + " = " + std::to_string(global_dim[i]) +
                     " must be non-zero and at most 2^32");
    }
    if (box_dim[i] == 0 || box_dim[i] > 256) {
      return invalid("boxDim" + dim_name(static_cast<int>(i)) + " = " + std::to_string(box_dim[i]) +
                     " must be non-zero and at most 256");
    }
    if (element_strides[i] == 0 || element_strides[i] > 8) {
      return invalid("elementStrides" + dim_name(static_cast<int>(i)) + " = " + std::to_string(element_strides[i]) +
                     " must be non-zero and at most 8");
    }
  }
  for (cuuint32_t i = 0; i + 1 < rank; ++i) {
    if (global_strides[i] % 16 != 0 || global_strides[i] >= (std::uint64_t{1} << 40)) {
      return invalid("globalStrides" + dim_name(static_cast<int>(i)) + " = " + std::to_string(global_strides[i]) +
                     " bytes must be a multiple of 16 and less than 2^40");
    }
  }
  const std::uint64_t inner_box_bytes = std::uint64_t{box_dim[0]} * static_cast<std::uint64_t>(bytes);
  if (inner_box_bytes % 16 != 0) {
    return invalid("boxDim[0] × the element size = " + std::to_string(inner_box_bytes) +
                   " bytes must be a multiple of 16");
  }
  if (swizzle < CU_TENSOR_MAP_SWIZZLE_NONE || swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) {
    return invalid("swizzle " + std::to_string(swizzle) + " is not a CUtensorMapSwizzle");
  }
  if (swizzle > CU_TENSOR_MAP_SWIZZLE_128B) {
    return invalid("the 128-byte swizzles with 32- or 64-byte atoms are not modelled by the simulator");
  }
  const std::uint64_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_32B   ? 32
                             : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                                                                    : 128;
  if (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && inner_box_bytes > span) {
    return invalid("the inner box dimension (boxDim[0] × the element size = " + std::to_string(inner_box_bytes) +
                   " bytes) must be at most the swizzle's span of " + std::to_string(span) + " bytes");
  }
  if (l2_promotion < CU_TENSOR_MAP_L2_PROMOTION_NONE || l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
    return invalid("l2Promotion " + std::to_string(l2_promotion) + " is not a CUtensorMapL2promotion");
  }
  if (oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) {
    return invalid("oobFill " + std::to_string(oob_fill) + " is not a CUtensorMapFloatOOBfill");
  }
  if (oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_floating_point(data_type)) {
    return invalid("the NaN out-of-bound fill needs a floating-point tensorDataType");
  }
  TensorMapFields fields{};
  fields.magic = kTensorMapMagic;
  fields.data_type = static_cast<std::uint8_t>(data_type);
  fields.rank = static_cast<std::uint8_t>(rank);
  fields.swizzle = static_cast<std::uint8_t>(swizzle);
  fields.oob_nan = oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  fields.element_bytes = static_cast<std::uint8_t>(bytes);
  fields.address = reinterpret_cast<std::uintptr_t>(global_address);
  fields.strides[0] = static_cast<std::uint64_t>(bytes);
  for (cuuint32_t i = 0; i < 5; ++i) {
    fields.dims[i] = i < rank ? global_dim[i] : 1;
    fields.box[i] = static_cast<std::uint16_t>(i < rank ? box_dim[i] : 1);
    fields.element_strides[i] = static_cast<std::uint8_t>(i < rank ? element_strides[i] : 1);
    if (i > 0) fields.strides[i] = i < rank ? global_strides[i - 1] : 0;
  }
  std::memset(tensor_map, 0, sizeof *tensor_map);
  std::memcpy(tensor_map, &fields, sizeof fields);
  return CUDA_SUCCESS;
}

const char* tensor_map_error_text() { return encode_error.c_str(); }

// ---- loads ---------------------------------------------------------------------------

// 9.7.9.25.5.2 "cp.async.bulk.tensor", .shared::cluster.global.tile.mbarrier::complete_tx::bytes:
// the box is read from global memory at issue (out-of-bound elements filled,
// 5.5.3.3) and lands, swizzled (5.5.7), when a thread waits for the mbarrier
// phase whose complete-tx (of the whole box's bytes) it performs; until then
// the destination reads as poison.
void tma_load(int rank, std::uint32_t destination, const void* tensor_map, const std::int32_t* coordinates,
              std::uint32_t mbarrier) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Cta& cta = *t.cta;
  const char* instruction = "cp.async.bulk.tensor (load)";
  const TensorMapFields map = read_tensor_map(t, tensor_map, rank, destination, instruction, pc);
  Mbarrier& barrier = mbarrier_for_tma(t, mbarrier, pc);
  TmaLoadInFlight load;
  load.issuer = &t;
  load.pc = pc;
  std::vector<unsigned char>& data = load.data;
  data.resize(for_each_box_row(map, coordinates, [](std::size_t, std::uint64_t, std::int64_t, std::int64_t) {}));
  for_each_box_row(map, coordinates, [&](std::size_t offset, std::uint64_t global, std::int64_t first, std::int64_t end) {
    const std::size_t count = static_cast<std::size_t>(map.box[0]);
    for (std::size_t e = 0; e < count; ++e) {
      if (static_cast<std::int64_t>(e) < first || static_cast<std::int64_t>(e) >= end) {
        fill_out_of_bounds(&data[offset + e * map.element_bytes], map);
      }
    }
    if (end > first) {
      const auto* source = reinterpret_cast<const unsigned char*>(global) + first * map.element_bytes;
      const auto bytes = static_cast<std::size_t>(end - first) * map.element_bytes;
      check_global_access(t, source, bytes, 1, "TMA load source read", pc);
      std::memcpy(&data[offset + static_cast<std::size_t>(first) * map.element_bytes], source, bytes);
    }
  });
  std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;
  chunk_addresses(destination, data.size(), swizzle_of(map.swizzle), load.chunk_addresses, runs);
  const AsyncAccess access{"TMA load", &t, cta.order().clock(t.linear), cta.order().now(t.linear), pc};
  for (const auto& [address, bytes] : runs) {
    std::memset(cta.shared().async_write_issue(access, address, bytes), 0xff, bytes);
  }
  add_tma_load(barrier, std::move(load));
}

void land_tma_load(Cta& cta, TmaLoadInFlight& load, Epoch epoch) {
  SharedMemory& shared = cta.shared();
  for (std::size_t q = 0; q < load.chunk_addresses.size(); ++q) {
    std::memcpy(shared.async_write_land(load.chunk_addresses[q], 16, epoch), &load.data[16 * q], 16);
  }
}

// ---- stores and bulk async-groups ----------------------------------------------------

namespace {
// The slot whose clock counts the thread's bulk async-groups, made at its first bulk copy.
void ensure_bulk_agent(SimThread& t, const void* pc) {
  if (t.bulk.agent >= 0) return;
  t.bulk.agent = t.cta->order().new_agent("the bulk copies of " + describe_thread(t.linear));
  if (t.bulk.agent < 0) {
    report_fatal(&t, "too many asynchronous agents",
                 "the simulator tracks at most " + std::to_string(HappensBefore::kMaxAgents) +
                     " mbarriers, warpgroups and bulk-copy threads per CTA",
                 pc);
  }
}
}  // namespace

// 9.7.9.25.5.2, .global.shared::cta.tile.bulk_group: the box is read from
// shared memory (unswizzled per the map) at issue, by the async proxy, and
// written to global memory, out-of-bound elements skipped, when a
// cp.async.bulk.wait_group (without .read) covers its group, or at thread exit.
void tma_store(int rank, const void* tensor_map, const std::int32_t* coordinates, std::uint32_t source) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Cta& cta = *t.cta;
  const char* instruction = "cp.async.bulk.tensor (store)";
  const TensorMapFields map = read_tensor_map(t, tensor_map, rank, source, instruction, pc);
  ensure_bulk_agent(t, pc);
  BulkStore store;
  store.pc = pc;
  store.data.resize(for_each_box_row(map, coordinates, [](std::size_t, std::uint64_t, std::int64_t, std::int64_t) {}));
  std::vector<std::uint32_t> chunks;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;
  chunk_addresses(source, store.data.size(), swizzle_of(map.swizzle), chunks, runs);
  const AsyncAccess access{"TMA store", &t, cta.order().clock(t.linear),
                           cta.order().counted_epoch(t.bulk.agent, t.bulk.committed_count + 1), pc};
  for (const auto& [address, bytes] : runs) cta.shared().async_read(access, address, bytes);
  for (std::size_t q = 0; q < chunks.size(); ++q) std::memcpy(&store.data[16 * q], cta.shared().base() + chunks[q], 16);
  for_each_box_row(map, coordinates, [&](std::size_t offset, std::uint64_t global, std::int64_t first, std::int64_t end) {
    if (end <= first) return;
    auto* destination = reinterpret_cast<unsigned char*>(global) + first * map.element_bytes;
    const auto bytes = static_cast<std::uint32_t>(end - first) * map.element_bytes;
    check_global_access(t, destination, bytes, 1, "TMA store destination write", pc);
    store.runs.push_back(BulkStore::Run{destination,
                                        static_cast<std::uint32_t>(offset) +
                                            static_cast<std::uint32_t>(first) * map.element_bytes,
                                        bytes});
  });
  if (!t.bulk.first_pc) t.bulk.first_pc = pc;
  t.bulk.open.push_back(std::move(store));
}

// "cp.reduce.async.bulk" (.global.shared::cta.bulk_group.add.f32): `bytes`
// (a non-zero multiple of 16) of fp32 elements read from shared memory at
// issue, by the async proxy, as a TMA store's are, and added to global memory,
// element by element and each add atomic, when the bulk async-group completes.
// Both addresses 16-byte aligned.
void bulk_reduce_add_f32(float* global_destination, std::uint32_t shared_source, std::uint32_t bytes) {
  const void* pc = CUDASIM_PC;
  SimThread& t = me();
  Cta& cta = *t.cta;
  const char* instruction = "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32";
  if (bytes == 0 || bytes % 16 != 0) {
    report_fatal(&t, "invalid bulk copy size",
                 std::string(instruction) + " of " + std::to_string(bytes) +
                     " bytes: the size must be a non-zero multiple of 16",
                 pc);
  }
  if (shared_source % 16 != 0) {
    report_fatal(&t, "misaligned shared access",
                 std::string(instruction) + " source at shared address " + hex(shared_source) +
                     ", which is not a multiple of 16",
                 pc);
  }
  check_global_access(t, global_destination, bytes, 16, instruction, pc);
  ensure_bulk_agent(t, pc);
  BulkStore store;
  store.pc = pc;
  store.add = true;
  store.data.resize(bytes);
  const AsyncAccess access{"cp.reduce.async.bulk", &t, cta.order().clock(t.linear),
                           cta.order().counted_epoch(t.bulk.agent, t.bulk.committed_count + 1), pc};
  std::memcpy(store.data.data(), cta.shared().async_read(access, shared_source, bytes), bytes);
  store.runs.push_back(BulkStore::Run{reinterpret_cast<unsigned char*>(global_destination), 0, bytes});
  if (!t.bulk.first_pc) t.bulk.first_pc = pc;
  t.bulk.open.push_back(std::move(store));
}

void complete_bulk_store(SimThread& thread, const BulkStore& store) {
  for (const BulkStore::Run& run : store.runs) {
    if (!store.add) {
      std::memcpy(run.destination, store.data.data() + run.offset, run.bytes);
      continue;
    }
    // The adds are the thread's from its wait on: ordered after what it did before.
    thread.cta->launch().global_order().reduction(thread, run.destination, run.bytes, store.pc,
                                                  "cp.reduce.async.bulk .add.f32");
    for (std::uint32_t at = 0; at < run.bytes; at += 4) {
      float value;
      std::memcpy(&value, store.data.data() + run.offset + at, 4);
      std::atomic_ref<float>(*reinterpret_cast<float*>(run.destination + at)).fetch_add(value);
    }
  }
}

// 9.7.9.25.6.1 "cp.async.bulk.commit_group": the thread's uncommitted bulk
// copies form a bulk async-group (possibly empty).
void bulk_commit_group() {
  SimThread& t = me();
  t.bulk.committed.push_back(std::move(t.bulk.open));
  t.bulk.open.clear();
  ++t.bulk.committed_count;
}

// 9.7.9.25.6.2 "cp.async.bulk.wait_group": all but the `pending` most recent
// groups complete; with .read only their reads of shared memory (which then
// happen before the thread's later accesses), without it their writes too.
void bulk_wait_group(int pending, bool reads_only) {
  SimThread& t = me();
  const auto keep = static_cast<std::uint32_t>(std::max(pending, 0));
  if (t.bulk.committed_count > keep + t.bulk.read_complete) {
    t.bulk.read_complete = t.bulk.committed_count - keep;
    if (t.cta->sanitize() && t.bulk.agent >= 0) {
      t.cta->order().acquire(t.linear, t.cta->order().counted_epoch(t.bulk.agent, t.bulk.read_complete));
    }
  }
  if (reads_only) return;
  while (t.bulk.committed.size() > keep) {
    for (const BulkStore& store : t.bulk.committed.front()) complete_bulk_store(t, store);
    t.bulk.committed.pop_front();
  }
}

}  // namespace cudasim
