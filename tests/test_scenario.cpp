// Scenario files: parsing with comments, defaults and layering, sweeps, explicit
// cases, shorthands, and the diagnostics for malformed or impossible files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/scenario.hpp"

namespace attnbench {
namespace {

Scenario parse_ok(const std::string& text) {
  std::vector<Diagnostic> diagnostics;
  Scenario scenario = parse_scenario(text, "test.json", diagnostics);
  std::string all;
  for (const auto& d : diagnostics) all += d.format() + "\n";
  EXPECT_TRUE(diagnostics.empty()) << all;
  return scenario;
}

std::vector<Diagnostic> parse_errors(const std::string& text) {
  std::vector<Diagnostic> diagnostics;
  parse_scenario(text, "bad.json", diagnostics);
  for (const auto& d : diagnostics) EXPECT_EQ(d.file, "bad.json");
  return diagnostics;
}

bool has_error(const std::vector<Diagnostic>& diagnostics, const std::string& path, const std::string& fragment) {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [&](const Diagnostic& d) {
    return d.path == path && d.message.find(fragment) != std::string::npos;
  });
}

std::string dump(const std::vector<Diagnostic>& diagnostics) {
  std::string all;
  for (const auto& d : diagnostics) all += d.format() + "\n";
  return all;
}

const char* kMinimal = R"({"name": "t", "description": "d", "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8}})";

TEST(Scenario, DefaultsGiveOneCaseWithDocumentedDefaults) {
  const Scenario s = parse_ok(kMinimal);
  ASSERT_EQ(s.cases.size(), 1u);
  const Problem& p = s.cases[0].problem;
  EXPECT_EQ(p.kv_heads, 2);
  EXPECT_EQ(p.seqlen_q, 16);
  EXPECT_EQ(p.seqlen_k, 16);
  EXPECT_EQ(p.dtype, InputDType::fp16);
  EXPECT_EQ(p.layout, Layout::bshd);
  EXPECT_EQ(p.direction, Direction::fwd);
  EXPECT_FALSE(p.mask.causal);
  EXPECT_TRUE(p.mask.bottom_right);
  EXPECT_EQ(p.dropout.probability, 0.0);
  EXPECT_EQ(p.input.distribution, Distribution::normal);
  EXPECT_TRUE(p.lengths_q.empty()) << "no padding: the lengths are derived, not stored";
  EXPECT_EQ(p.length_q(0), 16);
  EXPECT_EQ(s.cases[0].origin, "defaults");
}

TEST(Scenario, CommentsAreAllowed) {
  const Scenario s = parse_ok(R"(// leading comment
    {"name": "t", /* inline */ "description": "d",
     "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8}  // trailing
    })");
  EXPECT_EQ(s.cases.size(), 1u);
}

TEST(Scenario, SweepIsTheCartesianProductFirstAxisOutermost) {
  const Scenario s = parse_ok(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 8},
    "sweep": {"seqlen": [16, 32, 64], "causal": [false, true]}})");
  ASSERT_EQ(s.cases.size(), 6u);
  const std::int64_t lengths[] = {16, 16, 32, 32, 64, 64};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(s.cases[i].problem.seqlen_q, lengths[i]);
    EXPECT_EQ(s.cases[i].problem.mask.causal, i % 2 == 1);
  }
  EXPECT_EQ(s.cases[3].origin, "sweep{seqlen=32, causal=true}");
}

TEST(Scenario, CasesAreCrossedWithTheSweepAndLayerOverDefaults) {
  const Scenario s = parse_ok(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 8, "dtype": "bf16"},
    "cases": [{"direction": "fwd"}, {"direction": "bwd", "dtype": "fp16"}],
    "sweep": {"seqlen": [16, 32]}})");
  ASSERT_EQ(s.cases.size(), 4u);
  EXPECT_EQ(s.cases[0].problem.dtype, InputDType::bf16);
  EXPECT_EQ(s.cases[2].problem.direction, Direction::bwd);
  EXPECT_EQ(s.cases[2].problem.dtype, InputDType::fp16);
  EXPECT_EQ(s.cases[3].origin, "cases[1] x sweep{seqlen=32}");
}

