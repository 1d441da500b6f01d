// The simulator's Hopper instructions and its happens-before race rule on small
// kernels (tests/cudasim/hopper_kernels.cpp): each used right runs clean and
// computes what the PTX ISA says; each used wrong fails with a DeviceError
// whose report names the finding, the kernel and the source line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/time_out_switch.hpp"
#include "harness/dtype.hpp"
#include "tests/cudasim/launch_report.hpp"
#include "tests/cudasim/hopper_kernels.hpp"

namespace attnbench {
namespace {

using cudasim_test::report_of;

using cudasim_test::Handoff;
using cudasim_test::TmaLoad;
using cudasim_test::TmaStore;
using cudasim_test::WgmmaUse;

class Hopper : public ::testing::Test {
 protected:
  void SetUp() override {
    cudasim::set_sanitizer_enabled(true);
    backend_ = BackendRegistry::instance().get("cudasim");
    ASSERT_NE(backend_, nullptr);
    arena_ = std::make_unique<DeviceArena>(*backend_, std::size_t{8} << 20);
  }
  void TearDown() override { cudasim::set_sanitizer_enabled(true); }

  template <typename T>
  T* take(std::size_t count, const char* name) {
    return static_cast<T*>(arena_->take(ElementType::f32, (count * sizeof(T) + 3) / 4, name).data);
  }

  Backend* backend_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
};

void expect_finding(const std::string& report, const std::string& kind, const std::string& kernel) {
  EXPECT_NE(report.find(kind), std::string::npos) << report;
  EXPECT_NE(report.find("in kernel "), std::string::npos) << report;
  EXPECT_NE(report.find(kernel), std::string::npos) << report;
  EXPECT_NE(report.find("tests/cudasim/hopper_kernels.cpp:"), std::string::npos) << report;
}

// ---- the race rule: happens-before ------------------------------------------------

TEST_F(Hopper, ANamedBarrierOrdersItsParticipantsOnly) {
  float* in = take<float>(64, "in");
  float* out = take<float>(64, "out");
  for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i + 1);
  EXPECT_EQ(report_of([&] { return cudasim_test::named_barrier_handoff(in, out, Handoff::right); }), "");
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], in[(t + 1) % 64]) << t;
  expect_finding(report_of([&] { return cudasim_test::named_barrier_handoff(in, out, Handoff::no_sync); }),
                 "shared memory race (write after read)", "named_barrier_handoff_kernel");
}

TEST_F(Hopper, AnMbarrierPhaseOrdersArrivalsBeforeTheThreadsThatObserveIt) {
  float* in = take<float>(32, "in");
  float* out = take<float>(32, "out");
  for (int i = 0; i < 32; ++i) in[i] = static_cast<float>(10 * i);
  for (const Handoff right : {Handoff::right, Handoff::relay, Handoff::hinted}) {
    EXPECT_EQ(report_of([&] { return cudasim_test::mbarrier_handoff(in, out, right); }), "");
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], in[(t + 1) % 32]) << t;
  }
  // Reading without observing the phase, or observing the phase before (parity 1
  // at phase 0 returns at once), or relaying it to threads that never synchronise.
  for (const Handoff wrong : {Handoff::no_sync, Handoff::wrong_parity, Handoff::relay_without_bar}) {
    const std::string report = report_of([&] { return cudasim_test::mbarrier_handoff(in, out, wrong); });
    EXPECT_NE(report.find("shared memory race"), std::string::npos) << static_cast<int>(wrong) << report;
    expect_finding(report, "no barrier, mbarrier phase or completed wait orders the two", "mbarrier_handoff_kernel");
  }
}

// The hardware's try_wait may return false before the phase completes (its
// time limit); with early time-outs on, the simulator's does so once a wait.
TEST_F(Hopper, ATryWaitThatTimesOutIsNoWaitAndItsRetryIs) {
  float* in = take<float>(32, "in");
  float* out = take<float>(32, "out");
  for (int i = 0; i < 32; ++i) in[i] = static_cast<float>(7 * i + 1);
  // Without early time-outs a single try_wait happens to block until the phase.
  EXPECT_EQ(report_of([&] { return cudasim_test::mbarrier_handoff(in, out, Handoff::single_try_wait); }), "");
  const cudasim::EarlyTimeOuts early;
  for (const Handoff right : {Handoff::right, Handoff::hinted}) {
    std::fill(out, out + 32, -1.0f);
    EXPECT_EQ(report_of([&] { return cudasim_test::mbarrier_handoff(in, out, right); }), "");
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], in[(t + 1) % 32]) << t;
  }
  const std::string report =
      report_of([&] { return cudasim_test::mbarrier_handoff(in, out, Handoff::single_try_wait); });
  EXPECT_NE(report.find("shared memory race"), std::string::npos) << report;
  expect_finding(report, "no barrier, mbarrier phase or completed wait orders the two", "mbarrier_handoff_kernel");
}

