// The accuracy check (docs/design.md §6): the seeded, bounded sample plan; the error
// metrics and the per-dtype bound against the fp64 oracle; poison (NaN) and
// -inf handling; the fused-versus-baseline rule and its floor; and the JSON
// record against the results schema.
#include "harness/measure/accuracy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attention_test_support.hpp"
#include "harness/embedded_schemas.hpp"
#include "harness/scenario/json_schema.hpp"

namespace attnbench::test {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kThreads = 2;

// ---- helpers -------------------------------------------------------------------

// Output buffers (O, dQ, dK, dV in `type`, LSE in `lse_type`) poisoned with NaN.
Outputs poisoned_outputs(const Problem& p, ElementType type, ElementType lse_type = ElementType::f32) {
  Outputs out;
  out.out = OwnedBuffer(type, q_elements(p));
  out.lse = OwnedBuffer(lse_type, lse_elements(p));
  out.d_q = OwnedBuffer(type, q_elements(p));
  out.d_k = OwnedBuffer(type, kv_elements(p));
  out.d_v = OwnedBuffer(type, kv_elements(p));
  for (OwnedBuffer* buffer : {&out.out, &out.lse, &out.d_q, &out.d_k, &out.d_v}) {
    fill_with_nan(buffer->buffer.data, buffer->buffer.type, buffer->buffer.elements);
  }
  return out;
}

// Writes the oracle's values into exactly the sampled elements of `out`.
void write_oracle(const Problem& p, const OracleSample& oracle, Outputs& out) {
  const bool backward = has_backward(p.direction);
  const std::int64_t d = p.head_dim;
  for (std::size_t s = 0; s < oracle.plan.query.size(); ++s) {
    const QueryRowSample& sample = oracle.plan.query[s];
    for (std::size_t r = 0; r < sample.rows.size(); ++r) {
      const std::int64_t row = sample.rows[r];
      out.lse.set(lse_index(p, sample.batch, sample.head, row), oracle.lse[s][r]);
      for (std::int64_t c = 0; c < d; ++c) {
        const std::int64_t at = q_index(p, sample.batch, row, sample.head, c);
        const std::size_t ref = r * static_cast<std::size_t>(d) + static_cast<std::size_t>(c);
        out.out.set(at, oracle.out[s][ref]);
        if (backward) out.d_q.set(at, oracle.d_q[s][ref]);
      }
    }
  }
  for (std::size_t s = 0; s < oracle.plan.key.size(); ++s) {
    const KeyHeadSample& sample = oracle.plan.key[s];
    for (std::int64_t row = 0; row < p.seqlen_k; ++row) {
      for (std::int64_t c = 0; c < d; ++c) {
        const std::int64_t at = kv_index(p, sample.batch, row, sample.kv_head, c);
        const auto ref = static_cast<std::size_t>(row * d + c);
        out.d_k.set(at, oracle.d_k[s][ref]);
        out.d_v.set(at, oracle.d_v[s][ref]);
      }
    }
  }
}

AttentionBuffers buffers_of(const Inputs& in, const Outputs& out) { return view(in, out); }

const TensorVerdict* verdict_of(const AccuracyResult& result, const std::string& tensor) {
  for (const auto& verdict : result.tensors) {
    if (verdict.tensor == tensor) return &verdict;
  }
  return nullptr;
}

std::vector<std::string> tensor_names(const AccuracyResult& result) {
  std::vector<std::string> names;
  for (const auto& verdict : result.tensors) names.push_back(verdict.tensor);
  return names;
}

std::size_t total_rows(const SamplePlan& plan) {
  std::size_t rows = 0;
  for (const auto& sample : plan.query) rows += sample.rows.size();
  return rows;
}

// A problem, its inputs, a plan and the oracle on it.
struct Case {
  Problem p;
  Inputs in;
  SamplePlan plan;
  OracleSample oracle;
};

Case make_case(Problem p, const AccuracySettings& settings, std::uint64_t input_seed = 11) {
  Case c{std::move(p), {}, {}, {}};
  c.in = make_inputs(c.p, input_seed);
  c.plan = plan_sample(c.p, settings);
  Outputs unused;  // the oracle reads only the inputs
  c.oracle = compute_oracle(c.p, buffers_of(c.in, unused), c.plan, kThreads);
  return c;
}

// Two query heads per kv head, two batch elements, unequal lengths, BHSD.
Problem small_gqa_problem() {
  Problem p = make_problem(2, 4, 2, 13, 9, 8);
  p.layout = Layout::bhsd;
  finish_problem(p);
  return p;
}

// ---- plan_sample --------------------------------------------------------------

TEST(PlanSample, CompleteWhenTheBudgetCoversTheProblem) {
  const Problem p = small_gqa_problem();
  const AccuracySettings settings;
  const SamplePlan plan = plan_sample(p, settings);
  EXPECT_TRUE(plan.complete);
  EXPECT_TRUE(plan.key_side_checked);
  ASSERT_EQ(plan.query.size(), 8u);
  std::size_t index = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h, ++index) {
      EXPECT_EQ(plan.query[index].batch, b);
      EXPECT_EQ(plan.query[index].head, h);
      std::vector<std::int64_t> all(static_cast<std::size_t>(p.seqlen_q));
      for (std::int64_t i = 0; i < p.seqlen_q; ++i) all[static_cast<std::size_t>(i)] = i;
      EXPECT_EQ(plan.query[index].rows, all);
    }
  }
  ASSERT_EQ(plan.key.size(), 4u);
  index = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.kv_heads; ++h, ++index) {
      EXPECT_EQ(plan.key[index].batch, b);
      EXPECT_EQ(plan.key[index].kv_head, h);
    }
  }
  EXPECT_GT(plan.oracle_macs, 0.0);
  EXPECT_LE(plan.oracle_macs, settings.max_oracle_macs);

  const auto description = plan.describe();
  EXPECT_EQ(description["complete"], true);
  EXPECT_EQ(description["query_heads"], 8);
  EXPECT_EQ(description["query_rows"], 8 * 13);
  EXPECT_EQ(description["kv_heads"], 4);
  EXPECT_EQ(description["key_side_checked"], true);
  EXPECT_EQ(description["oracle_macs"], plan.oracle_macs);
}

