// cudasim.flash.sm90 (kernels/cuda/flash_sm90_forward.cu) under the simulator
// with its sanitizer on, on what the correctness matrix does not vary: the
// bhsd layout (TMA through the tensor maps' strides), a single query row, key
// ranges long enough that each pipeline stage is reused several times (the
// mbarrier parities flip), exact tile multiples beside ragged lengths, grouped
// heads 4:1, 6:2 and 8:1, and every mbarrier wait's first try_wait timing out as the
// hardware's may (its retry loops run), and head dim 256 (its 80-key tiles)
// with the bhsd layout, grouped heads and dropout. Each case: fresh random inputs,
// poisoned outputs, the fp64 oracle, and the fused-versus-baseline rule
// against cudasim.cublas, for the kernel with both its overlaps
// (cudasim.flash.sm90), without the softmax/P·V overlap
// (cudasim.flash.sm90.serial) and without the consumers' ping-pong
// (cudasim.flash.sm90.no_pingpong). And the schedule itself, traced by the
// simulator (schedule_trace.hpp): the softmax's exponentials run while a P·V
// is in flight, and the consumers issue their GEMMs in turns. Then the
// backward (kernels/cuda/flash_sm90_backward.cu), in forward-and-backward
// calls, and its deterministic mode under several CTA orders.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "harness/backend.hpp"
#include "harness/cudasim/cta_order_switch.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/schedule_trace.hpp"
#include "harness/cudasim/time_out_switch.hpp"
#include "harness/measure/accuracy.hpp"
#include "harness/measure/session.hpp"

