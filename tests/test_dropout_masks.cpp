// Dropout as the implementations apply it: the kept fraction is 1 - p, and
// cpu.reference, cpu.standard and cpu.flash drop exactly the elements the RNG
// contract (dropout_keeps) drops. With one-hot value rows (V_j = e_j) the output
// row O_i is row i of P~ = dropout(P) / (1 - p), so the mask can be read off O.
#include <gtest/gtest.h>

#include <cmath>

#include "attention_test_support.hpp"
#include "kernels/common/dropout.hpp"

namespace attnbench::test {
namespace {

TEST(DropoutMasks, KeptFractionIsOneMinusP) {
  for (const double p : {0.05, 0.17, 0.5, 0.9}) {
    const DropoutRng rng = make_dropout_rng(p, 0xfeedULL << 32 | 0xbeef, 5, 4);
    std::int64_t kept = 0;
    std::int64_t total = 0;
    for (std::uint32_t b = 0; b < 2; ++b) {
      for (std::uint32_t h = 0; h < 4; ++h) {
        for (std::uint32_t i = 0; i < 64; ++i) {
          for (std::uint32_t j = 0; j < 301; ++j) {
            kept += dropout_keeps(rng, b, h, i, j) ? 1 : 0;
            ++total;
          }
        }
      }
    }
    // Binomial(total, 1 - p): a 6-sigma band fails a correct generator with
    // probability ~2e-9, while a shift of the kept fraction by 0.01 lies outside
    // it for every p here (sigma <= 1.3e-3).
    const double n = static_cast<double>(total);
    const double sigma = std::sqrt(p * (1.0 - p) / n);
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 6.0 * sigma) << "p = " << p;
  }
}

// A problem whose head_dim covers every key, with V_j = e_j in every kv head.
struct OneHotCase {
  Problem problem;
  Inputs inputs;
};

OneHotCase one_hot_case() {
  Problem p = make_problem(2, 4, 2, 24, 40, 48);
  p.mask = MaskSpec{true, true, 30, -1};
  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  p.lengths_q = {24, 17};
  p.lengths_k = {40, 33};
  p.dropout = DropoutSpec{0.3, 0x0123456789ULL, 11};
  p.tile = TileHint{16, 8};
  finish_problem(p);
  Inputs in = make_inputs(p, 8);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t hkv = 0; hkv < p.kv_heads; ++hkv) {
      for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
        for (std::int64_t x = 0; x < p.head_dim; ++x) {
          in.v.set(kv_index(p, b, j, hkv, x), x == j ? 1.0 : 0.0);
        }
      }
    }
  }
  return OneHotCase{p, std::move(in)};
}

TEST(DropoutMasks, EveryImplementationDropsExactlyTheContractsElements) {
  const OneHotCase c = one_hot_case();
  const Problem& p = c.problem;
  const DropoutRng rng = make_dropout_rng(p.dropout.probability, p.dropout.seed, p.dropout.offset,
                                          static_cast<std::uint32_t>(p.heads));
  for (const char* name : {"cpu.reference", "cpu.standard", "cpu.flash"}) {
    SCOPED_TRACE(name);
    const Outputs out = run(implementation(name), p, c.inputs, 2, false);
    std::int64_t kept = 0;
    std::int64_t dropped = 0;
    for (std::int64_t b = 0; b < p.batch; ++b) {
      for (std::int64_t h = 0; h < p.heads; ++h) {
        for (std::int64_t i = 0; i < p.length_q(b); ++i) {
          for (std::int64_t j = 0; j < p.seqlen_k; ++j) {
            const double o_ij = out.out.at(q_index(p, b, i, h, j));
            const bool visible = is_visible(p.mask, i, j, p.length_q(b), p.length_k(b));
            const bool keeps =
                dropout_keeps(rng, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
                              static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
            if (visible && keeps) {
              ++kept;
              ASSERT_NE(o_ij, 0.0)
                  << "kept element b=" << b << " h=" << h << " i=" << i << " j=" << j;
            } else {
              dropped += visible ? 1 : 0;
              ASSERT_EQ(o_ij, 0.0) << (visible ? "dropped" : "masked") << " element b=" << b
                                   << " h=" << h << " i=" << i << " j=" << j;
            }
          }
        }
      }
    }
    EXPECT_GT(kept, 1000);
    EXPECT_GT(dropped, 300);
  }
}

}  // namespace
}  // namespace attnbench::test

namespace attnbench {
namespace {

// The select-based word access kernels use instead of an indexed read.
TEST(DropoutMasks, PhiloxWordSelectsTheIndexedWord) {
  const PhiloxBlock block = philox4x32_10(PhiloxBlock{{1u, 2u, 3u, 4u}}, 5u, 6u);
  for (int index = 0; index < 4; ++index) EXPECT_EQ(philox_word(block, index), block.word[index]) << index;
}

}  // namespace
}  // namespace attnbench