TEST(PlanSample, ForwardOnlyPlansNoKeySide) {
  Problem p = small_gqa_problem();
  p.direction = Direction::fwd;
  const SamplePlan plan = plan_sample(p, AccuracySettings{});
  EXPECT_TRUE(plan.complete);
  EXPECT_TRUE(plan.key.empty());
  EXPECT_EQ(total_rows(plan), 8u * 13u);
}

Problem large_forward_problem() {
  Problem p = make_problem(2, 16, 16, 1024, 1024, 64);
  p.direction = Direction::fwd;
  finish_problem(p);
  return p;
}

void expect_valid_rows(const Problem& p, const QueryRowSample& sample) {
  ASSERT_GE(sample.rows.size(), 2u);
  EXPECT_EQ(sample.rows.front(), 0);
  EXPECT_EQ(sample.rows.back(), p.seqlen_q - 1);
  for (std::size_t r = 1; r < sample.rows.size(); ++r) {
    EXPECT_LT(sample.rows[r - 1], sample.rows[r]) << "rows sorted and distinct";
  }
  EXPECT_GE(sample.batch, 0);
  EXPECT_LT(sample.batch, p.batch);
  EXPECT_GE(sample.head, 0);
  EXPECT_LT(sample.head, p.heads);
}

TEST(PlanSample, ForwardStaysWithinTheBudget) {
  const Problem p = large_forward_problem();
  for (double budget : {3e6, 1e7, 1e8, 1e9}) {
    SCOPED_TRACE(budget);
    AccuracySettings settings;
    settings.max_oracle_macs = budget;
    const SamplePlan plan = plan_sample(p, settings);
    EXPECT_FALSE(plan.complete);
    EXPECT_TRUE(plan.key.empty());
    EXPECT_LE(plan.oracle_macs, budget);
    EXPECT_GE(plan.oracle_macs, 0.5 * budget) << "the budget is mostly used";
    ASSERT_FALSE(plan.query.empty());
    EXPECT_LE(plan.query.size(), 8u);
    std::set<std::pair<std::int64_t, std::int64_t>> heads;
    for (const auto& sample : plan.query) {
      expect_valid_rows(p, sample);
      heads.insert({sample.batch, sample.head});
    }
    EXPECT_EQ(heads.size(), plan.query.size()) << "each head sampled once";
    EXPECT_LT(total_rows(plan), static_cast<std::size_t>(p.batch * p.heads * p.seqlen_q));
  }
}