// Threads that arrive and wait with the state mbarrier.arrive returned.
TEST_F(Hopper, TheStateAnArriveReturnsWaitsForItsPhase) {
  float* in = take<float>(64, "in");
  float* out = take<float>(64, "out");
  for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(3 * i);
  EXPECT_EQ(report_of([&] { return cudasim_test::mbarrier_arrive_and_wait(in, out, true); }), "");
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], in[(t + 1) % 64]) << t;
  expect_finding(report_of([&] { return cudasim_test::mbarrier_arrive_and_wait(in, out, false); }),
                 "shared memory race (read after write)", "mbarrier_arrive_and_wait_kernel");
}

// 9.7.13.15.4: a phase must be observed complete before an arrive-on of the next.
TEST_F(Hopper, AnMbarrierIsRearmedOnlyAfterItsPhaseWasObserved) {
  float* out = take<float>(32, "out");
  EXPECT_EQ(report_of([&] { return cudasim_test::mbarrier_rearm(out, true); }), "");
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], 1.0f) << l;
  const std::string report = report_of([&] { return cudasim_test::mbarrier_rearm(out, false); });
  expect_finding(report, "mbarrier phase overrun", "mbarrier_rearm_kernel");
  EXPECT_NE(report.find("arrives in phase 1 before any thread observed phase 0 complete"), std::string::npos)
      << report;
}

// A thread may poll a phase it then completes itself; a retry alone is no
// deadlock, a poll that nothing can ever answer is.
TEST_F(Hopper, AThreadThatPollsThenCompletesThePhaseItselfIsNoDeadlock) {
  using cudasim_test::SelfCompletion;
  float* out = take<float>(33, "out");
  for (const auto& [variant, polls] : {std::pair{SelfCompletion::parity, 2}, {SelfCompletion::state, 2},
                                       {SelfCompletion::hinted, 2}, {SelfCompletion::older_phase, 2},
                                       {SelfCompletion::many_polls, 500}, {SelfCompletion::warp, 2}}) {
    std::fill(out, out + 33, -1.0f);
    EXPECT_EQ(report_of([&] { return cudasim_test::mbarrier_self_completion(out, variant); }), "")
        << static_cast<int>(variant);
    EXPECT_EQ(out[0], static_cast<float>(polls)) << "each poll of the incomplete phase returned false";
    EXPECT_EQ(out[1], 1.0f) << "the wait after the arrival returned true";
    if (variant == SelfCompletion::warp) {
      for (int lane = 1; lane < 32; ++lane) EXPECT_EQ(out[1 + lane], 1.0f) << lane;
    }
  }
  const std::string never = report_of([&] { return cudasim_test::mbarrier_self_completion(out, SelfCompletion::never); });
  expect_finding(never, "mbarrier phase that can never complete", "mbarrier_self_completion_kernel");
  EXPECT_NE(never.find("1 of 1 arrivals pending"), std::string::npos) << never;
}

TEST_F(Hopper, ABarrierIsArrivedAtOncePerUse) {
  float* out = take<float>(128, "out");
  EXPECT_EQ(report_of([&] { return cudasim_test::barrier_arrive(false, out); }), "");
  for (int t = 0; t < 128; ++t) EXPECT_EQ(out[t], 1.0f) << t;
  expect_finding(report_of([&] { return cudasim_test::barrier_arrive(true, out); }), "barrier arrived at twice",
                 "barrier_arrive_kernel");
}

TEST_F(Hopper, NamedBarrierThreadCountsMustAgree) {
  float* out = take<float>(128, "out");
  expect_finding(report_of([&] { return cudasim_test::mismatched_barrier_count(out); }), "divergent barrier",
                 "mismatched_barrier_count_kernel");
}

// ---- TMA loads --------------------------------------------------------------------

// A box load's case: a tensor of `rank` dimensions (sizes innermost first,
// value 1 + its linear index; packed rows, dimension 0 rounded up to 8
// elements), the box's sizes and coordinates, the swizzle (0 none, 1 32B, 2 64B, 3 128B).
struct BoxCase {
  int rank;
  std::uint64_t dims[5];
  std::uint32_t box[5];
  std::int32_t at[5];
  int swizzle;

