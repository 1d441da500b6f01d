// cpu.standard and cpu.flash against the fp64 oracle cpu.reference, forward and
// backward (O, LSE, dQ, dK, dV), over every mask kind, dropout off and on, odd
// shapes, grouped-query heads, both dtypes, both layouts and several tile
// shapes; the output semantics of docs/design.md §2.1 (zeros and LSE = -inf where a row
// sees nothing, zero gradients for keys nobody sees, never NaN) for all three;
// and bitwise reproducibility across thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attention_test_support.hpp"
#include "harness/blas.hpp"
#include "harness/cpu_implementation.hpp"

namespace attnbench::test {
namespace {

// Max abs error allowed, in units of max(1, max |oracle|) of the tensor. fp32
// against fp64 on these sizes errs by ~1e-6; an off-by-one in a mask or a missing
// rescale errs by more than 1e-2.
constexpr double kTolerance = 2e-5;

struct Case {
  std::string name;
  Problem problem;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

MaskSpec causal(bool bottom_right) { return MaskSpec{true, bottom_right, -1, -1}; }
MaskSpec window(bool bottom_right, std::int64_t left, std::int64_t right) {
  return MaskSpec{false, bottom_right, left, right};
}

struct MaskCase {
  std::string name;
  MaskSpec mask;
  PaddingSpec::Kind padding = PaddingSpec::Kind::none;
};

// Every mask kind of docs/design.md §2.1 on a 37 x 53 problem.
std::vector<MaskCase> mask_cases() {
  return {
      {"none", MaskSpec{}},
      {"causal_tl", causal(false)},
      {"causal_br", causal(true)},
      {"window_tl_3_0", window(false, 3, 0)},
      {"window_br_4_2", window(true, 4, 2)},
      {"window_tl_unbounded_5", window(false, -1, 5)},
      {"window_br_6_unbounded", window(true, 6, -1)},
      {"causal_window_tl_8", MaskSpec{true, false, 8, -1}},
      {"causal_window_br_10", MaskSpec{true, true, 10, 0}},
      {"padding_explicit", MaskSpec{}, PaddingSpec::Kind::explicit_lengths},
      {"padding_explicit_causal_br", causal(true), PaddingSpec::Kind::explicit_lengths},
      {"padding_random", MaskSpec{}, PaddingSpec::Kind::random},
      {"padding_random_window_br_5_3", window(true, 5, 3), PaddingSpec::Kind::random},
  };
}

struct BlockCase {
  std::int64_t block_q, block_k;
};

// Cycles dtype, layout and head grouping over the cases so every combination
// appears.
void vary_storage(Problem& p, std::size_t index) {
  p.dtype = index % 2 == 0 ? InputDType::fp16 : InputDType::bf16;
  p.layout = (index / 2) % 2 == 0 ? Layout::bshd : Layout::bhsd;
  static constexpr std::int64_t kHeads[3][2] = {{4, 2}, {2, 2}, {3, 1}};
  p.heads = kHeads[index % 3][0];
  p.kv_heads = kHeads[index % 3][1];
}

std::string storage_name(const Problem& p) {
  return to_string(p.dtype) + "_" + to_string(p.layout) + "_h" + std::to_string(p.heads) + "kv" +
         std::to_string(p.kv_heads);
}

void set_dropout(Problem& p, double probability) {
  p.dropout.probability = probability;
  p.dropout.seed = 0x1234'5678'9abcULL;
  p.dropout.offset = 3;
}

std::vector<Case> mask_grid() {
  std::vector<Case> cases;
  const BlockCase blocks[] = {{16, 16}, {32, 8}, {7, 5}, {64, 64}};
  for (const MaskCase& m : mask_cases()) {
    for (const double dropout : {0.0, 0.17}) {
      for (const BlockCase& block : blocks) {
        Problem p = make_problem(2, 4, 2, 37, 53, 16);
        p.mask = m.mask;
        p.padding.kind = m.padding;
        if (m.padding == PaddingSpec::Kind::explicit_lengths) {
          p.batch = 4;  // one empty sequence, one with queries but no keys
          p.lengths_q = {37, 0, 20, 9};
          p.lengths_k = {53, 0, 31, 0};
        } else if (m.padding == PaddingSpec::Kind::random) {
          p.batch = 3;
          p.padding.shortfall_min = 0;
          p.padding.shortfall_max = 30;
          p.padding.seed = 11;
        }
        set_dropout(p, dropout);
        p.tile = TileHint{block.block_q, block.block_k};
        vary_storage(p, cases.size());
        finish_problem(p);
        cases.push_back({m.name + (dropout > 0 ? "_dropout" : "") + "_tile" +
                             std::to_string(block.block_q) + "x" + std::to_string(block.block_k) +
                             "_" + storage_name(p),
                         p});
      }
    }
  }
  return cases;
}

struct ShapeCase {
  std::string name;
  std::int64_t seqlen_q, seqlen_k, head_dim;
  MaskSpec mask;
};

std::vector<Case> shape_cases() {
  const ShapeCase shapes[] = {
      {"q53_k37_causal_br", 53, 37, 16, causal(true)},  // rows 0..15 see no key
      {"q53_k37_window_br_2_0", 53, 37, 16, window(true, 2, 0)},
      {"q53_k37_causal_tl", 53, 37, 16, causal(false)},
      {"q1_k53_none", 1, 53, 16, MaskSpec{}},
      {"q1_k53_causal_br", 1, 53, 16, causal(true)},
      {"q1_k53_causal_tl", 1, 53, 16, causal(false)},
      {"q37_k1_none", 37, 1, 16, MaskSpec{}},
      {"q37_k1_causal_br", 37, 1, 16, causal(true)},
      {"q37_k1_causal_tl", 37, 1, 16, causal(false)},
      {"q1_k1_none", 1, 1, 16, MaskSpec{}},
      {"q130_k70_d5_causal_br", 130, 70, 5, causal(true)},
      {"q70_k130_d24_window_tl_20_20", 70, 130, 24, window(false, 20, 20)},
  };
  std::vector<Case> cases;
  for (const ShapeCase& shape : shapes) {
    for (const double dropout : {0.0, 0.17}) {
      for (const BlockCase& block : {BlockCase{16, 16}, BlockCase{7, 5}}) {
        Problem p = make_problem(2, 4, 2, shape.seqlen_q, shape.seqlen_k, shape.head_dim);
        p.mask = shape.mask;
        set_dropout(p, dropout);
        p.tile = TileHint{block.block_q, block.block_k};
        vary_storage(p, cases.size());
        finish_problem(p);
        cases.push_back({shape.name + (dropout > 0 ? "_dropout" : "") + "_tile" +
                             std::to_string(block.block_q) + "x" + std::to_string(block.block_k) +
                             "_" + storage_name(p),
                         p});
      }
    }
  }
  return cases;
}

// The default tiles (no hint): several of cpu.flash's 512-key blocks, the last
// one partial, and of cpu.standard's 64-row blocks; a head dimension summed in
// two parts (96) and keys in parts of 128, the last partial (cpu_tiles.hpp).
std::vector<Case> default_tile_cases() {
  const ShapeCase shapes[] = {
      {"q600_k1100_none", 600, 1100, 16, MaskSpec{}},
      {"q70_k600_d96_causal_br", 70, 600, 96, causal(true)},
      {"q600_k1100_causal_br", 600, 1100, 16, causal(true)},
      {"q1100_k600_window_tl_300_40", 1100, 600, 8, window(false, 300, 40)},
  };
  std::vector<Case> cases;
  for (const ShapeCase& shape : shapes) {
    for (const double dropout : {0.0, 0.17}) {
      Problem p = make_problem(1, 2, 1, shape.seqlen_q, shape.seqlen_k, shape.head_dim);
      p.mask = shape.mask;
      set_dropout(p, dropout);
      vary_storage(p, cases.size());
      finish_problem(p);
      cases.push_back({shape.name + (dropout > 0 ? "_dropout" : "") + "_default_tile_" + storage_name(p), p});
    }
  }
  return cases;
}

// Softmax scales of every sign: the score GEMM multiplies by sign(tau) and the
// exponential by |tau| (cpu_tiles.hpp, ScoreScale); tau = 0 makes every visible
// key weigh the same.
std::vector<Case> scale_cases() {
  std::vector<Case> cases;
  for (const double scale : {-0.3, 0.0, 0.7}) {
    Problem p = make_problem(1, 2, 1, 53, 600, 96);
    p.mask = causal(true);
    p.scale = scale;
    vary_storage(p, cases.size());
    finish_problem(p);
    const std::string name = scale < 0 ? "negative" : scale == 0 ? "zero" : "positive";
    cases.push_back({"q53_k600_d96_causal_br_scale_" + name + "_" + storage_name(p), p});
  }
  return cases;
}

// ---- Checks ----------------------------------------------------------------------

std::int64_t nan_count(const OwnedBuffer& tensor) {
  std::int64_t count = 0;
  for (std::int64_t e = 0; e < tensor.size(); ++e) count += std::isnan(tensor.at(e)) ? 1 : 0;
  return count;
}

// docs/design.md §2.1: rows that see nothing (padded or fully masked) give O = 0,
// LSE = -inf and dQ = 0; keys that nobody sees get dK = dV = 0; nothing is NaN.
void expect_output_semantics(const Problem& p, const Outputs& out) {
  EXPECT_EQ(nan_count(out.out), 0) << "NaN in O";
  EXPECT_EQ(nan_count(out.lse), 0) << "NaN in LSE";
  EXPECT_EQ(nan_count(out.d_q), 0) << "NaN in dQ";
  EXPECT_EQ(nan_count(out.d_k), 0) << "NaN in dK";
  EXPECT_EQ(nan_count(out.d_v), 0) << "NaN in dV";
  const double inf = std::numeric_limits<double>::infinity();
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
        const double lse = out.lse.at(lse_index(p, b, h, i));
        if (row_sees_a_key(p, b, i)) {
          EXPECT_TRUE(std::isfinite(lse))
              << "LSE of visible row b=" << b << " h=" << h << " i=" << i;
          continue;
        }
        EXPECT_EQ(lse, -inf) << "LSE of empty row b=" << b << " h=" << h << " i=" << i;
        for (std::int64_t x = 0; x < p.head_dim; ++x) {
          ASSERT_EQ(out.out.at(q_index(p, b, i, h, x)), 0.0)
              << "O of empty row b=" << b << " i=" << i;
          ASSERT_EQ(out.d_q.at(q_index(p, b, i, h, x)), 0.0)
              << "dQ of empty row b=" << b << " i=" << i;
        }
      }
    }
    for (std::int64_t hkv = 0; hkv < p.kv_heads; ++hkv) {
      for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
        if (key_ever_visible(p, b, j)) continue;
        for (std::int64_t x = 0; x < p.head_dim; ++x) {
          ASSERT_EQ(out.d_k.at(kv_index(p, b, j, hkv, x)), 0.0)
              << "dK of unseen key b=" << b << " j=" << j;
          ASSERT_EQ(out.d_v.at(kv_index(p, b, j, hkv, x)), 0.0)
              << "dV of unseen key b=" << b << " j=" << j;
        }
      }
    }
  }
}