TEST(PlanSample, SameSeedSamePlanOtherSeedOtherRows) {
  const Problem p = large_forward_problem();
  AccuracySettings settings;
  settings.max_oracle_macs = 1e7;
  settings.seed = 5;
  const SamplePlan first = plan_sample(p, settings);
  const SamplePlan again = plan_sample(p, settings);
  ASSERT_EQ(first.query.size(), again.query.size());
  for (std::size_t s = 0; s < first.query.size(); ++s) {
    EXPECT_EQ(first.query[s].batch, again.query[s].batch);
    EXPECT_EQ(first.query[s].head, again.query[s].head);
    EXPECT_EQ(first.query[s].rows, again.query[s].rows);
  }
  EXPECT_EQ(first.oracle_macs, again.oracle_macs);

  settings.seed = 6;
  const SamplePlan other = plan_sample(p, settings);
  std::set<std::int64_t> first_rows, other_rows;
  for (const auto& sample : first.query) first_rows.insert(sample.rows.begin(), sample.rows.end());
  for (const auto& sample : other.query) other_rows.insert(sample.rows.begin(), sample.rows.end());
  EXPECT_NE(first_rows, other_rows);
}

TEST(PlanSample, BackwardSamplesWholeKvHeadsWithinTheBudget) {
  Problem p = make_problem(2, 8, 2, 256, 256, 32);
  finish_problem(p);
  AccuracySettings settings;
  settings.max_oracle_macs = 1.5e8;
  const SamplePlan plan = plan_sample(p, settings);
  EXPECT_FALSE(plan.complete);
  EXPECT_TRUE(plan.key_side_checked);
  EXPECT_GE(plan.key.size(), 1u);
  EXPECT_LT(plan.key.size(), 4u);
  EXPECT_LE(plan.oracle_macs, settings.max_oracle_macs);
  for (const auto& sample : plan.query) expect_valid_rows(p, sample);
}

TEST(PlanSample, BackwardWithAKvHeadBeyondTheBudgetSkipsTheKeySide) {
  Problem p = make_problem(1, 2, 1, 256, 256, 32);
  finish_problem(p);
  AccuracySettings settings;
  settings.max_oracle_macs = 1e7;  // one kv head's dK/dV costs about 2e7
  Case c = make_case(p, settings);
  EXPECT_FALSE(c.plan.key_side_checked);
  EXPECT_TRUE(c.plan.key.empty());
  EXPECT_FALSE(c.plan.complete);
  EXPECT_LE(c.plan.oracle_macs, settings.max_oracle_macs);
  EXPECT_EQ(c.plan.describe()["key_side_checked"], false);

  Outputs out = poisoned_outputs(c.p, ElementType::f64);  // dK, dV stay NaN
  write_oracle(c.p, c.oracle, out);
  const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(tensor_names(result), (std::vector<std::string>{"O", "LSE", "dQ"}));
  EXPECT_NE(result.note.find("dK and dV not checked"), std::string::npos) << result.note;
  EXPECT_NE(result.reason.find("dK and dV not checked"), std::string::npos) << result.reason;
  EXPECT_EQ(result.status, "passed");
}

// ---- check_outputs ------------------------------------------------------------

TEST(CheckOutputs, OracleValuesPassWithZeroError) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  ASSERT_TRUE(c.plan.complete);
  Outputs out = poisoned_outputs(c.p, ElementType::f64, ElementType::f64);
  write_oracle(c.p, c.oracle, out);
  const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "passed") << result.reason;
  EXPECT_EQ(result.reason, "");
  EXPECT_EQ(tensor_names(result), (std::vector<std::string>{"O", "LSE", "dQ", "dK", "dV"}));
  const std::size_t query_elements = 2 * 4 * 13 * 8;
  const std::size_t key_elements = 2 * 2 * 9 * 8;
  for (const auto& verdict : result.tensors) {
    SCOPED_TRACE(verdict.tensor);
    EXPECT_TRUE(verdict.passed);
    EXPECT_EQ(verdict.error.max_abs_error, 0.0);
    EXPECT_EQ(verdict.error.mean_abs_error, 0.0);
    EXPECT_EQ(verdict.error.relative_l2_error, 0.0);
    EXPECT_GT(verdict.error.oracle_max_abs, 0.0);
    EXPECT_EQ(verdict.error.nan, 0u);
    EXPECT_EQ(verdict.error.inf, 0u);
    EXPECT_FALSE(verdict.rule_limit.has_value());
    const std::size_t expected = verdict.tensor == "LSE"   ? std::size_t{2 * 4 * 13}
                                 : verdict.tensor == "O" || verdict.tensor == "dQ" ? query_elements
                                                                                   : key_elements;
    EXPECT_EQ(verdict.error.checked, expected);
  }
}