  std::uint64_t pitch() const { return (dims[0] + 7) / 8 * 8; }
  std::uint64_t elements() const {
    std::uint64_t count = pitch();
    for (int i = 1; i < rank; ++i) count *= dims[i];
    return count;
  }
  std::size_t box_elements() const {
    std::size_t count = 1;
    for (int i = 0; i < rank; ++i) count *= box[i];
    return count;
  }
  // The element at coordinates c, or 0 (the zero fill) outside the tensor.
  std::uint16_t value(const std::int64_t (&c)[5]) const {
    std::uint64_t index = 0, stride = 1;
    for (int i = 0; i < rank; ++i) {
      if (c[i] < 0 || c[i] >= static_cast<std::int64_t>(dims[i])) return 0;
      index += static_cast<std::uint64_t>(c[i]) * stride;
      stride *= i == 0 ? pitch() : dims[i];
    }
    return static_cast<std::uint16_t>(1 + index % 60000);
  }
};

// Chunk kPattern128[r][p] sits at position p of line r (5.5.7's 128-byte table;
// the 32- and 64-byte tables are its first two and four rows).
constexpr int kPattern128[8][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5},
                                   {3, 2, 1, 0, 7, 6, 5, 4}, {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
                                   {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};

// The shared-memory image the ISA says a box load leaves: box elements packed
// dimension 0 first, then each 16-byte chunk moved per the swizzle's table
// (lines repeat every 2, 4 or 8 for 32, 64, 128 bytes).
std::vector<std::uint16_t> expected_box(const BoxCase& box) {
  std::vector<std::uint16_t> packed;
  const auto extent = [&](int i) { return i < box.rank ? static_cast<std::int64_t>(box.box[i]) : 1; };
  std::int64_t j[5];
  for (j[4] = 0; j[4] < extent(4); ++j[4]) {
    for (j[3] = 0; j[3] < extent(3); ++j[3]) {
      for (j[2] = 0; j[2] < extent(2); ++j[2]) {
        for (j[1] = 0; j[1] < extent(1); ++j[1]) {
          for (j[0] = 0; j[0] < extent(0); ++j[0]) {
            std::int64_t c[5] = {};
            for (int i = 0; i < box.rank; ++i) c[i] = box.at[i] + j[i];
            packed.push_back(box.value(c));
          }
        }
      }
    }
  }
  if (box.swizzle == 0) return packed;
  const std::size_t lines = box.swizzle == 1 ? 2 : box.swizzle == 2 ? 4 : 8;
  std::vector<std::uint16_t> image(packed.size());
  for (std::size_t chunk = 0; chunk < packed.size() / 8; ++chunk) {
    const std::size_t line = chunk / 8, source = chunk % 8;
    std::size_t position = 0;
    while (kPattern128[line % lines][position] != static_cast<int>(source)) ++position;
    for (std::size_t e = 0; e < 8; ++e) image[8 * (line * 8 + position) + e] = packed[8 * chunk + e];
  }
  return image;
}

TEST_F(Hopper, TmaLoadsBoxesOfEveryRankSwizzledWithOutOfBoundZeros) {
  const BoxCase cases[] = {
      {1, {200}, {64}, {150}, 0},                                  // 1d, past the end: zeros
      {2, {40, 30}, {64, 8}, {-8, 25}, 3},                         // 2d, 128-byte swizzle, both edges
      {2, {100, 20}, {32, 8}, {16, 3}, 2},                         // 64-byte swizzle
      {2, {24, 10}, {16, 16}, {4, -3}, 1},                         // 32-byte swizzle, rows before the start
      {3, {16, 5, 7}, {8, 4, 3}, {8, 2, 5}, 0},                    // 3d
      {4, {8, 3, 4, 5}, {8, 2, 3, 2}, {0, 1, 2, 4}, 0},            // 4d
      {5, {8, 2, 3, 2, 3}, {8, 2, 2, 2, 2}, {0, 1, 2, 1, 2}, 0},   // 5d
  };
  auto* tensor = take<std::uint16_t>(4096, "tensor");
  auto* out = take<std::uint16_t>(1024, "out");
  for (const BoxCase& box : cases) {
    const std::uint64_t elements = box.elements();
    ASSERT_LE(elements, 4096u);
    ASSERT_LE(box.box_elements(), 1024u);
    for (std::uint64_t i = 0; i < elements; ++i) tensor[i] = static_cast<std::uint16_t>(1 + i % 60000);
    ASSERT_EQ(report_of([&] {
                return cudasim_test::tma_load_box(tensor, box.rank, box.dims, box.box, box.at, box.swizzle, out,
                                                  TmaLoad::right);
              }),
              "");
    const std::vector<std::uint16_t> expected = expected_box(box);
    for (std::size_t i = 0; i < box.box_elements(); ++i) {
      ASSERT_EQ(out[i], expected[i]) << "rank " << box.rank << " swizzle " << box.swizzle << " element " << i;
    }
  }
}

TEST_F(Hopper, TmaLoadMisusesAreReported) {
  const std::vector<std::uint64_t> dims = {64, 16};
  const std::vector<std::uint32_t> box = {64, 8};
  const std::vector<std::int32_t> at = {0, 0};
  auto* tensor = take<std::uint16_t>(64 * 16, "tensor");
  for (int i = 0; i < 64 * 16; ++i) tensor[i] = static_cast<std::uint16_t>(i);
  auto* out = take<std::uint16_t>(512, "out");
  const auto load = [&](TmaLoad variant) {
    return report_of(
        [&] { return cudasim_test::tma_load_box(tensor, 2, dims.data(), box.data(), at.data(), 3, out, variant); });
  };
  const std::string kernel = "tma_load_box_kernel";
  expect_finding(load(TmaLoad::no_wait), "read of shared memory a TMA load is still filling", kernel);
  expect_finding(load(TmaLoad::wrong_parity), "read of shared memory a TMA load is still filling", kernel);
  const std::string short_tx = load(TmaLoad::expect_short);
  EXPECT_NE(short_tx.find("mbarrier phase that can never complete"), std::string::npos) << short_tx;
  EXPECT_NE(short_tx.find("its tx-count is -16: 16 bytes more were delivered than expect_tx announced"),
            std::string::npos)
      << short_tx;
  EXPECT_NE(short_tx.find("threads 0-31: waiting at mbarrier.try_wait.parity on the mbarrier at"), std::string::npos)
      << short_tx;
  expect_finding(load(TmaLoad::extra_arrival), "extra mbarrier arrivals", kernel);
  const std::string never = load(TmaLoad::never_arrives);
  EXPECT_NE(never.find("mbarrier phase that can never complete"), std::string::npos) << never;
  EXPECT_NE(never.find("1 of 1 arrivals pending"), std::string::npos) << never;
  expect_finding(load(TmaLoad::init_not_fenced), "mbarrier.init not fenced for the async proxy", kernel);
  expect_finding(load(TmaLoad::init_not_synchronised), "mbarrier used before its initialisation is visible", kernel);
  EXPECT_EQ(load(TmaLoad::separate_expect_tx), "");
  expect_finding(load(TmaLoad::used_after_inval), "mbarrier operation on memory holding no mbarrier object", kernel);
  expect_finding(load(TmaLoad::barrier_overwritten), "mbarrier object accessed by an ordinary load or store", kernel);
  const std::string abandoned = load(TmaLoad::never_waited);
  expect_finding(abandoned, "TMA load never waited for", kernel);
  EXPECT_NE(abandoned.find("1 TMA load(s) completing on the mbarrier at"), std::string::npos) << abandoned;
}

// ---- TMA stores and the async proxy ---------------------------------------------------

TEST_F(Hopper, TmaStoresTheBoxClippedToTheTensor) {
  constexpr int kRows = 20, kColumns = 72;
  auto* tensor = take<std::uint16_t>(kRows * kColumns, "tensor");
  for (int i = 0; i < kRows * kColumns; ++i) tensor[i] = 7;
  // A 16 x 64 box at column 40, row 12: columns 40-71 and rows 12-19 are inside.
  ASSERT_EQ(report_of([&] { return cudasim_test::tma_store_box(tensor, kRows, kColumns, 16, 40, 12, TmaStore::right); }),
            "");
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kColumns; ++c) {
      const bool inside = r >= 12 && c >= 40;
      const int expected = inside ? 1000 + 64 * (r - 12) + (c - 40) : 7;
      ASSERT_EQ(tensor[r * kColumns + c], expected) << r << "," << c;
    }
  }
}

