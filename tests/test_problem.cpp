// The problem model: exact visible-pair FLOP counts, the compulsory-bytes model,
// padding resolution, validation and case identity.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "harness/common/problem.hpp"

namespace attnbench {
namespace {

Problem make_problem(std::int64_t b, std::int64_t h, std::int64_t nq, std::int64_t nk, std::int64_t d) {
  Problem p;
  p.batch = b;
  p.heads = h;
  p.kv_heads = h;
  p.seqlen_q = nq;
  p.seqlen_k = nk;
  p.head_dim = d;
  resolve_lengths(p);
  return p;
}

TEST(Flops, DenseForwardIsFourNSquaredD) {
  const Problem p = make_problem(2, 3, 100, 80, 64);
  EXPECT_EQ(visible_pairs(p), 2 * 3 * 100 * 80);
  EXPECT_DOUBLE_EQ(flop_count(p).forward, 4.0 * 64 * 2 * 3 * 100 * 80);
}

TEST(Flops, CausalCountsTheTriangleIncludingTheDiagonal) {
  Problem p = make_problem(1, 1, 1024, 1024, 64);
  p.mask.causal = true;
  EXPECT_EQ(visible_pairs(p), 1024 * 1025 / 2);  // flash-attn's N^2/2 differs by N/2
}

TEST(Flops, BottomRightCausalWithMoreQueriesLeavesEarlyRowsEmpty) {
  Problem p = make_problem(1, 1, 10, 4, 8);
  p.mask.causal = true;
  p.mask.bottom_right = true;  // shift = -6: row i sees keys j <= i - 6
  EXPECT_EQ(visible_pairs(p), 1 + 2 + 3 + 4);
  p.mask.bottom_right = false;  // top-left: row i sees min(i + 1, 4) keys
  EXPECT_EQ(visible_pairs(p), 1 + 2 + 3 + 4 * 7);
}

TEST(Flops, WindowAndPaddingReduceTheCount) {
  Problem p = make_problem(2, 1, 50, 50, 16);
  p.mask.window_left = 3;
  p.mask.window_right = 1;
  // Rows see [i - 3, i + 1] clipped to [0, 50).
  std::int64_t per_batch = 0;
  for (std::int64_t i = 0; i < 50; ++i) per_batch += std::min<std::int64_t>(i + 1, 49) - std::max<std::int64_t>(i - 3, 0) + 1;
  EXPECT_EQ(visible_pairs(p), 2 * per_batch);

  Problem padded = make_problem(2, 1, 50, 50, 16);
  padded.padding.kind = PaddingSpec::Kind::explicit_lengths;
  padded.lengths_q = {50, 10};
  padded.lengths_k = {0, 20};
  EXPECT_EQ(visible_pairs(padded), 0 + 10 * 20);
}

TEST(Flops, CountingCostsOneRowLoopPerDistinctLengthsNotPerBatchElement) {
  // B x Nq = 2^40 rows: a per-row loop over every batch element would not finish.
  Problem p = make_problem(1 << 20, 1, 1 << 20, 1 << 20, 1);
  p.mask.causal = true;
  ASSERT_TRUE(check_problem(p).empty());
  const std::int64_t n = 1 << 20;
  EXPECT_EQ(visible_pairs(p), (std::int64_t{1} << 20) * (n * (n + 1) / 2));
}

TEST(Flops, DirectionsScaleTheForward) {
  Problem p = make_problem(1, 2, 64, 64, 32);
  p.direction = Direction::bwd;
  EXPECT_DOUBLE_EQ(flop_count(p).total, 2.5 * flop_count(p).forward);
  p.direction = Direction::fwd_bwd;
  EXPECT_DOUBLE_EQ(flop_count(p).total, 3.5 * flop_count(p).forward);
}

TEST(CompulsoryBytes, MatchesHandCounts) {
  Problem p = make_problem(2, 4, 128, 256, 64);
  p.kv_heads = 2;
  const double q = 2.0 * 128 * 4 * 64 * 2, kv = 2.0 * 256 * 2 * 64 * 2, lse = 2.0 * 4 * 128 * 4;
  ByteCount forward = compulsory_bytes(p);
  EXPECT_DOUBLE_EQ(forward.read, q + 2 * kv);
  EXPECT_DOUBLE_EQ(forward.write, q + lse);
  p.direction = Direction::bwd;
  const ByteCount backward = compulsory_bytes(p);
  EXPECT_DOUBLE_EQ(backward.read, 3 * q + 2 * kv + lse);
  EXPECT_DOUBLE_EQ(backward.write, q + 2 * kv);
  p.direction = Direction::fwd_bwd;
  EXPECT_DOUBLE_EQ(compulsory_bytes(p).total(), forward.total() + backward.total());
}

TEST(Geometry, LayoutsPlaceTheSameElementDifferently) {
  const TensorStrides bshd = strides_for(Layout::bshd, 10, 3, 8);
  const TensorStrides bhsd = strides_for(Layout::bhsd, 10, 3, 8);
  EXPECT_EQ(bshd.offset(1, 2, 1), 1 * 240 + 2 * 24 + 1 * 8);
  EXPECT_EQ(bhsd.offset(1, 2, 1), 1 * 240 + 1 * 80 + 2 * 8);
}

TEST(Padding, RandomLengthsAreSeededAndWithinTheShortfall) {
  Problem p = make_problem(64, 1, 100, 100, 8);
  p.padding = PaddingSpec{PaddingSpec::Kind::random, 0, 20, 5};
  resolve_lengths(p);
  std::set<std::int64_t> distinct;
  for (std::int64_t b = 0; b < 64; ++b) {
    EXPECT_GE(p.length_q(b), 80);
    EXPECT_LE(p.length_q(b), 100);
    EXPECT_EQ(p.length_q(b), p.length_k(b));
    distinct.insert(p.length_q(b));
  }
  EXPECT_GT(distinct.size(), 5u);
  const auto first = p.lengths_q;
  resolve_lengths(p);
  EXPECT_EQ(p.lengths_q, first);
  p.padding.seed = 6;
  resolve_lengths(p);
  EXPECT_NE(p.lengths_q, first);
}

TEST(Validation, ReportsEachProblemWithItsKey) {
  Problem p = make_problem(1, 6, 16, 16, 8);
  p.kv_heads = 4;
  p.dropout.probability = 1.0;
  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  p.lengths_q = {17};
  p.lengths_k = {3, 4};
  std::set<std::string> keys;
  for (const auto& issue : check_problem(p)) keys.insert(issue.key);
  EXPECT_EQ(keys, (std::set<std::string>{"kv_heads", "dropout", "padding.lengths_q[0]", "padding.lengths_k"}));
}

TEST(Validation, RefusesImpossiblyLargeProblems) {
  Problem p = make_problem(1 << 20, 1 << 10, 1 << 20, 1 << 20, 128);
  ASSERT_FALSE(check_problem(p).empty());
  EXPECT_EQ(check_problem(p)[0].key, "batch");
}

TEST(Validation, NamesTheLimitActuallyExceededAsIntegers) {
  Problem p;
  p.batch = 1024;
  p.heads = p.kv_heads = 1024;
  p.seqlen_q = p.seqlen_k = 16777216;
  p.head_dim = 1;
  const std::vector<ProblemIssue> issues = check_problem(p);
  ASSERT_EQ(issues.size(), 1u) << "Q (2^44 elements) is under its limit";
  EXPECT_EQ(issues[0].message,
            "the problem is impossibly large: the score matrices (batch x heads x seqlen_q x seqlen_k) would hold "
            "295147905179352825856 (2^68) elements, more than the 1152921504606846976 (2^60) allowed");
  p.head_dim = 65536;
  p.seqlen_k = 1;
  EXPECT_NE(check_problem(p)[0].message.find("Q and O (batch x seqlen_q x heads x head_dim) would hold "
                                             "1152921504606846976 (2^60) elements, more than the "
                                             "1125899906842624 (2^50) allowed"),
            std::string::npos);
}

TEST(Validation, EverySizeHasItsDocumentedLimitBeforeAnythingElse) {
  Problem p;
  p.batch = std::int64_t{1} << 40;  // as tokens / seqlen_q could make it
  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  const std::vector<ProblemIssue> issues = check_problem(p);
  ASSERT_EQ(issues.size(), 1u) << "nothing per element is looked at past the limit";
  EXPECT_EQ(issues[0].key, "batch");
  EXPECT_EQ(issues[0].message, "must be at most 1048576 (2^20), got 1099511627776");
  p.batch = 1;
  p.heads = 1 << 17;
  EXPECT_EQ(check_problem(p)[0].key, "heads");
}

TEST(Validation, LengthsOutOfRangeAreReportedOnceWithACount) {
  Problem p = make_problem(1000, 1, 10, 10, 8);
  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  p.lengths_q.assign(1000, 10);
  p.lengths_k.assign(1000, 11);
  p.lengths_k[3] = 5;
  const std::vector<ProblemIssue> issues = check_problem(p);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "padding.lengths_k[0]");
  EXPECT_EQ(issues[0].message, "must be in [0, 10], got 11 (and 998 more lengths out of range)");
}

TEST(Padding, UnresolvedProblemsDeriveTheirLengths) {
  Problem p;
  p.batch = 1 << 20;
  p.seqlen_q = 100;
  p.seqlen_k = 70;
  EXPECT_TRUE(p.lengths_q.empty());
  EXPECT_EQ(p.length_q(12345), 100);
  EXPECT_EQ(p.length_k(12345), 70);
  const std::vector<LengthGroup> groups = length_groups(p);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 1 << 20);