TEST(Scenario, TokensAndHiddenDeriveBatchAndHeads) {
  // The FlashAttention-2 grid: 16k tokens, hidden 2048.
  const Scenario s = parse_ok(R"({"name": "t", "description": "d",
    "defaults": {"tokens": 16384, "hidden": 2048},
    "sweep": {"seqlen": [512, 16384], "head_dim": [64, 128]}})");
  ASSERT_EQ(s.cases.size(), 4u);
  EXPECT_EQ(s.cases[0].problem.batch, 32);
  EXPECT_EQ(s.cases[0].problem.heads, 32);
  EXPECT_EQ(s.cases[1].problem.heads, 16);
  EXPECT_EQ(s.cases[3].problem.batch, 1);
}

TEST(Scenario, LaterLayersReplaceShorthandFamilies) {
  const Scenario s = parse_ok(R"({"name": "t", "description": "d",
    "defaults": {"tokens": 64, "heads": 2, "head_dim": 8, "seqlen_q": 16, "seqlen_k": 32},
    "cases": [{"batch": 3}, {"seqlen": 8}, {"seqlen_k": 4}]})");
  ASSERT_EQ(s.cases.size(), 3u);
  EXPECT_EQ(s.cases[0].problem.batch, 3);      // batch replaces tokens
  EXPECT_EQ(s.cases[1].problem.batch, 8);      // 64 tokens / seqlen 8
  EXPECT_EQ(s.cases[1].problem.seqlen_k, 8);   // seqlen sets both
  EXPECT_EQ(s.cases[2].problem.seqlen_q, 16);  // seqlen_k leaves seqlen_q alone
  EXPECT_EQ(s.cases[2].problem.seqlen_k, 4);
}

TEST(Scenario, MasksPaddingDropoutInputAndSettingsParse) {
  const Scenario s = parse_ok(R"({"name": "t", "description": "d",
    "defaults": {"batch": 2, "heads": 2, "seqlen": 40, "head_dim": 8},
    "cases": [
      {"causal": true, "align": "top_left", "window": [5, -1]},
      {"padding": {"lengths": [40, 3]}, "dropout": 0.25},
      {"padding": {"lengths_q": [4, 5], "lengths_k": [6, 7]}, "dropout": {"p": 0.5, "seed": 9, "offset": 3}},
      {"padding": {"shortfall": [0, 20], "seed": 3}, "input": {"distribution": "uniform", "low": -2, "high": 2, "seed": 5}},
      {"scale": 0.5, "block_q": 16, "block_k": 32, "layout": "bhsd"}
    ],
    "implementations": ["cpu.flash"],
    "measure": {"min_samples": 3, "max_samples": 9, "cache": "hot", "target_ci_width": 0.05},
    "accuracy": {"max_oracle_macs": 1e6, "seed": 4, "bound": {"fp32": 1e-3}}})");
  ASSERT_EQ(s.cases.size(), 5u);
  const Problem& a = s.cases[0].problem;
  EXPECT_TRUE(a.mask.causal);
  EXPECT_FALSE(a.mask.bottom_right);
  EXPECT_EQ(a.mask.window_left, 5);
  EXPECT_EQ(a.mask.window_right, -1);
  EXPECT_EQ(s.cases[1].problem.lengths_k, (std::vector<std::int64_t>{40, 3}));
  EXPECT_DOUBLE_EQ(s.cases[1].problem.dropout.probability, 0.25);
  EXPECT_EQ(s.cases[2].problem.lengths_q, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(s.cases[2].problem.dropout.seed, 9u);
  EXPECT_EQ(s.cases[2].problem.dropout.offset, 3u);
  EXPECT_EQ(s.cases[3].problem.padding.kind, PaddingSpec::Kind::random);
  EXPECT_EQ(s.cases[3].problem.input.distribution, Distribution::uniform);
  EXPECT_DOUBLE_EQ(s.cases[3].problem.input.a, -2.0);
  EXPECT_DOUBLE_EQ(*s.cases[4].problem.scale, 0.5);
  EXPECT_EQ(s.cases[4].problem.tile.block_k, 32);
  EXPECT_EQ(s.implementations, std::vector<std::string>{"cpu.flash"});
  EXPECT_EQ(s.measure.min_samples, 3);
  EXPECT_FALSE(s.measure.cold_cache);
  EXPECT_DOUBLE_EQ(s.accuracy.max_oracle_macs, 1e6);
  EXPECT_DOUBLE_EQ(s.accuracy.bound.at(ElementType::f32), 1e-3);
  EXPECT_DOUBLE_EQ(s.accuracy.bound.at(ElementType::f16), 1e-2);  // untouched default
}