TEST(CheckOutputs, OnlySampledElementsAreRead) {
  // A sampled plan with everything else left as NaN still passes.
  Problem p = make_problem(2, 4, 2, 64, 48, 16);
  finish_problem(p);
  AccuracySettings settings;
  settings.max_oracle_macs = 1e6;
  Case c = make_case(p, settings);
  ASSERT_FALSE(c.plan.complete);
  ASSERT_TRUE(c.plan.key_side_checked);
  Outputs out = poisoned_outputs(c.p, ElementType::f64, ElementType::f64);
  write_oracle(c.p, c.oracle, out);
  const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "passed") << result.reason;
  EXPECT_EQ(verdict_of(result, "O")->error.checked,
            total_rows(c.plan) * static_cast<std::size_t>(p.head_dim));
  EXPECT_EQ(verdict_of(result, "dK")->error.checked,
            c.plan.key.size() * static_cast<std::size_t>(p.seqlen_k * p.head_dim));
  EXPECT_EQ(result.sample, c.plan.describe());
}

TEST(CheckOutputs, TheRegisteredImplementationsPassAgainstTheOracle) {
  // The whole-problem implementations, with a mask and unequal lengths, against
  // the per-row oracle: the strides and indices of check_outputs agree with theirs.
  Problem p = make_problem(2, 4, 2, 21, 30, 16);
  p.mask.causal = true;
  p.mask.bottom_right = true;
  p.layout = Layout::bhsd;
  finish_problem(p);
  const AccuracySettings settings;
  Case c = make_case(p, settings);
  for (const char* name : {"cpu.reference", "cpu.standard"}) {
    SCOPED_TRACE(name);
    Implementation& impl = implementation(name);
    const Outputs out = run(impl, c.p, c.in, kThreads);
    const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
    EXPECT_EQ(result.status, "passed") << result.reason;
    ASSERT_EQ(result.tensors.size(), 5u);
    for (const auto& verdict : result.tensors) {
      SCOPED_TRACE(verdict.tensor);
      if (impl.output_type(c.p) == ElementType::f64 && verdict.tensor != "LSE") {
        EXPECT_LE(verdict.error.max_abs_error, 1e-12 * std::max(1.0, verdict.error.oracle_max_abs));
      }
      EXPECT_EQ(verdict.error.nan, 0u);
    }
  }
}

TEST(CheckOutputs, ANeverWrittenElementOfOFailsAsNaN) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  Outputs out = poisoned_outputs(c.p, ElementType::f32);
  write_oracle(c.p, c.oracle, out);
  out.out.set(q_index(c.p, 1, 7, 2, 3), std::numeric_limits<double>::quiet_NaN());  // poison left
  const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "failed");
  const TensorVerdict* o = verdict_of(result, "O");
  ASSERT_NE(o, nullptr);
  EXPECT_FALSE(o->passed);
  EXPECT_EQ(o->error.nan, 1u);
  EXPECT_NE(result.reason.find("O: 1 NaN"), std::string::npos) << result.reason;
  for (const char* other : {"LSE", "dQ", "dK", "dV"}) {
    EXPECT_TRUE(verdict_of(result, other)->passed) << other;
    EXPECT_EQ(result.reason.find(std::string(other) + ":"), std::string::npos) << result.reason;
  }
}

TEST(CheckOutputs, AnInfiniteOutputFails) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  Outputs out = poisoned_outputs(c.p, ElementType::f32);
  write_oracle(c.p, c.oracle, out);
  out.d_q.set(q_index(c.p, 0, 12, 3, 0), kInfinity);
  const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "failed");
  EXPECT_EQ(verdict_of(result, "dQ")->error.inf, 1u);
  EXPECT_NE(result.reason.find("dQ: 1 infinite"), std::string::npos) << result.reason;
}