  p.batch = 64;
  p.padding = PaddingSpec{PaddingSpec::Kind::random, 0, 5, 9};
  Problem resolved = p;
  resolve_lengths(resolved);
  std::int64_t counted = 0;
  for (const LengthGroup& group : length_groups(p)) {
    counted += group.count;
    EXPECT_EQ(group.length_k - group.length_q, -30);
  }
  EXPECT_EQ(counted, 64);
  EXPECT_EQ(visible_pairs(p), visible_pairs(resolved));
  for (std::int64_t b = 0; b < 64; ++b) EXPECT_EQ(p.length_q(b), resolved.length_q(b));
}

TEST(Flops, VisiblePairsMatchTheRowByRowCountForEveryElement) {
  Problem p = make_problem(6, 2, 37, 29, 8);
  p.mask = MaskSpec{true, true, 4, -1};
  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  p.lengths_q = {37, 0, 20, 9, 37, 20};
  p.lengths_k = {29, 0, 31 - 2, 0, 29, 29};
  std::int64_t expected = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
      for (std::int64_t j = 0; j < p.seqlen_k; ++j) expected += is_visible(p.mask, i, j, p.length_q(b), p.length_k(b));
    }
  }
  EXPECT_EQ(visible_pairs(p), expected * p.heads);
}