TEST(ScenarioErrors, UnknownKeysAreErrorsWithASuggestion) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "hed_dim": 8}})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].path, "defaults.hed_dim");
  EXPECT_NE(errors[0].message.find("unknown key"), std::string::npos);
  EXPECT_NE(errors[0].message.find("did you mean \"head_dim\""), std::string::npos);
}

TEST(ScenarioErrors, EveryProblemIsReportedAtOnceWithAllowedValues) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 0, "heads": 2, "seqlen": 16, "head_dim": 8, "dtype": "fp8"},
    "sweep": {"seqlen": [16, "1k"]},
    "measure": {"cache": "lukewarm", "min_samples": 0}})");
  EXPECT_TRUE(has_error(errors, "defaults.batch", "must be >= 1")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "defaults.dtype", "allowed values: \"fp16\", \"bf16\"")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "sweep.seqlen[1]", "expected an integer")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "measure.cache", "\"cold\", \"hot\"")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "measure.min_samples", "must be >= 1")) << dump(errors);
  EXPECT_EQ(errors.size(), 5u) << dump(errors);
}

TEST(ScenarioErrors, MissingRequiredKeysAreNamed) {
  const auto top = parse_errors(R"({"name": "t"})");
  EXPECT_TRUE(has_error(top, "", "missing required key \"description\"")) << dump(top);
  const auto errors = parse_errors(R"({"name": "t", "description": "d", "defaults": {"batch": 1, "heads": 2, "seqlen": 8}})");
  EXPECT_TRUE(has_error(errors, "defaults", "missing \"head_dim\"")) << dump(errors);
}

TEST(ScenarioErrors, BadJsonNamesTheLine) {
  const auto errors = parse_errors("{\"name\": \"t\",\n  \"description\": \"d\",\n  oops\n}");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("line 3"), std::string::npos) << errors[0].message;
}

TEST(ScenarioErrors, DuplicateKeysAreRefused) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8, "head_dim": 16}})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].path, "defaults.head_dim");
  EXPECT_NE(errors[0].message.find("twice"), std::string::npos);
}

TEST(ScenarioErrors, SemanticErrorsPointAtTheKeyThatCausedThem) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 2, "heads": 6, "seqlen": 16, "head_dim": 8},
    "cases": [
      {"kv_heads": 4},
      {"padding": {"lengths": [16, 17]}},
      {"padding": {"lengths": [1, 2, 3]}},
      {"tokens": 100},
      {"window": [-1, -1]},
      {"padding": {"lengths": [1, 1], "shortfall": [0, 2]}},
      {"input": {"distribution": "uniform", "mean": 1}}
    ]})");
  EXPECT_TRUE(has_error(errors, "cases[0].kv_heads", "must divide heads")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[1].padding.lengths[1]", "must be in [0, 16]")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[2].padding.lengths", "one length per batch element")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[3].tokens", "not a multiple of seqlen_q")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[4].window", "use null")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[5].padding", "exactly one of")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[6].input.mean", "does not apply")) << dump(errors);
}