TEST_F(Hopper, TmaStoreMisusesAreReported) {
  auto* tensor = take<std::uint16_t>(64 * 64, "tensor");
  const auto store = [&](TmaStore variant) {
    return report_of([&] { return cudasim_test::tma_store_box(tensor, 64, 64, 8, 0, 0, variant); });
  };
  expect_finding(store(TmaStore::not_fenced), "generic-proxy write not fenced for the async proxy",
                 "tma_store_box_kernel");
  const std::string overwritten = store(TmaStore::overwritten_in_flight);
  expect_finding(overwritten, "shared memory race (write after read)", "tma_store_box_kernel");
  EXPECT_NE(overwritten.find("the bulk copies of thread 0"), std::string::npos) << overwritten;
  expect_finding(store(TmaStore::never_waited), "bulk copy still pending at thread exit", "tma_store_box_kernel");
}

// ---- tensor maps: the driver's argument checks --------------------------------------

TEST_F(Hopper, TensorMapEncodingChecksTheArgumentsTheDriverDocuments) {
  auto* tensor = take<std::uint16_t>(4096, "tensor");
  const std::uint64_t dims[2] = {64, 32}, strides[1] = {128};
  const std::uint32_t box[2] = {64, 8}, ones[2] = {1, 1};
  const char* why = "";
  const auto encode = [&](const void* address, const std::uint64_t* d, const std::uint64_t* s, const std::uint32_t* b,
                          const std::uint32_t* e, int swizzle) {
    return cudasim_test::encode_tensor_map(1 /* CU_TENSOR_MAP_DATA_TYPE_UINT16 */, 2, address, d, s, b, e, swizzle, &why);
  };
  EXPECT_EQ(encode(tensor, dims, strides, box, ones, 3), 0) << why;
  const auto refused = [&](int result, const std::string& reason) {
    EXPECT_EQ(result, 1);  // CUDA_ERROR_INVALID_VALUE
    EXPECT_NE(std::string(why).find(reason), std::string::npos) << why;
  };
  refused(encode(reinterpret_cast<const char*>(tensor) + 8, dims, strides, box, ones, 0), "must be 16-byte aligned");
  const std::uint64_t odd_stride[1] = {120};
  refused(encode(tensor, dims, odd_stride, box, ones, 0), "must be a multiple of 16");
  const std::uint32_t big_box[2] = {64, 257};
  refused(encode(tensor, dims, strides, big_box, ones, 0), "must be non-zero and at most 256");
  const std::uint32_t wide[2] = {32, 8};
  refused(encode(tensor, dims, strides, wide, ones, 1), "must be at most the swizzle's span of 32 bytes");
  const std::uint32_t ragged[2] = {12, 8};
  refused(encode(tensor, dims, strides, ragged, ones, 0), "must be a multiple of 16");
  const std::uint32_t strided[2] = {1, 9};
  refused(encode(tensor, dims, strides, box, strided, 0), "must be non-zero and at most 8");
  const std::uint64_t empty[2] = {64, 0};
  refused(encode(tensor, empty, strides, box, ones, 0), "must be non-zero and at most 2^32");
}