TEST(CheckOutputs, OnePerturbedElementFailsBeyondTheBoundAndPassesWithinIt) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  for (const char* tensor : {"O", "dK", "dV", "LSE"}) {
    SCOPED_TRACE(tensor);
    Outputs out = poisoned_outputs(c.p, ElementType::f32);
    write_oracle(c.p, c.oracle, out);
    const std::string name = tensor;
    OwnedBuffer& buffer = name == "O" ? out.out : name == "dK" ? out.d_k : name == "dV" ? out.d_v : out.lse;
    const std::int64_t at = name == "O"     ? q_index(c.p, 1, 4, 3, 5)
                            : name == "LSE" ? lse_index(c.p, 1, 2, 6)
                                            : kv_index(c.p, 1, 8, 0, 7);
    const double original = buffer.at(at);

    AccuracyResult clean = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
    ASSERT_EQ(clean.status, "passed") << clean.reason;
    const double bound = verdict_of(clean, name)->bound;
    EXPECT_DOUBLE_EQ(bound, 1e-4 * std::max(1.0, verdict_of(clean, name)->error.oracle_max_abs));

    buffer.set(at, original + 0.5 * bound);
    AccuracyResult within = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
    EXPECT_EQ(within.status, "passed") << within.reason;
    EXPECT_NEAR(verdict_of(within, name)->error.max_abs_error, 0.5 * bound, 0.01 * bound);

    buffer.set(at, original + 3.0 * bound);
    AccuracyResult beyond = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
    EXPECT_EQ(beyond.status, "failed");
    EXPECT_FALSE(verdict_of(beyond, name)->passed);
    EXPECT_NEAR(verdict_of(beyond, name)->error.max_abs_error, 3.0 * bound, 0.01 * bound);
    EXPECT_EQ(beyond.reason.rfind(name + ": max abs error", 0), 0u) << beyond.reason;
    for (const auto& verdict : beyond.tensors) {
      if (verdict.tensor != name) {
        EXPECT_TRUE(verdict.passed) << verdict.tensor;
      }
    }
  }
}

// Fully masked rows: a (0, 0) window, top-left, with more query rows than keys,
// leaves rows 9.. with no visible key (oracle LSE -inf).
Problem problem_with_empty_rows() {
  Problem p = make_problem(1, 2, 2, 12, 9, 8);
  p.mask.window_left = 0;
  p.mask.window_right = 0;
  finish_problem(p);
  return p;
}

TEST(CheckOutputs, LseOfEmptyRowsMustBeMinusInfinityOnBothSides) {
  const AccuracySettings settings;
  Case c = make_case(problem_with_empty_rows(), settings);
  ASSERT_TRUE(c.plan.complete);
  ASSERT_EQ(c.oracle.lse[0][11], -kInfinity) << "row 11 sees no key";
  ASSERT_TRUE(std::isfinite(c.oracle.lse[0][3]));

  Outputs out = poisoned_outputs(c.p, ElementType::f32);
  write_oracle(c.p, c.oracle, out);
  const AccuracyResult exact = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(exact.status, "passed") << exact.reason;
  EXPECT_EQ(verdict_of(exact, "LSE")->error.checked, 2u * 12u);
  EXPECT_EQ(verdict_of(exact, "LSE")->error.infinity_mismatch, 0u);

  // -inf where the oracle is finite.
  out.lse.set(lse_index(c.p, 0, 0, 3), -kInfinity);
  AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "failed");
  EXPECT_EQ(verdict_of(result, "LSE")->error.infinity_mismatch, 1u);
  EXPECT_EQ(verdict_of(result, "LSE")->error.inf, 0u);
  EXPECT_FALSE(verdict_of(result, "LSE")->passed);
  EXPECT_NE(result.reason.find("LSE: 1 rows disagree on having a visible key"), std::string::npos)
      << result.reason;

  // Finite where the oracle is -inf.
  write_oracle(c.p, c.oracle, out);
  out.lse.set(lse_index(c.p, 0, 1, 11), 0.0);
  result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "failed");
  EXPECT_EQ(verdict_of(result, "LSE")->error.infinity_mismatch, 1u);
  EXPECT_FALSE(verdict_of(result, "LSE")->passed);
  EXPECT_NE(result.reason.find("LSE:"), std::string::npos) << result.reason;

  // +inf where the oracle is -inf is not a match either.
  write_oracle(c.p, c.oracle, out);
  out.lse.set(lse_index(c.p, 0, 1, 10), kInfinity);
  result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "failed");
  EXPECT_FALSE(verdict_of(result, "LSE")->passed);
}

