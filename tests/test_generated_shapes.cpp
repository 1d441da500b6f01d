// The generated shapes of the CUDA kernels' correctness matrix
// (tests/generated_shapes.hpp), checked on the CPU without running a kernel:
// every kernel sees every position of every mask and length edge of its
// tiling, in every direction it runs in and under every mask kind, from the
// whole set and (modulo the warp slice, and at the period's edges) from the
// everyday part; a target at an edge of one head dim's tiling is drawn with
// that head dim, and a residue's lengths hold the largest tiles of the case's
// head dim; the other factors are combined pairwise; every case is a valid
// problem with a name of its own; the seed changes the draws and never the
// names.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "tests/generated_shapes.hpp"

namespace attnbench::test {
namespace {

const std::vector<GeneratedCase>& default_cases() {
  static const std::vector<GeneratedCase> cases = generated_cases(kDefaultShapeSeed);
  return cases;
}

std::vector<GeneratedCase> everyday_cases() {
  std::vector<GeneratedCase> cases;
  for (const GeneratedCase& c : default_cases()) {
    if (c.everyday) cases.push_back(c);
  }
  return cases;
}

std::vector<std::int64_t> all_residues(std::int64_t modulus) {
  std::vector<std::int64_t> residues(static_cast<std::size_t>(modulus));
  std::iota(residues.begin(), residues.end(), 0);
  return residues;
}

// The positions `required` lacks among those `cases` of (direction, kind) hit
// for kernel `k` at the given moduli.
std::vector<std::string> missing_positions(const std::vector<GeneratedCase>& cases, const KernelUnderTest& k,
                                           Direction direction, MaskKind kind, const std::set<std::string>& required,
                                           const std::vector<std::int64_t>& moduli) {
  std::set<std::string> hit;
  for (const GeneratedCase& c : cases) {
    if (c.direction != direction || c.kind != kind) continue;
    for (const std::int64_t modulus : moduli) {
      const std::set<std::string> positions = positions_hit(c, k, modulus);
      hit.insert(positions.begin(), positions.end());
    }
  }
  std::vector<std::string> missing;
  std::set_difference(required.begin(), required.end(), hit.begin(), hit.end(), std::back_inserter(missing));
  return missing;
}

std::string first_few(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) text += "\n  " + names[i];
  if (names.size() > 8) text += "\n  ... " + std::to_string(names.size() - 8) + " more";
  return text;
}

TEST(GeneratedShapes, EveryKernelSeesEveryResidueOfEveryEdgeInEveryDirectionAndMaskKind) {
  std::cout << "generated shapes from seed " << kDefaultShapeSeed << ": " << default_cases().size() << " cases"
            << std::endl;
  for (const KernelUnderTest& k : kernels_under_test()) {
    for (const Direction direction : {Direction::fwd, Direction::fwd_bwd}) {
      if (!k.runs_in(direction)) continue;
      for (const MaskKind kind : kMaskKinds) {
        const std::set<std::string> required =
            positions_required(k, direction, kind, all_residues(k.period()), k.period());
        const std::vector<std::string> missing =
            missing_positions(default_cases(), k, direction, kind, required, {k.period()});
        EXPECT_TRUE(missing.empty()) << missing.size() << " of " << required.size() << " positions missed:"
                                     << first_few(missing);
      }
    }
  }
}

TEST(GeneratedShapes, TheEverydayPartSeesEveryResidueModuloTheWarpSliceAndThePeriodsEdges) {
  const std::vector<GeneratedCase> everyday = everyday_cases();
  std::cout << everyday.size() << " of " << default_cases().size() << " generated cases run in every test run"
            << std::endl;
  EXPECT_LT(everyday.size(), default_cases().size());
  for (const KernelUnderTest& k : kernels_under_test()) {
    for (const Direction direction : {Direction::fwd, Direction::fwd_bwd}) {
      if (!k.runs_in(direction)) continue;
      for (const MaskKind kind : kMaskKinds) {
        std::set<std::string> required =
            positions_required(k, direction, kind, all_residues(k.warp_period()), k.warp_period());
        const std::set<std::string> edges =
            positions_required(k, direction, kind, everyday_edge_residues(k), k.period());
        required.insert(edges.begin(), edges.end());
        const std::vector<std::string> missing =
            missing_positions(everyday, k, direction, kind, required, {k.warp_period(), k.period()});
        EXPECT_TRUE(missing.empty()) << missing.size() << " of " << required.size() << " positions missed:"
                                     << first_few(missing);
      }
    }
  }
}

// Every pair of levels of every two factors, among `cases`.
void expect_pairwise(const std::vector<GeneratedCase>& cases, const std::string& what) {
  for (int f = 0; f < kPairwiseFactors; ++f) {
    for (int g = f + 1; g < kPairwiseFactors; ++g) {
      std::set<std::pair<int, int>> seen;
      for (const GeneratedCase& c : cases) {
        seen.insert({c.factors[static_cast<std::size_t>(f)], c.factors[static_cast<std::size_t>(g)]});
      }
      EXPECT_EQ(seen.size(), 4u) << what << ": " << kFactorNames[f] << " x " << kFactorNames[g];
    }
  }
}

TEST(GeneratedShapes, DtypeHeadDimDropoutLayoutAndGqaAreCombinedPairwise) {
  const std::vector<GeneratedCase> everyday = everyday_cases();
  for (const auto* set : {&default_cases(), &everyday}) {
    std::map<std::string, std::vector<GeneratedCase>> groups;
    for (const GeneratedCase& c : *set) {
      const std::string direction = c.direction == Direction::fwd ? "fwd" : "fwdbwd";
      groups[direction].push_back(c);
      groups[direction + " " + mask_kind_name(c.kind)].push_back(c);
    }
    for (const auto& [name, cases] : groups) {
      if (cases.size() >= static_cast<std::size_t>(kCoveringRows)) {
        expect_pairwise(cases, (set == &everyday ? "everyday " : "") + name);
      }
    }
  }
  // The levels reach the problems.
  for (const GeneratedCase& c : default_cases()) {
    EXPECT_EQ(c.problem.dtype == InputDType::bf16, c.factors[0] == 1) << c.name;
    EXPECT_EQ(c.problem.head_dim == 128, c.factors[1] == 1) << c.name;
    EXPECT_EQ(c.problem.dropout.probability > 0, c.factors[2] == 1) << c.name;
    EXPECT_EQ(c.problem.layout == Layout::bhsd, c.factors[3] == 1) << c.name;
    EXPECT_EQ(c.problem.kv_heads < c.problem.heads, c.factors[4] == 1) << c.name;
  }
}

// A generated case requires the implementations of its direction's kernels.
TEST(GeneratedShapes, ACaseRequiresTheImplementationsOfItsDirectionsKernels) {
  EXPECT_EQ(direction_implementations(Direction::fwd),
            (std::vector<std::string>{"cublas", "flash", "flash.simple", "flash.sm90"}));
  EXPECT_EQ(direction_implementations(Direction::fwd_bwd), (std::vector<std::string>{"cublas", "flash", "flash.sm90"}));
}

// cuda.flash.sm90's backward tiles queries 128 rows at a time at head dim 64
// and 64 at 128: a target at one of those edges needs its head dim, whatever
// the covering array's row order.
TEST(GeneratedShapes, ATargetAtAnEdgeOfOneHeadDimsTilingIsDrawnWithThatHeadDim) {
  for (const std::uint64_t seed : {kDefaultShapeSeed, kDefaultShapeSeed + 1, kDefaultShapeSeed + 2}) {
    std::size_t targeted = 0;
    for (const GeneratedCase& c : generated_cases(seed)) {
      if (c.target_head_dim == 0) continue;
      ++targeted;
      EXPECT_EQ(c.problem.head_dim, c.target_head_dim) << "seed " << seed << ": " << c.describe();
    }
    EXPECT_GT(targeted, 0u) << "seed " << seed;
  }
}

// A residue's lengths hold a whole query and key tile of every kernel at the
// case's head dim, Nq no more than that needs (cuda.flash.sm90's backward has
// 128-row query tiles at d64 alone).
TEST(GeneratedShapes, AResiduesLengthsHoldTheLargestTilesOfTheirHeadDimAndNoMore) {
  std::size_t realised = 0;
  for (const GeneratedCase& c : default_cases()) {
    if (!c.realises_shift) continue;
    ++realised;
    const Problem& p = c.problem;
    const Tiling largest = direction_largest_tiles(c.direction, p.head_dim);
    EXPECT_GE(p.seqlen_q, largest.block_m) << c.describe();
    EXPECT_LT(p.seqlen_q, largest.block_m + direction_period(c.direction)) << c.describe();
    EXPECT_GE(p.seqlen_k, largest.block_n) << c.describe();
  }
  EXPECT_GT(realised, 0u);
}

TEST(GeneratedShapes, EveryCaseIsAValidProblemWithANameOfItsOwn) {
  std::set<std::string> names;
  for (const GeneratedCase& c : default_cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " twice";
    EXPECT_TRUE(std::all_of(c.name.begin(), c.name.end(), [](char ch) { return std::isalnum(ch) || ch == '_'; }))
        << c.name;
    const std::vector<ProblemIssue> issues = check_problem(c.problem);
    EXPECT_TRUE(issues.empty()) << c.describe() << ": " << (issues.empty() ? "" : issues[0].key + " " + issues[0].message);
    EXPECT_EQ(c.problem.direction, c.direction);
  }
}

TEST(GeneratedShapes, TheSeedChangesTheDrawsAndNeverTheNames) {
  const std::vector<GeneratedCase> again = generated_cases(kDefaultShapeSeed);
  const std::vector<GeneratedCase> other = generated_cases(kDefaultShapeSeed + 1);
  ASSERT_EQ(again.size(), default_cases().size());
  ASSERT_EQ(other.size(), default_cases().size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < other.size(); ++i) {
    EXPECT_EQ(again[i].describe(), default_cases()[i].describe()) << "one seed, one set";
    EXPECT_EQ(other[i].name, default_cases()[i].name);
    EXPECT_EQ(other[i].everyday, default_cases()[i].everyday) << other[i].name;
    differ += other[i].describe() != default_cases()[i].describe() ? 1 : 0;
  }
  EXPECT_GT(differ, other.size() / 2) << "another seed draws other lengths";
}

}  // namespace
}  // namespace attnbench::test