TEST(ScenarioErrors, SchemaErrorsInOneCaseDoNotHideSemanticErrorsInOthers) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 6, "seqlen": 9, "head_dim": 8},
    "cases": [{"kv_heads": 4}, {"dtype": "fp8"}, {"tokens": 7}],
    "measure": {"cache": "warm"}, "implementations": ["cpu.nope"]})");
  EXPECT_TRUE(has_error(errors, "cases[1].dtype", "not allowed")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "measure.cache", "not allowed")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[0].kv_heads", "must divide heads")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[2].tokens", "not a multiple")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "implementations[0]", "unknown implementation")) << dump(errors);
  EXPECT_EQ(errors.size(), 5u) << dump(errors);
}

TEST(ScenarioErrors, ImpossibleOrUnrepresentableValuesAreRefused) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8},
    "cases": [
      {"batch": 18446744073709551615},
      {"seqlen": 1e30},
      {"window": [0, 9223372036854775807]},
      {"input": {"mean": 1e5}},
      {"dtype": "bf16", "input": {"distribution": "uniform", "low": -1e30, "high": 1e30}},
      {"scale": 1e300}
    ],
    "measure": {"warmup_min_iterations": 3000000000}})");
  EXPECT_TRUE(has_error(errors, "cases[0].batch", "must be <= 1048576")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[1].seqlen", "must be <= 16777216")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[2].window[1]", "must be <=")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[3].input", "beyond the largest finite fp16")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[4].input", "would overflow fp32")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[5].scale", "must be <=")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "measure.warmup_min_iterations", "must be <=")) << dump(errors);
}

TEST(ScenarioErrors, TokensAndHiddenAreCheckedAgainstTheLimitsOfWhatTheyStandFor) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"heads": 1, "seqlen": 1, "head_dim": 1},
    "cases": [{"tokens": 1099511627776}, {"tokens": 1048576}, {"tokens": 4, "hidden": 16777216}]})");
  EXPECT_TRUE(has_error(errors, "cases[0].tokens",
                        "gives batch = tokens / seqlen_q = 1099511627776 / 1 = 1099511627776, more than the 1048576 "
                        "(2^20) allowed"))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[2].hidden", "gives heads = hidden / head_dim = 16777216, more than the 65536"))
      << dump(errors);
  EXPECT_EQ(errors.size(), 2u) << "batch 2^20 itself is allowed: " << dump(errors);
  EXPECT_EQ(errors[0].context, "in cases[0]");
}

TEST(ScenarioErrors, TheSameProblemInEveryCaseIsReportedOnceWithACount) {
  std::vector<Diagnostic> diagnostics;
  parse_scenario(R"({"name": "t", "description": "d", "defaults": {"batch": 1, "heads": 6, "kv_heads": 4, "head_dim": 8},
    "sweep": {"seqlen": [1, 2, 3, 4, 5]}})", "bad.json", diagnostics);
  const InputError error(diagnostics);
  ASSERT_EQ(error.diagnostics().size(), 1u) << error.what();
  EXPECT_EQ(error.diagnostics()[0].format(),
            "bad.json: defaults.kv_heads: must divide heads (6), got 4 (in all 5 cases)");
}

TEST(ScenarioErrors, ExplicitLengthsOverAllCasesAreBounded) {
  std::string lengths = "1";
  for (int i = 1; i < 300000; ++i) lengths += ",1";
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 300000, "heads": 1, "head_dim": 1, "padding": {"lengths": [)" + lengths + R"(]}},
    "sweep": {"seqlen": [2, 3, 4, 5]}})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].path, "defaults.padding");
  EXPECT_NE(errors[0].message.find("more than 1048576 explicit padding lengths in all"), std::string::npos);
  EXPECT_EQ(errors[0].context, "at sweep{seqlen=5}");
}