// ---- wgmma ------------------------------------------------------------------------------

// A 16-bit operand placed in shared memory as the ISA's canonical layouts say
// (9.7.15.5.1.2.1.3, T = 8 elements per 16 bytes): `swizzle_bytes` 0 (none),
// 32, 64 or 128, then each chunk moved per 5.5.7's table.
struct Operand {
  bool mn_major;
  int swizzle_bytes;
  std::uint32_t start, lbo, sbo;
};

std::uint32_t canonical_offset(const Operand& o, int mn, int k) {
  const auto umn = static_cast<std::uint32_t>(mn), uk = static_cast<std::uint32_t>(k);
  if (!o.mn_major) {
    if (o.swizzle_bytes == 0) return umn % 8 * 16 + umn / 8 * o.sbo + uk % 8 * 2 + uk / 8 * o.lbo;
    return umn % 8 * static_cast<std::uint32_t>(o.swizzle_bytes) + umn / 8 * o.sbo + uk * 2;
  }
  if (o.swizzle_bytes == 0) return umn % 8 * 2 + umn / 8 * o.sbo + uk % 8 * 16 + uk / 8 * o.lbo;
  const auto span = static_cast<std::uint32_t>(o.swizzle_bytes / 2);
  return umn % span * 2 + umn / span * o.lbo + uk % 8 * static_cast<std::uint32_t>(o.swizzle_bytes) + uk / 8 * o.sbo;
}

std::uint32_t operand_address(const Operand& o, int mn, int k) {
  const std::uint32_t address = o.start + canonical_offset(o, mn, k);
  if (o.swizzle_bytes == 0) return address;
  const int lines = o.swizzle_bytes / 16;
  const std::uint32_t line = address / 128, chunk = address / 16 % 8;
  std::uint32_t position = 0;
  while (kPattern128[line % static_cast<std::uint32_t>(lines)][position] != static_cast<int>(chunk)) ++position;
  return line * 128 + position * 16 + address % 16;
}