TEST(CheckOutputs, PoisonedLseOfAnEmptyRowFailsAsNaNAndKeepsTheRecordFinite) {
  const AccuracySettings settings;
  Case c = make_case(problem_with_empty_rows(), settings);
  Outputs out = poisoned_outputs(c.p, ElementType::f32);
  write_oracle(c.p, c.oracle, out);
  out.lse.set(lse_index(c.p, 0, 1, 10), std::numeric_limits<double>::quiet_NaN());  // never written
  const AccuracyResult result = check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
  EXPECT_EQ(result.status, "failed");
  const TensorVerdict* lse = verdict_of(result, "LSE");
  EXPECT_EQ(lse->error.nan, 1u);
  EXPECT_FALSE(lse->passed);
  EXPECT_NE(result.reason.find("LSE: 1 NaN"), std::string::npos) << result.reason;
  // max |oracle| is over the finite oracle values: a -inf LSE does not make it
  // (or the bound derived from it) infinite.
  EXPECT_TRUE(std::isfinite(lse->error.oracle_max_abs)) << lse->error.oracle_max_abs;
  EXPECT_TRUE(std::isfinite(lse->bound)) << lse->bound;
  // The record as written to a results file (JSON has no infinity) still
  // satisfies the schema.
  const nlohmann::ordered_json written = nlohmann::ordered_json::parse(result.to_json().dump());
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(embedded_results_schema());
  const JsonSchema accuracy_schema(nlohmann::ordered_json{{"$defs", schema["$defs"]},
                                                          {"$ref", "#/$defs/accuracy"}});
  for (const auto& error : accuracy_schema.validate(written)) ADD_FAILURE() << format_error(error);
}

// ---- apply_baseline_rule ---------------------------------------------------------

// check_outputs on the oracle values in `type` buffers with `delta` added to one
// element of O.
AccuracyResult checked_with_error(const Case& c, ElementType type, double delta,
                                  const AccuracySettings& settings) {
  Outputs out = poisoned_outputs(c.p, type, type == ElementType::f64 ? ElementType::f64 : ElementType::f32);
  write_oracle(c.p, c.oracle, out);
  const std::int64_t at = q_index(c.p, 0, 5, 1, 2);
  out.out.set(at, out.out.at(at) + delta);
  return check_outputs(c.p, buffers_of(c.in, out), c.oracle, settings);
}

TEST(BaselineRule, FusedMayErrUpToTwiceTheBaseline) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  const double delta = 1e-5;  // well inside the fp32 bound, far above fp32 rounding
  AccuracyResult baseline = checked_with_error(c, ElementType::f32, delta, settings);
  ASSERT_EQ(baseline.status, "passed") << baseline.reason;

  AccuracyResult fused = checked_with_error(c, ElementType::f32, 1.5 * delta, settings);
  fused.baseline = "cpu.standard";
  ASSERT_EQ(fused.status, "passed") << fused.reason;
  apply_baseline_rule(fused, baseline, ElementType::f32, settings);
  EXPECT_TRUE(fused.rule_applied);
  EXPECT_EQ(fused.status, "passed") << fused.reason;
  const TensorVerdict* o = verdict_of(fused, "O");
  ASSERT_TRUE(o->rule_limit.has_value());
  const double floor = settings.floor_factor * AccuracySettings::kAccumulationRoundoffs *
                       unit_roundoff(ElementType::f32) * o->error.oracle_max_abs;
  EXPECT_DOUBLE_EQ(*o->rule_limit, 2.0 * verdict_of(baseline, "O")->error.max_abs_error + floor);
  for (const auto& verdict : fused.tensors) EXPECT_TRUE(verdict.rule_limit.has_value()) << verdict.tensor;

  AccuracyResult worse = checked_with_error(c, ElementType::f32, 3.0 * delta, settings);
  worse.baseline = "cpu.standard";
  ASSERT_EQ(worse.status, "passed") << "within the per-dtype bound on its own";
  apply_baseline_rule(worse, baseline, ElementType::f32, settings);
  EXPECT_EQ(worse.status, "failed");
  EXPECT_FALSE(verdict_of(worse, "O")->passed);
  EXPECT_NE(worse.reason.find("O: max abs error"), std::string::npos) << worse.reason;
  EXPECT_NE(worse.reason.find("cpu.standard"), std::string::npos) << worse.reason;
  for (const char* other : {"LSE", "dQ", "dK", "dV"}) EXPECT_TRUE(verdict_of(worse, other)->passed) << other;
}