TEST(ScenarioErrors, LongSweepValuesAreShortInTheCaseOrigin) {
  std::string lengths = "3";
  for (int i = 1; i < 1000; ++i) lengths += ",3";
  const Scenario s = parse_ok(R"({"name": "t", "description": "d", "defaults": {"batch": 1000, "heads": 1, "seqlen": 4, "head_dim": 1},
    "sweep": {"padding": [{"lengths": [)" + lengths + R"(]}]}})");
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_LT(s.cases[0].origin.size(), 80u) << s.cases[0].origin;
  EXPECT_EQ(s.cases[0].origin.rfind("sweep{padding={\"lengths\":[3,3,", 0), 0u) << s.cases[0].origin;
}

TEST(Scenario, CasesHoldNoPerElementArraysUntilTheyRun) {
  const Scenario s = parse_ok(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1048576, "heads": 1, "head_dim": 1},
    "cases": [{}, {"padding": {"shortfall": [0, 3], "seed": 2}}],
    "sweep": {"seqlen": [8, 16]}})");
  ASSERT_EQ(s.cases.size(), 4u);
  for (const ScenarioCase& c : s.cases) {
    EXPECT_TRUE(c.problem.lengths_q.empty());
    EXPECT_TRUE(c.problem.lengths_k.empty());
  }
  const Problem& random = s.cases[2].problem;
  EXPECT_EQ(random.padding.kind, PaddingSpec::Kind::random);
  Problem resolved = random;
  resolve_lengths(resolved);
  ASSERT_EQ(resolved.lengths_q.size(), 1048576u);
  for (const std::int64_t b : {0, 1, 77, 1048575}) {
    EXPECT_EQ(random.length_q(b), resolved.lengths_q[static_cast<std::size_t>(b)]);
    EXPECT_EQ(random.length_k(b), resolved.lengths_k[static_cast<std::size_t>(b)]);
  }
}

TEST(ScenarioErrors, DeepNestingLongNamesAndHugeNumbersAreInputErrors) {
  const auto deep = parse_errors(std::string(10000, '[') + std::string(10000, ']'));
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_NE(deep[0].message.find("nested more than"), std::string::npos);
  const auto huge = parse_errors(R"({"name": "t", "description": "d", "defaults": {"scale": 1e400}})");
  ASSERT_EQ(huge.size(), 1u);
  EXPECT_NE(huge[0].message.find("not valid JSON"), std::string::npos) << huge[0].message;
  const auto long_name = parse_errors(R"({"name": ")" + std::string(100000, 'a') + R"(", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8}})");
  EXPECT_TRUE(has_error(long_name, "name", "at most 64 characters")) << dump(long_name);
}

TEST(ScenarioErrors, ConflictsAndDuplicatesAreRefused) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8},
    "cases": [{"seqlen_q": 8}, {"causal": true}, {"causal": true}, {"seqlen": 4, "seqlen_k": 5}],
    "sweep": {"seqlen": [16]}})");
  EXPECT_TRUE(has_error(errors, "cases[0].seqlen_q", "conflicts with the sweep axis \"seqlen\"")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[3].seqlen", "cannot both be set")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[2] x sweep{seqlen=16}", "same case as cases[1]")) << dump(errors);
}

TEST(ScenarioErrors, ASweepAxisThatRepeatsValuesIsReportedOnceNamingTheAxis) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 8},
    "sweep": {"seqlen": [16, 32], "causal": [false, true, false, true, false]}})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_TRUE(has_error(errors, "sweep.causal", "repeats 3 values (first: [2] is false, as [0]); list each value once"))
      << dump(errors);
}