TEST(CaseKey, DistinguishesEveryFieldThatChangesTheWork) {
  const Problem base = make_problem(2, 4, 100, 77, 64);
  std::vector<Problem> variants(12, base);
  variants[1].mask.causal = true;
  variants[2].mask.causal = true;
  variants[2].mask.bottom_right = true;
  variants[3].mask.window_left = 8;
  variants[4].dropout.probability = 0.1;
  variants[5].dtype = InputDType::bf16;
  variants[6].layout = Layout::bhsd;
  variants[7].direction = Direction::bwd;
  variants[8].scale = 0.5;
  variants[9].input.seed = 1;
  variants[10].tile.block_k = 32;
  variants[11].kv_heads = 2;
  std::set<std::string> keys;
  for (const auto& v : variants) keys.insert(case_key(v));
  EXPECT_EQ(keys.size(), variants.size());
  EXPECT_EQ(case_key(base), case_key(make_problem(2, 4, 100, 77, 64)));
}

TEST(CaseKey, WritesTheTileHints) {
  Problem p = make_problem(2, 4, 100, 77, 64);
  EXPECT_EQ(case_key(p).find("-tile("), std::string::npos) << case_key(p);
  p.tile.block_q = 20;  // block_k unset: each implementation's default runs
  EXPECT_NE(case_key(p).find("-tile(20xdefault)"), std::string::npos) << case_key(p);
  p.tile.block_q = 0;
  p.tile.block_k = 32;
  EXPECT_NE(case_key(p).find("-tile(defaultx32)"), std::string::npos) << case_key(p);
  // 64 x 64 given explicitly is not the unset tile: cpu.flash's default key block is 512.
  p.tile.block_q = TileHint::kDefaultBlock;
  p.tile.block_k = TileHint::kDefaultBlock;
  EXPECT_NE(case_key(p).find("-tile(64x64)"), std::string::npos) << case_key(p);
  EXPECT_NE(case_key(p), case_key(make_problem(2, 4, 100, 77, 64)));
}

}  // namespace
}  // namespace attnbench