// The operand's layout for `rows` rows (64 for A, N for B) at `start`, the strides of a dense placement.
Operand dense(bool mn_major, int swizzle_bytes, std::uint32_t start, int rows) {
  const auto r = static_cast<std::uint32_t>(rows);
  if (!mn_major) {
    if (swizzle_bytes == 0) return {false, 0, start, 128, 256};
    return {false, swizzle_bytes, start, 16, 8 * static_cast<std::uint32_t>(swizzle_bytes)};
  }
  if (swizzle_bytes == 0) return {true, 0, start, r / 8 * 128, 128};
  const auto atom = 8 * static_cast<std::uint32_t>(swizzle_bytes);
  const std::uint32_t spans = r / static_cast<std::uint32_t>(swizzle_bytes / 2);
  return {true, swizzle_bytes, start, atom, spans * atom};
}

std::uint64_t descriptor_of(const Operand& o) {
  const std::uint64_t mode = o.swizzle_bytes == 128 ? 1 : o.swizzle_bytes == 64 ? 2 : o.swizzle_bytes == 32 ? 3 : 0;
  return std::uint64_t{o.start >> 4} | std::uint64_t{o.lbo >> 4} << 16 | std::uint64_t{o.sbo >> 4} << 32 | mode << 62;
}

struct ProductCase {
  int n;
  bool bf16, registers;
  bool a_mn;
  int a_swizzle;
  bool b_mn;
  int b_swizzle;
  bool accumulate;
};

TEST_F(Hopper, WgmmaComputesTheProductForEachShapeLayoutAndForm) {
  const std::vector<ProductCase> cases = {
      {8, true, false, false, 0, false, 0, false},     {16, false, false, false, 32, false, 32, true},
      {64, false, false, false, 128, true, 128, true}, {64, true, false, true, 64, true, 0, false},
      {128, true, false, false, 128, false, 128, true}, {128, false, false, true, 32, false, 64, true},
      {176, true, false, false, 128, false, 128, true},
      {256, true, false, false, 0, true, 128, true},   {256, false, false, false, 64, false, 64, false},
      {8, false, true, false, 0, false, 0, true},      {64, true, true, false, 0, true, 128, true},
      {128, false, true, false, 0, false, 128, false}, {256, true, true, false, 0, true, 64, true},
  };
  std::mt19937 random(20);
  std::uniform_int_distribution<int> small(-16, 16);
  auto* fragments = take<std::uint32_t>(128 * 4, "a_fragments");
  auto* c = take<float>(128 * 128, "c");
  auto* out = take<float>(128 * 128, "out");
  auto* device_image = take<unsigned char>(8192 + 24 * 1024, "image");
  for (const ProductCase& p : cases) {
    const int n = p.n;
    const auto encode = [&](float x) { return p.bf16 ? float_to_bfloat16(x) : float_to_half(x); };
    std::vector<float> a(64 * 16), b(static_cast<std::size_t>(n) * 16);  // A[m][k], B[k][n]
    for (float& x : a) x = static_cast<float>(small(random)) / 8.0f;
    for (float& x : b) x = static_cast<float>(small(random)) / 4.0f;
    const Operand oa = dense(p.a_mn, p.a_swizzle, 0, 64);
    const Operand ob = dense(p.b_mn, p.b_swizzle, 8192, n);
    std::vector<unsigned char> image(8192 + 24 * 1024, 0);
    const auto put = [&](std::uint32_t address, float value) {
      const std::uint16_t bits = encode(value);
      std::memcpy(&image[address], &bits, 2);
    };
    for (int m = 0; m < 64; ++m) {
      for (int k = 0; k < 16; ++k) put(operand_address(oa, m, k), a[static_cast<std::size_t>(16 * m + k)]);
    }
    for (int column = 0; column < n; ++column) {
      for (int k = 0; k < 16; ++k) put(operand_address(ob, column, k), b[static_cast<std::size_t>(n * k + column)]);
    }
    // Thread t of the warpgroup (warp w = t / 32, lane l = t % 32), Figures 148 and 149:
    // register i at row 16w + l/4 + 8((i >> 1) & 1), column 8(i >> 2) + 2(l % 4) + (i & 1).
    const auto row_of = [](int t, int i) { return 16 * (t / 32) + t % 32 / 4 + 8 * ((i >> 1) & 1); };
    const auto column_of = [](int t, int i) { return 8 * (i >> 2) + 2 * (t % 32 % 4) + (i & 1); };
    for (int t = 0; t < 128; ++t) {
      for (int r = 0; r < 4; ++r) {
        const int lo = 2 * r, hi = 2 * r + 1;
        fragments[4 * t + r] = encode(a[static_cast<std::size_t>(16 * row_of(t, lo) + column_of(t, lo))]) |
                               std::uint32_t{encode(a[static_cast<std::size_t>(16 * row_of(t, hi) + column_of(t, hi))])}
                                   << 16;
      }
    }
    const int registers = n / 2;
    for (int i = 0; i < 128 * registers; ++i) c[i] = static_cast<float>(i % 13) - 6.0f;
    std::memcpy(device_image, image.data(), image.size());
    const cudasim_test::WgmmaCase shape{n,    p.bf16, p.registers, p.a_mn, p.b_mn, p.accumulate, descriptor_of(oa),
                                        descriptor_of(ob)};
    ASSERT_EQ(report_of([&] {
                return cudasim_test::wgmma_product(shape, device_image, image.size(), fragments, c, out);
              }),
              "")
        << "n " << n;
    for (int t = 0; t < 128; ++t) {
      for (int i = 0; i < registers; ++i) {
        const int row = row_of(t, i), column = column_of(t, i);
        double expected = p.accumulate ? c[t * registers + i] : 0.0;
        for (int k = 0; k < 16; ++k) {
          expected += static_cast<double>(a[static_cast<std::size_t>(16 * row + k)]) *
                      b[static_cast<std::size_t>(n * k + column)];
        }
        ASSERT_EQ(out[t * registers + i], static_cast<float>(expected))
            << "n " << n << " thread " << t << " register " << i << " (" << row << ", " << column << ")";
      }
    }
  }
}

