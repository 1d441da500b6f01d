// cudasim.flash.sm90 (kernels/cuda/flash_sm90_forward.cu) under the simulator
// with its sanitizer on, on what the correctness matrix does not vary: the
// bhsd layout (TMA through the tensor maps' strides), a single query row, key
// ranges long enough that each pipeline stage is reused several times (the
// mbarrier parities flip), exact tile multiples beside ragged lengths, grouped
// heads 4:1, and every mbarrier wait's first try_wait timing out as the
// hardware's may (its retry loops run). Each case: fresh random inputs,
// poisoned outputs, the fp64 oracle, and the fused-versus-baseline rule
// against cudasim.cublas, for the kernel with its softmax/P·V overlap
// (cudasim.flash.sm90) and without (cudasim.flash.sm90.serial).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "harness/backend.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/time_out_switch.hpp"
#include "harness/measure/accuracy.hpp"
#include "harness/measure/session.hpp"

namespace attnbench {
namespace {

struct Sm90Case {
  const char* name;
  InputDType dtype;
  std::int64_t head_dim, heads, kv_heads, seqlen_q, seqlen_k;
  Layout layout;
  MaskSpec mask;
  double dropout;
  bool early_time_outs;  // every wait's first try_wait returns false (time_out_switch.hpp)
};

const Sm90Case kCases[] = {
    {"bf16_d128_bhsd_q300_k300", InputDType::bf16, 128, 2, 2, 300, 300, Layout::bhsd, MaskSpec{}, 0.0, false},
    {"fp16_d64_gqa4_q1_k700_causal_bottom_right", InputDType::fp16, 64, 4, 1, 1, 700, Layout::bshd,
     MaskSpec{true, true, -1, -1}, 0.0, false},
    {"bf16_d128_q384_k640_window_dropout", InputDType::bf16, 128, 2, 1, 384, 640, Layout::bhsd,
     MaskSpec{false, false, 100, 30}, 0.1, false},
    {"bf16_d128_q384_k640_window_dropout_early_time_outs", InputDType::bf16, 128, 2, 1, 384, 640, Layout::bhsd,
     MaskSpec{false, false, 100, 30}, 0.1, true},
    {"fp16_d64_q520_k130_causal_top_left", InputDType::fp16, 64, 2, 2, 520, 130, Layout::bshd,
     MaskSpec{true, false, -1, -1}, 0.0, false},
};

class FlashSm90 : public ::testing::TestWithParam<Sm90Case> {};

TEST_P(FlashSm90, MatchesTheOracleUnderTheSanitizer) {
  cudasim::set_sanitizer_enabled(true);
  const Sm90Case& c = GetParam();
  std::optional<cudasim::EarlyTimeOuts> early;
  if (c.early_time_outs) early.emplace();
  Problem p;
  p.batch = 1;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seqlen_q = c.seqlen_q;
  p.seqlen_k = c.seqlen_k;
  p.head_dim = c.head_dim;
  p.dtype = c.dtype;
  p.layout = c.layout;
  p.mask = c.mask;
  p.dropout = DropoutSpec{c.dropout, 0x5eedull, 1};
  p.input.seed = 23;
  resolve_lengths(p);
  ASSERT_TRUE(check_problem(p).empty());
  const AccuracySettings settings;
  CaseData data(p, settings, 2);
  std::map<std::string, AccuracyResult> results;
  for (const char* name : {"cudasim.flash.sm90", "cudasim.flash.sm90.serial", "cudasim.cublas"}) {
    Implementation* implementation = ImplementationRegistry::instance().find(name);
    ASSERT_NE(implementation, nullptr) << name;
    std::string skip_reason;
    const auto session = ImplementationSession::open(*implementation, data, 2, skip_reason);
    ASSERT_TRUE(session) << name << " did not run: " << skip_reason;
    session->checked_call();
    results[name] = session->check_accuracy(session->copy_outputs());
  }
  for (const char* name : {"cudasim.flash.sm90", "cudasim.flash.sm90.serial"}) {
    AccuracyResult& sm90 = results.at(name);
    apply_baseline_rule(sm90, results.at("cudasim.cublas"), element_type(c.dtype), settings);
    EXPECT_TRUE(sm90.rule_applied) << name;
    EXPECT_EQ(sm90.status, "passed") << name << ": " << sm90.reason << "\n" << sm90.to_json().dump(1);
  }
}

std::string case_name(const ::testing::TestParamInfo<Sm90Case>& param_info) { return param_info.param.name; }

INSTANTIATE_TEST_SUITE_P(Shapes, FlashSm90, ::testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace attnbench