TEST(BaselineRule, TheFloorCoversAnExactBaseline) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  // The baseline is exact (fp64 buffers): every error is 0.
  const AccuracyResult baseline = checked_with_error(c, ElementType::f64, 0.0, settings);
  for (const auto& verdict : baseline.tensors) ASSERT_EQ(verdict.error.max_abs_error, 0.0) << verdict.tensor;

  // The fused result is the oracle rounded to fp32: an error of at most one unit
  // roundoff of each value, within the floor.
  AccuracyResult fused = checked_with_error(c, ElementType::f32, 0.0, settings);
  fused.baseline = "cpu.standard";
  ASSERT_GT(verdict_of(fused, "O")->error.max_abs_error, 0.0);
  apply_baseline_rule(fused, baseline, ElementType::f32, settings);
  EXPECT_EQ(fused.status, "passed") << fused.reason;

  // Without the floor the same rounding fails the rule.
  AccuracySettings no_floor = settings;
  no_floor.floor_factor = 0.0;
  AccuracyResult strict = checked_with_error(c, ElementType::f32, 0.0, settings);
  strict.baseline = "cpu.standard";
  apply_baseline_rule(strict, baseline, ElementType::f32, no_floor);
  EXPECT_EQ(strict.status, "failed");
  EXPECT_NE(strict.reason.find("cpu.standard"), std::string::npos) << strict.reason;
}

TEST(BaselineRule, AnErrorBeyondTheFloorFailsAgainstAnExactBaseline) {
  AccuracySettings settings;
  settings.bound[ElementType::f64] = 1e-4;  // judge the fp64 buffers by the rule alone
  Case c = make_case(small_gqa_problem(), settings);
  const AccuracyResult baseline = checked_with_error(c, ElementType::f64, 0.0, settings);
  const double o_max = verdict_of(baseline, "O")->error.oracle_max_abs;
  // fp32 outputs: the floor is kAccumulationRoundoffs fp32 unit roundoffs per unit of magnitude.
  const double floor = settings.floor_factor * AccuracySettings::kAccumulationRoundoffs *
                       unit_roundoff(ElementType::f32) * o_max;

  AccuracyResult inside = checked_with_error(c, ElementType::f64, 0.5 * floor, settings);
  apply_baseline_rule(inside, baseline, ElementType::f32, settings);
  EXPECT_EQ(inside.status, "passed") << inside.reason;
  EXPECT_DOUBLE_EQ(*verdict_of(inside, "O")->rule_limit, floor);

  AccuracyResult outside = checked_with_error(c, ElementType::f64, 1.5 * floor, settings);
  outside.baseline = "cpu.standard";
  ASSERT_EQ(outside.status, "passed");
  apply_baseline_rule(outside, baseline, ElementType::f32, settings);
  EXPECT_EQ(outside.status, "failed");
  EXPECT_NE(outside.reason.find("O: max abs error"), std::string::npos) << outside.reason;
}

// A gradient that is exactly zero (each row sees one key, so dS = P·(dP - D) =
// 0) comes out of both implementations as fp32 rounding noise; the floor is in
// units of max(1, max |oracle|), as the per-dtype bound's, so noise far below
// the output type's resolution is never judged against the other's noise.
TEST(BaselineRule, TheFloorHoldsForATensorWhoseOracleIsZero) {
  const AccuracySettings settings;
  const auto result_with = [](double max_abs_error) {
    AccuracyResult result;
    TensorVerdict verdict;
    verdict.tensor = "dQ";
    verdict.error.checked = 512;
    verdict.error.max_abs_error = max_abs_error;
    verdict.error.oracle_max_abs = 1e-16;
    verdict.passed = true;
    result.tensors.push_back(verdict);
    result.baseline = "cpu.standard";
    return result;
  };
  const AccuracyResult baseline = result_with(1.2e-7);
  AccuracyResult fused = result_with(4.2e-7);
  apply_baseline_rule(fused, baseline, ElementType::f16, settings);
  EXPECT_EQ(fused.status, "passed") << fused.reason;
  EXPECT_DOUBLE_EQ(*verdict_of(fused, "dQ")->rule_limit, 2 * 1.2e-7 + settings.floor_factor * unit_roundoff(ElementType::f16));

  AccuracyResult far = result_with(5e-3);  // within the fp16 bound of 1e-2, beyond twice the baseline and the floor
  apply_baseline_rule(far, baseline, ElementType::f16, settings);
  EXPECT_EQ(far.status, "failed");
}