TEST(ScenarioErrors, PublishedValuesMustSelectACaseAndNameKnownFields) {
  const std::string head = R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 8}, "sweep": {"seqlen": [16, 32]},
    "published": [{"label": "FlashAttention", "source": "paper", "quantity": "runtime", "unit": "ms", "values": )";
  const auto errors = parse_errors(head + R"([{"where": {"seqlen": 16}, "value": 1.0},
                                              {"where": {"seqlen": 64}, "value": 2.0}]}]})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_TRUE(has_error(errors, "published[0].values[1].where", "selects no case of the scenario")) << dump(errors);
  const auto misspelt = parse_errors(head + R"([{"where": {"seq_len": 16}, "value": 3.0}]}]})");
  EXPECT_TRUE(has_error(misspelt, "published[0].values[0].where.seq_len", "(did you mean \"seqlen\"?)"))
      << dump(misspelt);
}

TEST(ScenarioErrors, UnknownImplementationsListTheKnownOnes) {
  const auto errors = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8},
    "implementations": ["cpu.flash", "cpu.flsh"]})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].path, "implementations[1]");
  EXPECT_NE(errors[0].message.find("known: cpu.flash, cpu.reference, cpu.standard"), std::string::npos);
}

TEST(ScenarioErrors, MissingFilesAndDuplicateNamesAcrossFiles) {
  const std::string path = ::testing::TempDir() + "/attnbench_scenario_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << kMinimal;
  std::vector<Diagnostic> diagnostics;
  try {
    load_scenarios({path, "/nonexistent/scenario.json", path});
  } catch (const InputError& error) {
    diagnostics = error.diagnostics();
  }
  std::remove(path.c_str());
  ASSERT_EQ(diagnostics.size(), 2u) << "expected an InputError with two diagnostics";
  EXPECT_EQ(diagnostics[0].file, "/nonexistent/scenario.json");
  EXPECT_NE(diagnostics[0].message.find("cannot read"), std::string::npos);
  EXPECT_NE(diagnostics[1].message.find("also used by"), std::string::npos);
}

TEST(ScenarioErrors, AProblemOfEveryCaseFromOneKeyIsReportedOnceAtThatKey) {
  const auto all = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 4, "kv_heads": 3, "seqlen": 16, "head_dim": 8},
    "cases": [{"direction": "fwd"}, {"direction": "bwd"}, {"direction": "fwd+bwd"}],
    "sweep": {"causal": [false, true]}})");
  ASSERT_EQ(all.size(), 1u) << dump(all);
  EXPECT_EQ(all[0].path, "defaults.kv_heads");
  EXPECT_EQ(all[0].message, "must divide heads (4), got 3 (in all 6 cases)");

  // Where some cases override it, the others are named.
  const auto some = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 4, "kv_heads": 3, "seqlen": 16, "head_dim": 8},
    "cases": [{"kv_heads": 2}, {"direction": "bwd"}, {"heads": 6}, {"direction": "fwd+bwd"}, {"causal": true},
              {"layout": "bhsd"}]})");
  ASSERT_EQ(some.size(), 1u) << dump(some);
  EXPECT_EQ(some[0].message, "must divide heads (4), got 3 (in cases[1], cases[3], cases[4] and 1 more case)");

  // One case alone: nothing to say where.
  const auto one = parse_errors(R"({"name": "t", "description": "d",
    "defaults": {"batch": 1, "heads": 4, "kv_heads": 3, "seqlen": 16, "head_dim": 8}})");
  ASSERT_EQ(one.size(), 1u) << dump(one);
  EXPECT_EQ(one[0].message, "must divide heads (4), got 3");
}

