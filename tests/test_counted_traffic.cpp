// The bytes cpu.flash and cpu.standard count between their full-size arrays and
// their tiles: equal to the closed forms derived from their loop orders on an
// unmasked problem, decreasing in block_k for the fused forward (the paper's
// Figure 2 middle), Theta(N^2) for the materializing forward and growing more
// slowly for the fused one, and smaller when a mask lets the fused one skip tiles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention_test_support.hpp"

namespace attnbench::test {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Bytes {
  std::int64_t read = 0;
  std::int64_t write = 0;
};

// Closed forms for an unmasked, unpadded problem with tiles bq x bk and inputs of
// e bytes per element; O, dQ, dK, dV and every internal array are fp32.
struct Shape {
  std::int64_t batch, heads, kv_heads, nq, nk, d, bq, bk, e;
  std::int64_t group() const { return heads / kv_heads; }
  std::int64_t tq() const { return ceil_div(nq, bq); }
  std::int64_t tk() const { return ceil_div(nk, bk); }
};

// cpu.flash forward, per (b, h): O, l, m initialised (4d + 8 bytes a row); each
// K/V block loaded once (2 e d a key); for each of the Tk key blocks every Q row
// is loaded with its O, l, m (e d + 4 d + 8) and O, l, m stored (4 d + 8); at
// the end l and m are read (8) and LSE written (4).
Bytes flash_forward(const Shape& s) {
  const std::int64_t read =
      2 * s.e * s.nk * s.d + s.tk() * s.nq * (s.e * s.d + 4 * s.d + 8) + 8 * s.nq;
  const std::int64_t write = s.nq * (4 * s.d + 8) + s.tk() * s.nq * (4 * s.d + 8) + 4 * s.nq;
  return {s.batch * s.heads * read, s.batch * s.heads * write};
}

// cpu.flash backward, per (b, kv head) with G query heads: dQ zeroed (4 d a row,
// per head); each K/V block loaded once; for each key block and head every Q row
// is loaded with O, dO, dQ, LSE (2 e d + 8 d + 4) and dQ stored (4 d); dK and
// dV of each key stored once (8 d).
Bytes flash_backward(const Shape& s) {
  const std::int64_t g = s.group();
  const std::int64_t read =
      2 * s.e * s.nk * s.d + g * s.tk() * s.nq * (2 * s.e * s.d + 8 * s.d + 4);
  const std::int64_t write = g * 4 * s.nq * s.d + g * s.tk() * s.nq * 4 * s.d + 8 * s.nk * s.d;
  return {s.batch * s.kv_heads * read, s.batch * s.kv_heads * write};
}

// cpu.standard forward: K and V loaded once per (b, kv head) (2 e d a key);
// per (b, h): Q loaded once; S = tau Q K^T writes S; the softmax reads S and
// writes P and LSE; O = P V reads P and writes O.
Bytes standard_forward(const Shape& s) {
  const std::int64_t read = s.batch * s.heads * (s.e * s.nq * s.d + 8 * s.nq * s.nk) +
                            s.batch * s.kv_heads * 2 * s.e * s.nk * s.d;
  const std::int64_t write = s.batch * s.heads * (8 * s.nq * s.nk + 4 * s.nq + 4 * s.nq * s.d);
  return {read, write};
}

// cpu.standard backward, per (b, kv head): K and V loaded once (2 e d a key);
// for each of its G query heads, Q and dO loaded once (2 e d a row), then
//   per Q block: O (4 d a row; D stays on chip); dP~ = dO V^T writes dP~
//                (4 Nq Nk); dS reads P and dP~ (8 Nq Nk) and writes dS (4 Nq Nk);
//                dQ = tau dS K reads dS (4 Nq Nk) and writes dQ (4 Nq d)
//   per K block: dV and dK each read their column panel (P or dS: 4 Nq Nk in
//                all) and, after the first head, the stored dV/dK block (4 Nk d);
//                each writes 4 Nk d
Bytes standard_backward(const Shape& s) {
  const std::int64_t g = s.group();
  const std::int64_t read =
      2 * s.e * s.nk * s.d + g * ((2 * s.e + 4) * s.nq * s.d + 20 * s.nq * s.nk) + (g - 1) * 8 * s.nk * s.d;
  const std::int64_t write = g * (8 * s.nq * s.nk + 8 * s.nk * s.d + 4 * s.nq * s.d);
  return {s.batch * s.kv_heads * read, s.batch * s.kv_heads * write};
}

Problem problem_of(const Shape& s) {
  Problem p = make_problem(s.batch, s.heads, s.kv_heads, s.nq, s.nk, s.d);
  p.tile = TileHint{s.bq, s.bk};
  finish_problem(p);
  return p;
}

std::uint64_t forward_bytes(const char* name, const Problem& p) {
  const Inputs in = make_inputs(p, 1);
  const Outputs out = run(implementation(name), p, in, 2, false);
  return out.forward_read + out.forward_write;
}

class ClosedForm : public ::testing::TestWithParam<ElementType> {};

TEST_P(ClosedForm, FlashCountsTheBytesOfItsLoopOrder) {
  const ElementType input_type = GetParam();
  const Shape s{2, 4, 2, 100, 70, 16, 16, 32, static_cast<std::int64_t>(element_size(input_type))};
  const Problem p = problem_of(s);
  const Inputs in = make_inputs(p, 1, input_type);
  const Outputs out = run(implementation("cpu.flash"), p, in, 2);
  EXPECT_EQ(out.forward_read, static_cast<std::uint64_t>(flash_forward(s).read));
  EXPECT_EQ(out.forward_write, static_cast<std::uint64_t>(flash_forward(s).write));
  EXPECT_EQ(out.backward_read, static_cast<std::uint64_t>(flash_backward(s).read));
  EXPECT_EQ(out.backward_write, static_cast<std::uint64_t>(flash_backward(s).write));
}

TEST_P(ClosedForm, StandardCountsTheBytesOfItsLoopOrder) {
  const ElementType input_type = GetParam();
  const Shape s{2, 4, 2, 100, 70, 16, 16, 32, static_cast<std::int64_t>(element_size(input_type))};
  const Problem p = problem_of(s);
  const Inputs in = make_inputs(p, 1, input_type);
  const Outputs out = run(implementation("cpu.standard"), p, in, 2);
  EXPECT_EQ(out.forward_read, static_cast<std::uint64_t>(standard_forward(s).read));
  EXPECT_EQ(out.forward_write, static_cast<std::uint64_t>(standard_forward(s).write));
  EXPECT_EQ(out.backward_read, static_cast<std::uint64_t>(standard_backward(s).read));
  EXPECT_EQ(out.backward_write, static_cast<std::uint64_t>(standard_backward(s).write));
}

std::string width_name(const ::testing::TestParamInfo<ElementType>& param_info) {
  return std::string(element_type_name(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(InputWidths, ClosedForm,
                         ::testing::Values(ElementType::bf16, ElementType::f64), width_name);

// Without grouped heads the materializing forward moves exactly what the
// paper's standard model says (S, P at 4 bytes), masked or padded or not: it
// computes the whole padded grid. S is written once also where the head
// dimension is summed in parts (d 96), panel by panel (Nk 600: two panels).
TEST(CountedTraffic, StandardForwardIsTheStandardModelExactly) {
  for (const Shape& shape : {Shape{2, 3, 3, 77, 50, 24, 16, 32, 2}, Shape{2, 3, 3, 40, 600, 96, 16, 32, 2}}) {
    Problem p = problem_of(shape);
    p.mask = MaskSpec{true, true, 9, -1};
    p.padding.kind = PaddingSpec::Kind::random;
    p.padding.shortfall_max = 20;
    p.direction = Direction::fwd;
    finish_problem(p);
    Implementation& standard = implementation("cpu.standard");
    const Outputs out = run(standard, p, make_inputs(p, 3), 2, false);
    const TrafficModel model = *standard.modelled_traffic(p);
    EXPECT_EQ(out.forward_read, static_cast<std::uint64_t>(model.bytes().read)) << shape.d;
    EXPECT_EQ(out.forward_write, static_cast<std::uint64_t>(model.bytes().write)) << shape.d;
  }
}

TEST(CountedTraffic, FlashForwardBytesFallAsBlockKGrows) {
  std::vector<std::uint64_t> bytes;
  for (const std::int64_t block_k : {16, 32, 64, 128, 256}) {
    const Shape s{1, 1, 1, 1024, 1024, 64, 64, block_k, 2};
    bytes.push_back(forward_bytes("cpu.flash", problem_of(s)));
    const Bytes expected = flash_forward(s);
    EXPECT_EQ(bytes.back(), static_cast<std::uint64_t>(expected.read + expected.write)) << block_k;
  }
  for (std::size_t i = 1; i < bytes.size(); ++i) EXPECT_LT(bytes[i], bytes[i - 1]);
}

TEST(CountedTraffic, StandardForwardIsQuadraticAndFlashGrowsLess) {
  const Problem small = problem_of(Shape{1, 1, 1, 512, 512, 64, 64, 64, 2});
  const Problem large = problem_of(Shape{1, 1, 1, 1024, 1024, 64, 64, 64, 2});
  const auto standard_small = static_cast<double>(forward_bytes("cpu.standard", small));
  const auto standard_large = static_cast<double>(forward_bytes("cpu.standard", large));
  const auto flash_small = static_cast<double>(forward_bytes("cpu.flash", small));
  const auto flash_large = static_cast<double>(forward_bytes("cpu.flash", large));
  EXPECT_GT(standard_large / standard_small, 3.8);
  EXPECT_LE(standard_large / standard_small, 4.0);
  EXPECT_LT(flash_large / flash_small, standard_large / standard_small);
  EXPECT_LT(flash_large - flash_small, standard_large - standard_small);
  EXPECT_LT(flash_large, standard_large);
}

TEST(CountedTraffic, FlashSkipsTilesACausalMaskHides) {
  const Problem full = problem_of(Shape{1, 2, 2, 256, 256, 32, 32, 32, 2});
  Problem causal = full;
  causal.mask.causal = true;
  const Inputs in = make_inputs(full, 1);
  const Outputs dense = run(implementation("cpu.flash"), full, in, 2);
  const Outputs masked = run(implementation("cpu.flash"), causal, in, 2);
  // 36 of the 64 tile pairs are visible; the O(N) initialisation and K/V loads remain.
  EXPECT_LT(static_cast<double>(masked.forward_read + masked.forward_write),
            0.7 * static_cast<double>(dense.forward_read + dense.forward_write));
  EXPECT_LT(static_cast<double>(masked.backward_read + masked.backward_write),
            0.7 * static_cast<double>(dense.backward_read + dense.backward_write));
}

}  // namespace
}  // namespace attnbench::test