TEST(BaselineRule, AnUncleanBaselineTensorSetsNoLimit) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  const AccuracyResult baseline =
      checked_with_error(c, ElementType::f32, std::numeric_limits<double>::quiet_NaN(), settings);
  ASSERT_EQ(verdict_of(baseline, "O")->error.nan, 1u);
  AccuracyResult fused = checked_with_error(c, ElementType::f32, 1e-5, settings);
  apply_baseline_rule(fused, baseline, ElementType::f32, settings);
  EXPECT_FALSE(verdict_of(fused, "O")->rule_limit.has_value());
  EXPECT_TRUE(verdict_of(fused, "dQ")->rule_limit.has_value());
  EXPECT_EQ(fused.status, "passed") << fused.reason;
}

// ---- to_json ------------------------------------------------------------------

TEST(AccuracyResultJson, HasTheKeysTheResultsSchemaRequires) {
  const AccuracySettings settings;
  Case c = make_case(small_gqa_problem(), settings);
  AccuracyResult result = checked_with_error(c, ElementType::f32, 1e-5, settings);
  const AccuracyResult baseline = checked_with_error(c, ElementType::f32, 1e-5, settings);
  result.baseline = "cpu.standard";
  apply_baseline_rule(result, baseline, ElementType::f32, settings);

  const nlohmann::ordered_json json = result.to_json();
  for (const char* key : {"status", "reason", "oracle", "sample", "baseline", "rule_applied", "tensors"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json["status"], "passed");
  EXPECT_EQ(json["oracle"], "cpu.reference");
  EXPECT_EQ(json["baseline"], "cpu.standard");
  EXPECT_EQ(json["rule_applied"], true);
  EXPECT_EQ(json["sample"], c.plan.describe());
  ASSERT_EQ(json["tensors"].size(), 5u);
  for (const char* tensor : {"O", "LSE", "dQ", "dK", "dV"}) {
    SCOPED_TRACE(tensor);
    ASSERT_TRUE(json["tensors"].contains(tensor));
    const auto& entry = json["tensors"][tensor];
    for (const char* key : {"checked", "max_abs_error", "mean_abs_error", "relative_l2_error",
                            "oracle_max_abs", "nan", "inf", "infinity_mismatch", "bound", "rule_limit",
                            "passed"}) {
      EXPECT_TRUE(entry.contains(key)) << key;
    }
    EXPECT_EQ(entry["checked"], verdict_of(result, tensor)->error.checked);
    EXPECT_EQ(entry["max_abs_error"], verdict_of(result, tensor)->error.max_abs_error);
    EXPECT_TRUE(entry["rule_limit"].is_number());
    EXPECT_EQ(entry["passed"], true);
  }

  // Without a baseline: baseline and rule limits are null.
  const AccuracyResult plain = checked_with_error(c, ElementType::f32, 0.0, settings);
  const nlohmann::ordered_json plain_json = plain.to_json();
  EXPECT_TRUE(plain_json["baseline"].is_null());
  EXPECT_EQ(plain_json["rule_applied"], false);
  EXPECT_TRUE(plain_json["tensors"]["O"]["rule_limit"].is_null());

  // Both validate against the accuracy part of the results schema.
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(embedded_results_schema());
  const JsonSchema accuracy_schema(nlohmann::ordered_json{{"$defs", schema["$defs"]},
                                                          {"$ref", "#/$defs/accuracy"}});
  for (const auto* document : {&json, &plain_json}) {
    const auto errors = accuracy_schema.validate(*document);
    for (const auto& error : errors) ADD_FAILURE() << format_error(error);
  }
  // The validator is not vacuous: a missing key is an error.
  nlohmann::ordered_json broken = json;
  broken["tensors"]["O"].erase("nan");
  EXPECT_FALSE(accuracy_schema.validate(broken).empty());
}

}  // namespace
}  // namespace attnbench::test