// Max abs error of `got` against `oracle` over the elements where the oracle is
// finite, within kTolerance x max(1, max |oracle|).
void expect_close(const char* tensor, const OwnedBuffer& got, const OwnedBuffer& oracle) {
  ASSERT_EQ(got.size(), oracle.size());
  double scale = 1.0;
  double max_error = 0.0;
  std::int64_t worst = -1;
  for (std::int64_t e = 0; e < oracle.size(); ++e) {
    const double expected = oracle.at(e);
    if (!std::isfinite(expected)) continue;
    scale = std::max(scale, std::abs(expected));
    const double error = std::abs(got.at(e) - expected);
    if (!(error <= max_error)) {
      max_error = error;
      worst = e;
    }
  }
  EXPECT_LE(max_error, kTolerance * scale)
      << tensor << ": max abs error " << max_error << " at element " << worst << " (got "
      << (worst >= 0 ? got.at(worst) : 0.0) << ", oracle " << (worst >= 0 ? oracle.at(worst) : 0.0)
      << "), scale " << scale;
}

class CpuImplementations : public ::testing::TestWithParam<Case> {};

TEST_P(CpuImplementations, MatchTheOracleForwardAndBackward) {
  const Problem& p = GetParam().problem;
  const Inputs in = make_inputs(p, 0xC0FFEE + static_cast<std::uint64_t>(p.seqlen_q));
  const Outputs oracle = run(implementation("cpu.reference"), p, in, 2);
  {
    SCOPED_TRACE("cpu.reference");
    expect_output_semantics(p, oracle);
  }
  for (const char* name : {"cpu.standard", "cpu.flash"}) {
    SCOPED_TRACE(name);
    const Outputs got = run(implementation(name), p, in, 2);
    expect_output_semantics(p, got);
    expect_close("O", got.out, oracle.out);
    expect_close("LSE", got.lse, oracle.lse);
    expect_close("dQ", got.d_q, oracle.d_q);
    expect_close("dK", got.d_k, oracle.d_k);
    expect_close("dV", got.d_v, oracle.d_v);
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Masks, CpuImplementations, ::testing::ValuesIn(mask_grid()), case_name);
INSTANTIATE_TEST_SUITE_P(Shapes, CpuImplementations, ::testing::ValuesIn(shape_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(DefaultTiles, CpuImplementations, ::testing::ValuesIn(default_tile_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Scales, CpuImplementations, ::testing::ValuesIn(scale_cases()), case_name);

// ---- Threads -----------------------------------------------------------------------

bool same_bits(const OwnedBuffer& a, const OwnedBuffer& b) {
  return a.storage.size() == b.storage.size() &&
         std::memcmp(a.storage.data(), b.storage.data(), a.storage.size()) == 0;
}

TEST(CpuImplementationsThreads, OneThreadGivesTheBitsOfTwoAndTheSameTraffic) {
  Problem p = make_problem(3, 4, 2, 45, 61, 16);
  p.mask = MaskSpec{true, true, 20, -1};
  p.padding.kind = PaddingSpec::Kind::random;
  p.padding.shortfall_max = 15;
  set_dropout(p, 0.17);
  p.tile = TileHint{16, 8};
  finish_problem(p);
  const Inputs in = make_inputs(p, 99);
  for (const char* name : {"cpu.reference", "cpu.standard", "cpu.flash"}) {
    SCOPED_TRACE(name);
    const Outputs one = run(implementation(name), p, in, 1);
    const Outputs two = run(implementation(name), p, in, 2);
    EXPECT_TRUE(same_bits(one.out, two.out));
    EXPECT_TRUE(same_bits(one.lse, two.lse));
    EXPECT_TRUE(same_bits(one.d_q, two.d_q));
    EXPECT_TRUE(same_bits(one.d_k, two.d_k));
    EXPECT_TRUE(same_bits(one.d_v, two.d_v));
    EXPECT_EQ(one.forward_read, two.forward_read);
    EXPECT_EQ(one.forward_write, two.forward_write);
    EXPECT_EQ(one.backward_read, two.backward_read);
    EXPECT_EQ(one.backward_write, two.backward_write);
  }
}

// ---- What each declares ----------------------------------------------------------------

TEST(CpuImplementationsRegistry, DeclareTheirRoles) {
  Problem p = make_problem(1, 2, 1, 10, 12, 8);
  TrafficCounter traffic(3);
  const ExecutionContext context{3, &traffic};

  Implementation& reference = implementation("cpu.reference");
  EXPECT_TRUE(reference.memory_outside_arena().is_null()) << "the oracle calls no library";
  EXPECT_TRUE(reference.is_oracle());
  EXPECT_FALSE(reference.counts_traffic());
  EXPECT_EQ(reference.output_type(p), ElementType::f64);
  EXPECT_EQ(reference.device(), "cpu");

  Implementation& standard = implementation("cpu.standard");
  EXPECT_EQ(standard.memory_outside_arena()["library"], blas::library().identity());
  EXPECT_FALSE(standard.is_oracle());
  EXPECT_TRUE(standard.counts_traffic());
  EXPECT_EQ(standard.output_type(p), ElementType::f32);
  EXPECT_EQ(standard.accuracy_baseline(), "");
  EXPECT_EQ(standard.device(), "cpu");

  Implementation& flash = implementation("cpu.flash");
  EXPECT_EQ(flash.memory_outside_arena()["library"], blas::library().identity());
  EXPECT_FALSE(flash.is_oracle());
  EXPECT_TRUE(flash.counts_traffic());
  EXPECT_EQ(flash.output_type(p), ElementType::f32);
  EXPECT_EQ(flash.accuracy_baseline(), "cpu.standard");
  EXPECT_EQ(flash.device(), "cpu");
  EXPECT_EQ(flash.configuration(p, context),
            (nlohmann::ordered_json{{"block_q", 64}, {"block_k", 512}, {"threads", 3}}));
  p.tile = TileHint{32, 8};
  EXPECT_EQ(flash.configuration(p, context),
            (nlohmann::ordered_json{{"block_q", 32}, {"block_k", 8}, {"threads", 3}}));

  // Each shares the CPU base; the two whose products go through the BLAS share its availability rule.
  EXPECT_NE(dynamic_cast<CpuImplementation*>(&reference), nullptr);
  EXPECT_EQ(dynamic_cast<CpuBlasImplementation*>(&reference), nullptr);
  EXPECT_NE(dynamic_cast<CpuBlasImplementation*>(&standard), nullptr);
  EXPECT_NE(dynamic_cast<CpuBlasImplementation*>(&flash), nullptr);
}

// The workspace of the materializing implementation holds P of every head; the
// fused one's grows only linearly with the sequence.
TEST(CpuImplementationsRegistry, WorkspaceGrowsQuadraticallyOnlyForTheMaterializingOne) {
  TrafficCounter traffic(2);
  const ExecutionContext context{2, &traffic};
  const Problem small = make_problem(1, 2, 2, 1024, 1024, 64);
  const Problem large = make_problem(1, 2, 2, 2048, 2048, 64);
  Implementation& standard = implementation("cpu.standard");
  Implementation& flash = implementation("cpu.flash");
  EXPECT_GE(standard.workspace_bytes(small, context), 2u * 1024 * 1024 * 4);
  EXPECT_GT(static_cast<double>(standard.workspace_bytes(large, context)),
            3.5 * static_cast<double>(standard.workspace_bytes(small, context)));
  EXPECT_LT(static_cast<double>(flash.workspace_bytes(large, context)),
            2.1 * static_cast<double>(flash.workspace_bytes(small, context)));
}

// A forward-only run of the materializing implementation keeps P but holds no
// score-gradient array for a backward it will not run.
TEST(CpuImplementationsRegistry, AForwardOnlyStandardRunHoldsNoScoreGradients) {
  TrafficCounter traffic(2);
  const ExecutionContext context{2, &traffic};
  const Problem both = make_problem(1, 2, 2, 512, 512, 64);
  Problem forward = both;
  forward.direction = Direction::fwd;
  Implementation& standard = implementation("cpu.standard");
  EXPECT_GE(standard.workspace_bytes(forward, context), 2u * 512 * 512 * 4) << "P of both heads";
  EXPECT_GE(standard.workspace_bytes(both, context) - standard.workspace_bytes(forward, context), 512u * 512 * 4);
}

}  // namespace
}  // namespace attnbench::test