namespace attnbench {
namespace {

// The problem of a case of either table below: its shape, mask and dropout
// (Philox offset `dropout_offset`), inputs drawn from `input_seed`, and, when
// the case is padded, batch element 1 shorter by `shortfall`.
struct Shortfall {
  std::int64_t queries, keys;
};
template <typename Case>
Problem case_problem(const Case& c, Direction direction, std::int64_t batch, std::uint32_t dropout_offset,
                     std::uint64_t input_seed, Shortfall shortfall) {
  Problem p;
  p.direction = direction;
  p.batch = batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seqlen_q = c.seqlen_q;
  p.seqlen_k = c.seqlen_k;
  p.head_dim = c.head_dim;
  p.dtype = c.dtype;
  p.layout = c.layout;
  p.mask = c.mask;
  p.dropout = DropoutSpec{c.dropout, 0x5eedull, dropout_offset};
  p.input.seed = input_seed;
  if (c.padded) {
    p.lengths_q = {c.seqlen_q, c.seqlen_q - shortfall.queries};
    p.lengths_k = {c.seqlen_k, c.seqlen_k - shortfall.keys};
  }
  resolve_lengths(p);
  return p;
}

struct Sm90Case {
  const char* name;
  InputDType dtype;
  std::int64_t head_dim, heads, kv_heads, seqlen_q, seqlen_k;
  Layout layout;
  MaskSpec mask;
  double dropout;
  bool early_time_outs;  // every wait's first try_wait returns false (time_out_switch.hpp)
  bool padded;           // batch 2, element 1 shorter than the tensors
};

const Sm90Case kCases[] = {
    {"bf16_d128_bhsd_q300_k300", InputDType::bf16, 128, 2, 2, 300, 300, Layout::bhsd, MaskSpec{}, 0.0, false, false},
    {"fp16_d64_gqa4_q1_k700_causal_bottom_right", InputDType::fp16, 64, 4, 1, 1, 700, Layout::bshd,
     MaskSpec{true, true, -1, -1}, 0.0, false, false},
    {"bf16_d128_q384_k640_window_dropout", InputDType::bf16, 128, 2, 1, 384, 640, Layout::bhsd,
     MaskSpec{false, false, 100, 30}, 0.1, false, false},
    {"bf16_d128_q384_k640_window_dropout_early_time_outs", InputDType::bf16, 128, 2, 1, 384, 640, Layout::bhsd,
     MaskSpec{false, false, 100, 30}, 0.1, true, false},
    {"fp16_d64_q520_k130_causal_top_left", InputDType::fp16, 64, 2, 2, 520, 130, Layout::bshd,
     MaskSpec{true, false, -1, -1}, 0.0, false, false},
    {"bf16_d256_bhsd_gqa2_q300_k410_causal_bottom_right_dropout", InputDType::bf16, 256, 2, 1, 300, 410, Layout::bhsd,
     MaskSpec{true, true, -1, -1}, 0.1, false, false},
    // Grouped heads whose wrong mapping (head / kv_heads) gives a wrong answer,
    // and 7 key tiles per CTA: each stage's parity flips at least three times.
    {"fp16_d64_gqa6to2_q130_k900", InputDType::fp16, 64, 6, 2, 130, 900, Layout::bshd, MaskSpec{}, 0.0, false, false},
    {"bf16_d128_bhsd_gqa8to1_q140_k260_causal_bottom_right", InputDType::bf16, 128, 8, 1, 140, 260, Layout::bhsd,
     MaskSpec{true, true, -1, -1}, 0.0, false, false},
    // Padding (batch element 1 shorter than the tensors), and bottom-right
    // causal with Lq > Lk: the first query tiles see no key (their rows'
    // O is 0 and LSE -inf), nor do the padded element's rows past its length.
    {"fp16_d64_q520_k130_causal_bottom_right_padded", InputDType::fp16, 64, 2, 2, 520, 130, Layout::bshd,
     MaskSpec{true, true, -1, -1}, 0.0, false, true},
    {"bf16_d128_bhsd_gqa6to2_q300_k330_window_padded", InputDType::bf16, 128, 6, 2, 300, 330, Layout::bhsd,
     MaskSpec{false, true, 90, 0}, 0.0, false, true},
};

class FlashSm90 : public ::testing::TestWithParam<Sm90Case> {};

TEST_P(FlashSm90, MatchesTheOracleUnderTheSanitizer) {
  cudasim::set_sanitizer_enabled(true);
  const Sm90Case& c = GetParam();
  std::optional<cudasim::EarlyTimeOuts> early;
  if (c.early_time_outs) early.emplace();
  const Problem p = case_problem(c, Direction::fwd, c.padded ? 2 : 1, 1, 23, Shortfall{141, 45});
  ASSERT_TRUE(check_problem(p).empty());
  const AccuracySettings settings;
  CaseData data(p, settings, 2);
  std::map<std::string, AccuracyResult> results;
  for (const char* name : {"cudasim.flash.sm90", "cudasim.flash.sm90.serial", "cudasim.flash.sm90.no_pingpong",
                           "cudasim.cublas"}) {
    Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    std::string skip_reason;
    const auto session = ImplementationSession::open(*implementation, data, 2, skip_reason);
    ASSERT_TRUE(session) << name << " did not run: " << skip_reason;
    session->checked_call();
    results[name] = session->check_accuracy(session->copy_outputs());
  }
  for (const char* name : {"cudasim.flash.sm90", "cudasim.flash.sm90.serial", "cudasim.flash.sm90.no_pingpong"}) {
    AccuracyResult& sm90 = results.at(name);
    apply_baseline_rule(sm90, results.at("cudasim.cublas"), element_type(c.dtype), settings);
    EXPECT_TRUE(sm90.rule_applied) << name;
    EXPECT_EQ(sm90.status, "passed") << name << ": " << sm90.reason << "\n" << sm90.to_json().dump(1);
  }
}

std::string case_name(const ::testing::TestParamInfo<Sm90Case>& param_info) { return param_info.param.name; }

INSTANTIATE_TEST_SUITE_P(Shapes, FlashSm90, ::testing::ValuesIn(kCases), case_name);

// ---- The backward ------------------------------------------------------------------

// cudasim.flash.sm90's backward (kernels/cuda/flash_sm90_backward.cu), forward
// and backward in one call, against the oracle: the per-dtype bounds and the
// fused-versus-baseline rule against cudasim.cublas, whose backward is the
// materialising one.
struct Sm90BackwardCase {
  const char* name;
  InputDType dtype;
  std::int64_t head_dim, batch, heads, kv_heads, seqlen_q, seqlen_k;
  Layout layout;
  MaskSpec mask;
  bool padded;  // batch element 1 shorter than the tensors
  double dropout;
};

const Sm90BackwardCase kBackwardCases[] = {
    {"fp16_d64_q200_k130", InputDType::fp16, 64, 1, 1, 1, 200, 130, Layout::bshd, MaskSpec{}, false, 0.0},
    {"bf16_d128_q130_k200", InputDType::bf16, 128, 1, 1, 1, 130, 200, Layout::bshd, MaskSpec{}, false, 0.0},
    // Grouped heads 6:2 (a wrong head mapping gives a wrong answer), both
    // causal alignments, padding, the bhsd layout.
    {"bf16_d128_bhsd_gqa6to2_q200_k330_causal_bottom_right_padded", InputDType::bf16, 128, 2, 6, 2, 200, 330,
     Layout::bhsd, MaskSpec{true, true, -1, -1}, true, 0.0},
    // 8:1 over 3 query tiles: each stage of the ring is used 12 times per CTA
    // (its parity flips); top-left causal with Lq < Lk leaves the CTAs of keys
    // past 260 with no visible query (their dK and dV are zeros).
    {"fp16_d64_gqa8to1_q260_k700_causal_top_left", InputDType::fp16, 64, 1, 8, 1, 260, 700, Layout::bshd,
     MaskSpec{true, false, -1, -1}, false, 0.0},
    {"fp16_d64_bhsd_gqa8to2_q300_k400_window_padded", InputDType::fp16, 64, 2, 8, 2, 300, 400, Layout::bhsd,
     MaskSpec{false, false, 100, 30}, true, 0.0},
    {"bf16_d128_q1_k300_causal_top_left", InputDType::bf16, 128, 1, 2, 2, 1, 300, Layout::bshd,
     MaskSpec{true, false, -1, -1}, false, 0.0},
    // Dropout, the forward's keep mask regenerated element for element.
    {"bf16_d128_gqa2to1_q200_k300_dropout", InputDType::bf16, 128, 1, 2, 1, 200, 300, Layout::bshd, MaskSpec{},
     false, 0.15},
    {"fp16_d64_bhsd_q260_k200_causal_bottom_right_dropout_padded", InputDType::fp16, 64, 2, 2, 2, 260, 200,
     Layout::bhsd, MaskSpec{true, true, -1, -1}, true, 0.1},
    // A two-key window, bottom-right with Lk - Lq = 127: row i sees keys
    // i + 127 and i + 128, so the only row that sees key 127 (the last of the
    // first CTA) is row 0, which sees no other key of that CTA: a CTA that
    // bounds its query tiles by one key too few leaves key 127's dV and dK
    // and row 0's dQ without their term.
    {"fp16_d64_q130_k257_window_two_keys", InputDType::fp16, 64, 1, 2, 2, 130, 257, Layout::bshd,
     MaskSpec{false, true, 0, 1}, false, 0.0},
    {"bf16_d128_q130_k257_window_two_keys", InputDType::bf16, 128, 1, 2, 1, 130, 257, Layout::bshd,
     MaskSpec{false, true, 0, 1}, false, 0.0},
    // Head dim 256: 64-key tiles shared by both consumers (Pᵀ through shared
    // memory, dQ added from registers). 6:2 over 4 query tiles: each stage
    // used 12 times per CTA; bottom-right causal with Lq > Lk gives the first
    // rows no visible key; padding; dropout; a window whose right edge falls
    // inside the consumers' 32-query halves.
    {"bf16_d256_gqa6to2_q200_k150_causal_bottom_right_padded", InputDType::bf16, 256, 2, 6, 2, 200, 150,
     Layout::bshd, MaskSpec{true, true, -1, -1}, true, 0.0},
    {"fp16_d256_bhsd_q130_k200_window_dropout", InputDType::fp16, 256, 1, 2, 1, 130, 200, Layout::bhsd,
     MaskSpec{false, false, 70, 20}, false, 0.1},
};

class FlashSm90Backward : public ::testing::TestWithParam<Sm90BackwardCase> {};

TEST_P(FlashSm90Backward, MatchesTheOracleUnderTheSanitizer) {
  cudasim::set_sanitizer_enabled(true);
  const Sm90BackwardCase& c = GetParam();
  const Problem p = case_problem(c, Direction::fwd_bwd, c.batch, 3, 29, Shortfall{37, 61});
  ASSERT_TRUE(check_problem(p).empty());
  const AccuracySettings settings;
  CaseData data(p, settings, 2);
  std::map<std::string, AccuracyResult> results;
  for (const char* name : {"cudasim.flash.sm90", "cudasim.cublas"}) {
    Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    std::string skip_reason;
    const auto session = ImplementationSession::open(*implementation, data, 2, skip_reason);
    ASSERT_TRUE(session) << name << " did not run: " << skip_reason;
    session->checked_call();
    results[name] = session->check_accuracy(session->copy_outputs());
  }
  AccuracyResult& sm90 = results.at("cudasim.flash.sm90");
  apply_baseline_rule(sm90, results.at("cudasim.cublas"), element_type(c.dtype), settings);
  EXPECT_TRUE(sm90.rule_applied);
  EXPECT_EQ(sm90.status, "passed") << sm90.reason << "\n" << sm90.to_json().dump(1);
}

std::string backward_case_name(const ::testing::TestParamInfo<Sm90BackwardCase>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashSm90Backward, ::testing::ValuesIn(kBackwardCases), backward_case_name);

// The deterministic mode: under three CTA orders (cta_order_switch.hpp), on
// one host thread so that the order of the unordered reductions is the CTAs',
// cudasim.flash.sm90.deterministic gives bit-identical dQ, dK and dV, and
// passes the oracle; cudasim.flash.sm90's dQ differs between some two orders
// (so the orders do reorder its additions) and passes the oracle too. Five
// key tiles add to every query tile (no mask), two query heads per kv head:
// at d64, whose default mode adds with bulk reduce-adds, and at d256, whose
// default mode adds from registers.
void expect_same_bits_under_every_cta_order(std::int64_t head_dim, std::int64_t seqlen_k) {
  cudasim::set_sanitizer_enabled(true);
  Problem p;
  p.direction = Direction::fwd_bwd;
  p.heads = 2;
  p.kv_heads = 1;
  p.seqlen_q = 130;
  p.seqlen_k = seqlen_k;
  p.head_dim = head_dim;
  p.dtype = InputDType::fp16;
  p.input.seed = 31;
  resolve_lengths(p);
  const AccuracySettings settings;
  CaseData data(p, settings, 1);
  const auto bytes = [](const HostTensor& tensor) { return tensor.storage; };
  for (const char* name : {"cudasim.flash.sm90.deterministic", "cudasim.flash.sm90"}) {
    Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    std::vector<std::vector<std::byte>> d_q, d_k, d_v;
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      const cudasim::CtaOrder order(seed);
      std::string skip_reason;
      const auto session = ImplementationSession::open(*implementation, data, 1, skip_reason);
      ASSERT_TRUE(session) << name << " did not run: " << skip_reason;
      session->checked_call();
      const HostOutputs outputs = session->copy_outputs();
      EXPECT_EQ(session->check_accuracy(outputs).status, "passed") << name << " d" << head_dim << ", CTA order " << seed;
      d_q.push_back(bytes(outputs.d_q));
      d_k.push_back(bytes(outputs.d_k));
      d_v.push_back(bytes(outputs.d_v));
    }
    if (std::string(name) == "cudasim.flash.sm90.deterministic") {
      for (std::size_t run = 1; run < d_q.size(); ++run) {
        EXPECT_TRUE(d_q[run] == d_q[0]) << "dQ of CTA order " << run + 1 << " differs from order 1's";
        EXPECT_TRUE(d_k[run] == d_k[0]) << "dK of CTA order " << run + 1 << " differs from order 1's";
        EXPECT_TRUE(d_v[run] == d_v[0]) << "dV of CTA order " << run + 1 << " differs from order 1's";
      }
    } else {
      EXPECT_TRUE(d_q[1] != d_q[0] || d_q[2] != d_q[0]) << "the CTA orders did not change the unordered dQ";
    }
  }
}

TEST(FlashSm90Backward, TheDeterministicModeGivesTheSameBitsUnderEveryCtaOrder) {
  expect_same_bits_under_every_cta_order(64, 600);  // key tiles of 128
  expect_same_bits_under_every_cta_order(256, 300);  // key tiles of 64
}

// ---- The schedule --------------------------------------------------------------

// One forward call of `implementation` on B1 H2 N512 d64 (four key tiles per
// CTA), traced, on one host thread.
struct TracedCall {
  std::uint64_t exponentials = 0, beside_wgmma = 0;
  std::map<std::uint64_t, std::vector<int>> commits;
};
TracedCall traced_call(const char* implementation_name) {
  cudasim::set_sanitizer_enabled(true);
  Problem p;
  p.batch = 1;
  p.heads = p.kv_heads = 2;
  p.seqlen_q = p.seqlen_k = 512;
  p.head_dim = 64;
  p.dtype = InputDType::fp16;
  p.input.seed = 7;
  resolve_lengths(p);
  const AccuracySettings settings;
  CaseData data(p, settings, 1);
  Implementation* implementation = ImplementationRegistry::instance().find(implementation_name);
  EXPECT_NE(implementation, nullptr) << implementation_name;
  TracedCall traced;
  if (implementation == nullptr) return traced;
  std::string skip_reason;
  const auto session = ImplementationSession::open(*implementation, data, 1, skip_reason);
  EXPECT_TRUE(session) << implementation_name << " did not run: " << skip_reason;
  if (!session) return traced;
  const cudasim::ScheduleTrace trace;
  session->checked_call();
  traced.exponentials = trace.exponentials();
  traced.beside_wgmma = trace.exponentials_beside_wgmma();
  traced.commits = trace.commits_by_cta();
  EXPECT_EQ(session->check_accuracy(session->copy_outputs()).status, "passed") << implementation_name;
  return traced;
}

// The warpgroup of each turn: consecutive commits of one warpgroup merged.
std::vector<int> turns(const std::vector<int>& commits) {
  std::vector<int> merged;
  for (int warpgroup : commits) {
    if (merged.empty() || merged.back() != warpgroup) merged.push_back(warpgroup);
  }
  return merged;
}

// With the overlap, every exponential of a consumer's softmax after its first
// tile runs while the consumer's previous P·V is in flight: all but the first
// tile's 64 per thread (8 CTAs × 256 consumer threads; no rescale factor is
// needed there). Without it (.serial), none does.
TEST(FlashSm90Schedule, TheSoftmaxRunsWhileTheLastPvIsInFlightOnlyWithTheOverlap) {
  const TracedCall overlapped = traced_call("cudasim.flash.sm90");
  ASSERT_GT(overlapped.exponentials, 0u);
  EXPECT_EQ(overlapped.exponentials - overlapped.beside_wgmma, 8u * 256 * 64)
      << overlapped.beside_wgmma << " of " << overlapped.exponentials;
  const TracedCall serial = traced_call("cudasim.flash.sm90.serial");
  EXPECT_EQ(serial.exponentials, overlapped.exponentials);
  EXPECT_EQ(serial.beside_wgmma, 0u);
}

// With the ping-pong, each CTA's two consumers (warpgroups 1 and 2) issue
// their GEMMs in strict turns, consumer 0 first, 5 turns each: S of the first
// tile; S(j + 1) with P(j)·V(j) three times (.serial: P(j)·V(j), then S(j + 1));
// the last P·V. Without it the simulator switches warpgroups at every
// collective, so one consumer's commits come between the other's.
TEST(FlashSm90Schedule, TheConsumersIssueTheirGemmsInTurnsOnlyWithThePingpong) {
  const auto alternating = [](int count) {
    std::vector<int> expected;
    for (int i = 0; i < 2 * count; ++i) expected.push_back(1 + i % 2);
    return expected;
  };
  for (const char* implementation : {"cudasim.flash.sm90", "cudasim.flash.sm90.serial"}) {
    const TracedCall traced = traced_call(implementation);
    ASSERT_EQ(traced.commits.size(), 8u) << implementation << ": 4 query tiles × 2 heads";
    for (const auto& [cta, commits] : traced.commits) {
      EXPECT_EQ(commits.size(), 2u * (1 + 2 * 3 + 1)) << implementation << ", CTA " << cta;
      EXPECT_EQ(turns(commits), alternating(5)) << implementation << ", CTA " << cta;
    }
  }
  const TracedCall free = traced_call("cudasim.flash.sm90.no_pingpong");
  ASSERT_EQ(free.commits.size(), 8u);
  for (const auto& [cta, commits] : free.commits) {
    EXPECT_EQ(commits.size(), 2u * (1 + 2 * 3 + 1)) << "CTA " << cta;
    EXPECT_NE(turns(commits), alternating(5)) << "CTA " << cta << ": the consumers took turns without the ping-pong";
  }
}

}  // namespace
}  // namespace attnbench