TEST_F(Hopper, WgmmaUsedRightAccumulatesAcrossTwoProducts) {
  float* out = take<float>(640, "out");
  ASSERT_EQ(report_of([&] { return cudasim_test::wgmma_use(out, WgmmaUse::right); }), "");
  for (int i = 0; i < 512; ++i) ASSERT_EQ(out[i], 48.0f) << i;  // (16 · 2) + 16
}

TEST_F(Hopper, WgmmaMisusesAreReported) {
  float* out = take<float>(640, "out");
  const auto use = [&](WgmmaUse variant) { return report_of([&] { return cudasim_test::wgmma_use(out, variant); }); };
  const std::string kernel = "wgmma_use_kernel";
  expect_finding(use(WgmmaUse::no_fence), "no wgmma.fence before the warpgroup's first wgmma.mma_async", kernel);
  expect_finding(use(WgmmaUse::written_after_fence), "wgmma without wgmma.fence", kernel);
  expect_finding(use(WgmmaUse::a_written_after_fence), "wrote the A fragment registers of this wgmma.mma_async", kernel);
  expect_finding(use(WgmmaUse::read_before_wait), "wgmma registers accessed before wgmma.wait_group", kernel);
  expect_finding(use(WgmmaUse::wait_leaves_group), "wgmma registers accessed before wgmma.wait_group", kernel);
  const std::string overwritten = use(WgmmaUse::operand_overwritten);
  expect_finding(overwritten, "shared memory race (write after read)", kernel);
  EXPECT_NE(overwritten.find("the wgmma of warpgroup 0"), std::string::npos) << overwritten;
  expect_finding(use(WgmmaUse::operand_not_fenced), "generic-proxy write not fenced for the async proxy", kernel);
  const std::string missing = use(WgmmaUse::missing_warp);
  EXPECT_NE(missing.find("warpgroup collective with missing threads"), std::string::npos) << missing;
  EXPECT_NE(missing.find("threads 96-127: finished"), std::string::npos) << missing;
  expect_finding(use(WgmmaUse::divergent_shape), "divergent warpgroup collective", kernel);
  const std::string mid_pattern = use(WgmmaUse::mid_pattern_swizzle);
  expect_finding(mid_pattern, "unsettled matrix descriptor", kernel);
  EXPECT_NE(mid_pattern.find("line 1 of its 128-byte swizzle's repeating pattern, with base offset 1"),
            std::string::npos)
      << mid_pattern;
  expect_finding(use(WgmmaUse::base_offset_at_pattern_start), "misaligned matrix descriptor", kernel);
  expect_finding(use(WgmmaUse::operand_past_the_end), "out-of-bounds shared access", kernel);
  expect_finding(use(WgmmaUse::divergent_descriptor), "divergent wgmma operands", kernel);
  expect_finding(use(WgmmaUse::chained_other_shape), "wgmma on the accumulators of another in flight", kernel);
}