TEST(ScenarioErrors, ASchemaErrorHoldsBackOnlyTheCasesThatTakeTheValue) {
  const auto errors = parse_errors(R"({"description": "d",
    "defaults": {"batch": 1, "heads": 4, "seqlen": 16, "head_dim": 8, "dtype": "fp8"},
    "cases": [{"dtype": "fp16", "kv_heads": 3}, {"direction": "bwd"}, {"dtype": "bf16", "window": [-1, -1]}],
    "sweep": {"head_dim": [8, "x"]}})");
  EXPECT_TRUE(has_error(errors, "", "missing required key \"name\"")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "defaults.dtype", "not allowed")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "sweep.head_dim[1]", "expected an integer")) << dump(errors);
  // cases[0] and cases[2] set their own dtype, so their semantic errors show at once
  // (on the sound sweep point only); cases[1] takes the broken dtype and waits.
  EXPECT_TRUE(has_error(errors, "cases[0].kv_heads", "must divide heads (4), got 3")) << dump(errors);
  EXPECT_TRUE(has_error(errors, "cases[2].window", "use null")) << dump(errors);
  EXPECT_EQ(errors.size(), 5u) << dump(errors);
}

TEST(ScenarioErrors, AJsonSchemaIsRecognisedAndNotCheckedAsAScenario) {
  const auto errors = parse_errors(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "properties": {}})");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].path, "$schema");
  EXPECT_NE(errors[0].message.find("is a JSON Schema"), std::string::npos);

  const std::string path = ::testing::TempDir() + "/attnbench_schema_" + std::to_string(getpid()) + ".json";
  const std::string good = ::testing::TempDir() + "/attnbench_good_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << R"({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})";
  std::ofstream(good) << kMinimal;
  const std::vector<ScenarioFile> files = load_scenario_files({path, good});
  std::remove(path.c_str());
  std::remove(good.c_str());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_TRUE(files[0].json_schema);
  EXPECT_FALSE(files[0].problems.empty());
  EXPECT_FALSE(files[1].json_schema);
  EXPECT_TRUE(files[1].problems.empty()) << "a sound file is sound whatever the others hold";
  EXPECT_FALSE(files[1].scenario.cases.empty());
}

TEST(ScenarioSchema, ShippedScenariosValidateAndExpand) {
  for (const char* name : {"quick.json", "edge_cases.json"}) {
    const auto scenarios = load_scenarios({std::string(ATTNBENCH_SOURCE_DIR) + "/scenarios/" + name});
    ASSERT_EQ(scenarios.size(), 1u);
    EXPECT_GT(scenarios[0].cases.size(), 3u);
  }
}

TEST(ScenarioSchema, QuickScenarioCoversWhatItPromises) {
  const Scenario s = load_scenarios({std::string(ATTNBENCH_SOURCE_DIR) + "/scenarios/quick.json"})[0];
  bool causal_tl = false, causal_br = false, window = false, padding = false, dropout = false, no_dropout = false,
       fwd = false, bwd = false, fwd_bwd = false, fp16 = false, bf16 = false, unequal = false, odd = false;
  for (const auto& c : s.cases) {
    const Problem& p = c.problem;
    causal_tl |= p.mask.causal && !p.mask.bottom_right;
    causal_br |= p.mask.causal && p.mask.bottom_right;
    window |= p.mask.window_left >= 0 || p.mask.window_right >= 0;
    padding |= p.padding.kind != PaddingSpec::Kind::none;
    dropout |= p.dropout.probability > 0;
    no_dropout |= p.dropout.probability == 0;
    fwd |= p.direction == Direction::fwd;
    bwd |= p.direction == Direction::bwd;
    fwd_bwd |= p.direction == Direction::fwd_bwd;
    fp16 |= p.dtype == InputDType::fp16;
    bf16 |= p.dtype == InputDType::bf16;
    unequal |= p.seqlen_q != p.seqlen_k;
    odd |= p.seqlen_q % 2 == 1 || p.seqlen_k % 2 == 1;
  }
  EXPECT_TRUE(causal_tl && causal_br && window && padding && dropout && no_dropout);
  EXPECT_TRUE(fwd && bwd && fwd_bwd && fp16 && bf16 && unequal && odd);
}

TEST(ScenarioSchema, TheSchemaItselfIsSupportedByTheValidator) {
  EXPECT_NO_THROW(JsonSchema{scenario_schema()});
}

}  // namespace
}  // namespace attnbench