// A warpgroup collective needs four whole warps: 160 threads leave warpgroup 1 one warp.
TEST_F(Hopper, WarpgroupCollectivesNeedWholeWarpgroups) {
  float* out = take<float>(256, "out");
  EXPECT_EQ(report_of([&] { return cudasim_test::warpgroup_fence(256, out); }), "");
  const std::string report = report_of([&] { return cudasim_test::warpgroup_fence(160, out); });
  expect_finding(report, "warpgroup collective outside a warpgroup", "warpgroup_fence_kernel");
  EXPECT_NE(report.find("the CTA's 160 threads leave warpgroup 1 incomplete"), std::string::npos) << report;
}

// A TMA load over an operand of a wgmma in flight; after the wgmma.wait_group it is fine.
TEST_F(Hopper, ATmaLoadOverAnInFlightWgmmaOperandIsARace) {
  auto* ones = take<std::uint16_t>(128, "ones");
  for (int i = 0; i < 128; ++i) ones[i] = 0x3f80;
  float* out = take<float>(512, "out");
  ASSERT_EQ(report_of([&] { return cudasim_test::wgmma_operand_reloaded(ones, out, true); }), "");
  for (int i = 0; i < 512; ++i) ASSERT_EQ(out[i], 16.0f) << i;
  const std::string report = report_of([&] { return cudasim_test::wgmma_operand_reloaded(ones, out, false); });
  expect_finding(report, "shared memory race (write after read)", "wgmma_operand_reloaded_kernel");
  EXPECT_NE(report.find("TMA load of 256 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find("while the wgmma of warpgroup 0 read them"), std::string::npos) << report;
}

// Without the sanitizer, a read before the wait sees the poison the accumulators hold.
TEST_F(Hopper, AccumulatorsReadAsPoisonUntilTheWait) {
  cudasim::set_sanitizer_enabled(false);
  float* out = take<float>(640, "out");
  for (const WgmmaUse early : {WgmmaUse::read_before_wait, WgmmaUse::wait_leaves_group}) {
    ASSERT_EQ(report_of([&] { return cudasim_test::wgmma_use(out, early); }), "");
    for (int t = 0; t < 128; ++t) {
      EXPECT_TRUE(std::isnan(out[512 + t])) << t << ": " << out[512 + t];
      EXPECT_EQ(out[4 * t], 48.0f) << t;
    }
  }
}

// ---- elect, setmaxnreg, stmatrix --------------------------------------------------------

TEST_F(Hopper, ElectChoosesOneLaneTheSameForEveryLane) {
  float* out = take<float>(64, "out");
  ASSERT_EQ(report_of([&] { return cudasim_test::elect_lanes(out); }), "");
  int leaders = 0;
  for (int l = 0; l < 32; ++l) {
    leaders += out[l] == 1.0f;
    EXPECT_EQ(out[32 + l], out[32]);
  }
  EXPECT_EQ(leaders, 1);
  EXPECT_EQ(out[static_cast<int>(out[32])], 1.0f);
}

TEST_F(Hopper, SetmaxnregIsCheckedPerWarpgroup) {
  float* out = take<float>(384, "out");
  EXPECT_EQ(report_of([&] { return cudasim_test::set_registers(40, 232, false, out); }), "");
  expect_finding(report_of([&] { return cudasim_test::set_registers(40, 232, true, out); }),
                 "divergent warpgroup collective", "set_registers_kernel");
  expect_finding(report_of([&] { return cudasim_test::set_registers(40, 250, false, out); }), "invalid setmaxnreg",
                 "set_registers_kernel");
  expect_finding(report_of([&] { return cudasim_test::set_registers(40, 256, false, out); }),
                 "setmaxnreg asks for more registers than the SM has", "set_registers_kernel");
}

// Figure 107: lane l's register m holds row l / 4, columns 2(l % 4) and +1 of
// matrix m (.trans: rows 2(l % 4) and +1 of column l / 4). Here register m of
// lane l is (100m + 2l) | (100m + 2l + 1) << 16.
TEST_F(Hopper, StmatrixStoresTheIsasFragments) {
  auto* out = take<std::uint16_t>(256, "out");
  for (const bool transposed : {false, true}) {
    ASSERT_EQ(report_of([&] { return cudasim_test::store_matrices(transposed, out); }), "");
    for (int row = 0; row < 16; ++row) {
      for (int column = 0; column < 16; ++column) {
        const int m = row / 8 + 2 * (column / 8), r = row % 8, c = column % 8;
        const int lane = transposed ? 4 * c + r / 2 : 4 * r + c / 2;
        const int half = transposed ? r % 2 : c % 2;
        EXPECT_EQ(out[16 * row + column], 100 * m + 2 * lane + half)
            << (transposed ? "trans " : "") << row << "," << column;
      }
    }
  }
}

}  // namespace
}  // namespace attnbench
