// The generated half of the CUDA kernels' correctness matrix: problems whose
// shapes put every mask and length edge at every position that matters to each
// kernel's tiling (tests/mask_edges.hpp), instead of a hand-picked list.
//
// Each kernel joins with its traits struct (kernels_under_test()): its tiling per
// head dim, the directions it runs in, and the implementation that runs it,
// which every case of those directions must run. A direction's cases are
// grouped by mask kind; each group has targets, and each target becomes one
// case:
// - causal (top-left, bottom-right): every residue r of Lk - Lq modulo P, the
//   least common multiple of the periods of the kernels that run in the
//   direction (so every kernel sees every residue of its own period), with
//   lengths that hold a whole tile of each kernel at the case's head dim;
// - windows (top-left, bottom-right): every residue of the left edge (shift -
//   left) and, permuted, of the right edge (shift + right) modulo P;
// - padding (no mask, causal bottom-right): valid lengths at every tile and
//   warp-slice edge of each side and one either side, and zero, three batch
//   elements per case;
// - sizes (every mask kind and no mask): Nq below one query tile and one more
//   than a tile, likewise Nk, for each kernel.
// The free parameters (the lengths realising a residue, the window bounds'
// multiples, seeds) are drawn from one seed, and dtype, head dim, dropout,
// layout and GQA follow a pairwise covering array, in an order the seed
// shuffles per group. A kernel whose tiles differ between its head dims
// (cuda.flash.sm90's backward: 128 query rows at d64, 64 at d128) meets an
// edge of one of them only at that head dim, so a size or padding target at
// such an edge is drawn with it: the case takes a row of the array at that
// head-dim level (a mask edge's position, its residue modulo the kernel's
// period, is the same at either head dim).
// Case names depend on the targets alone, so a seed changes the draws and
// never the names.
//
// The everyday part (the simulator's sample in every test run) takes, of each
// causal and window group, one residue per class modulo the warp slice W (the
// least common multiple of the kernels' min(warp rows, warp keys)): residue
// c + W·(c mod P/W) for class c, which puts the edge in every warp slice of the
// tile across the classes; residues at and beside the edge of each larger
// kernel period (P_k - 1, 0, 1; one residue for each), for both window edges;
// and every padding and size case. The rest runs under the cudasim_matrix label.
// tests/test_generated_shapes.cpp checks that every position is covered, by the
// whole set and by the everyday part.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "baselines/cuda/softmax_row.hpp"
#include "harness/common/problem.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "kernels/cuda/flash_simple_geometry.hpp"
#include "kernels/cuda/flash_sm90_backward_geometry.hpp"
#include "kernels/cuda/flash_sm90_geometry.hpp"
#include "tests/mask_edges.hpp"

namespace attnbench::test {

// ---- The kernels and their tilings ----------------------------------------------

// The head-dim factor's two levels; a kernel has a tiling for each.
inline constexpr std::int64_t kHeadDimLevels[2] = {64, 128};

struct KernelUnderTest {
  std::string name;
  std::string implementation;  // the implementation that runs it, without the device: a generated case requires it
  bool runs_forward;           // in a forward case
  bool runs_forward_backward;  // in a forward-and-backward case
  Tiling d64;                  // the tiling of its head-dim 64 and 128 instances
  Tiling d128;

  const Tiling& tiling(std::int64_t head_dim) const { return head_dim > kHeadDimLevels[0] ? d128 : d64; }
  bool runs_in(Direction direction) const {
    return direction == Direction::fwd ? runs_forward : runs_forward_backward;
  }
  // Positions are residues modulo the period of both instances; the everyday
  // part's modulo the warp period (the smaller of a warp's rows and keys).
  std::int64_t period() const { return std::lcm(tiling_period(d64), tiling_period(d128)); }
  std::int64_t warp_period() const {
    return std::lcm(std::min(d64.warp_rows, d64.warp_keys), std::min(d128.warp_rows, d128.warp_keys));
  }
};

// A new kernel joins here with its implementation, its traits (its kBlockM,
// kBlockN, kWarpRows, kWarpKeys) and the directions it runs in.
inline const std::vector<KernelUnderTest>& kernels_under_test() {
  static const std::vector<KernelUnderTest> kernels{
      {"flash_forward", "flash", true, true, tiling_of<FlashTraits<64>>(), tiling_of<FlashTraits<128>>()},
      {"flash_backward", "flash", false, true, tiling_of<BackwardTraits<64>>(), tiling_of<BackwardTraits<128>>()},
      {"flash_simple", "flash.simple", true, false, tiling_of<flash_simple::Traits>(),
       tiling_of<flash_simple::Traits>()},
      {"flash_sm90_forward", "flash.sm90", true, false, tiling_of<Sm90Traits<64>>(), tiling_of<Sm90Traits<128>>()},
      {"flash_sm90_backward", "flash.sm90", false, true, tiling_of<Sm90BackwardTraits<64>>(),
       tiling_of<Sm90BackwardTraits<128>>()},
      {"softmax_rows", "cublas", true, true, tiling_of<SoftmaxRowTraits>(), tiling_of<SoftmaxRowTraits>()},
  };
  return kernels;
}

// ---- What a case is ------------------------------------------------------------

enum class MaskKind { none, causal_top_left, causal_bottom_right, window_top_left, window_bottom_right, padding,
                      padding_causal };
inline constexpr MaskKind kMaskKinds[] = {MaskKind::none,           MaskKind::causal_top_left,
                                          MaskKind::causal_bottom_right, MaskKind::window_top_left,
                                          MaskKind::window_bottom_right, MaskKind::padding,
                                          MaskKind::padding_causal};
inline const char* mask_kind_name(MaskKind kind) {
  switch (kind) {
    case MaskKind::none: return "none";
    case MaskKind::causal_top_left: return "causal_top_left";
    case MaskKind::causal_bottom_right: return "causal_bottom_right";
    case MaskKind::window_top_left: return "window_top_left";
    case MaskKind::window_bottom_right: return "window_bottom_right";
    case MaskKind::padding: return "padding";
    case MaskKind::padding_causal: return "padding_causal";
  }
  return "?";
}
inline bool is_causal(MaskKind kind) {
  return kind == MaskKind::causal_top_left || kind == MaskKind::causal_bottom_right;
}
inline bool is_window(MaskKind kind) {
  return kind == MaskKind::window_top_left || kind == MaskKind::window_bottom_right;
}
inline bool is_padded(MaskKind kind) { return kind == MaskKind::padding || kind == MaskKind::padding_causal; }

// The factors combined pairwise: dtype, head dim, dropout, layout, GQA.
inline constexpr int kPairwiseFactors = 5;
using FactorLevels = std::array<int, kPairwiseFactors>;  // 0 or 1 each
inline const char* const kFactorNames[kPairwiseFactors] = {"dtype", "head_dim", "dropout", "layout", "gqa"};

// A strength-2 covering array of 5 two-level factors in 6 rows: factor f's
// column is row 0 = 0 and 1 on the rows of a 3-subset of {1..5}; any two distinct
// 3-subsets of a 5-set meet and differ, so every pair of levels of two factors
// appears.
inline constexpr int kCoveringRows = 6;
inline FactorLevels covering_row(int row) {
  static constexpr std::array<std::array<int, 3>, kPairwiseFactors> kSubsets{
      {{1, 2, 3}, {1, 2, 4}, {1, 3, 5}, {2, 4, 5}, {3, 4, 5}}};
  FactorLevels levels{};
  for (int f = 0; f < kPairwiseFactors; ++f) {
    const auto& subset = kSubsets[static_cast<std::size_t>(f)];
    levels[static_cast<std::size_t>(f)] = std::count(subset.begin(), subset.end(), row) > 0 ? 1 : 0;
  }
  return levels;
}

struct GeneratedCase {
  std::string name;  // from the target alone
  Direction direction = Direction::fwd;
  MaskKind kind = MaskKind::none;
  bool everyday = false;  // in the simulator's sample of every test run
  std::int64_t target_head_dim = 0;  // > 0: its target is an edge of that head dim's tiling alone (of some kernel)
  bool realises_shift = false;       // Nq and Nk realise a residue of Lk - Lq
  FactorLevels factors{};
  Problem problem;
  std::int64_t grid_stride_cap = 0;  // > 0: the row kernels' grids are lowered to this many blocks

  std::string describe() const {
    std::ostringstream out;
    const Problem& p = problem;
    out << name << ": " << (p.direction == Direction::fwd ? "fwd" : "fwd+bwd") << " "
        << (p.dtype == InputDType::fp16 ? "fp16" : "bf16") << " d" << p.head_dim << " batch " << p.batch << " heads "
        << p.heads << "/" << p.kv_heads << (p.layout == Layout::bshd ? " bshd" : " bhsd") << " Nq " << p.seqlen_q
        << " Nk " << p.seqlen_k << " causal " << p.mask.causal << (p.mask.bottom_right ? " bottom_right" : " top_left")
        << " window (" << p.mask.window_left << ", " << p.mask.window_right << ") dropout " << p.dropout.probability;
    if (p.padding.kind == PaddingSpec::Kind::explicit_lengths) {
      out << " lengths";
      for (std::size_t b = 0; b < p.lengths_q.size(); ++b) out << " " << p.lengths_q[b] << "x" << p.lengths_k[b];
    }
    if (grid_stride_cap > 0) out << " grid-stride cap " << grid_stride_cap;
    return out.str();
  }
};

// What GoogleTest prints for a case's parameter.
inline void PrintTo(const GeneratedCase& c, std::ostream* out) { *out << c.describe(); }

// ---- Periods ---------------------------------------------------------------------

// P of a direction: every kernel that runs in it sees every residue of its period.
inline std::int64_t direction_period(Direction direction) {
  std::int64_t period = 1;
  for (const KernelUnderTest& k : kernels_under_test()) {
    if (k.runs_in(direction)) period = std::lcm(period, k.period());
  }
  return period;
}
// W of a direction: the everyday part's residue classes.
inline std::int64_t direction_warp_period(Direction direction) {
  std::int64_t period = 1;
  for (const KernelUnderTest& k : kernels_under_test()) {
    if (k.runs_in(direction)) period = std::lcm(period, k.warp_period());
  }
  return period;
}
// The implementations of the direction's kernels, each once: every generated
// case of the direction must run them (a refusal would leave a kernel's edges
// untested).
inline std::vector<std::string> direction_implementations(Direction direction) {
  std::set<std::string> names;
  for (const KernelUnderTest& k : kernels_under_test()) {
    if (k.runs_in(direction)) names.insert(k.implementation);
  }
  return {names.begin(), names.end()};
}

// The largest query and key tiles of the direction's kernels, at one head dim
// or (0) at both: realised lengths hold at least one whole tile of each.
inline Tiling direction_largest_tiles(Direction direction, std::int64_t head_dim = 0) {
  Tiling largest{1, 1, 1, 1};
  for (const KernelUnderTest& k : kernels_under_test()) {
    if (!k.runs_in(direction)) continue;
    for (const Tiling* t : {&k.d64, &k.d128}) {
      if (head_dim > 0 && t != &k.tiling(head_dim)) continue;
      largest.block_m = std::max(largest.block_m, t->block_m);
      largest.block_n = std::max(largest.block_n, t->block_n);
    }
  }
  return largest;
}

// The head dims a target must be drawn with so that every kernel of the
// direction meets it: a kernel whose tiling has the edge at one head dim alone
// meets it only there. {0} when any will do, else one target per head dim.
template <typename HasEdge>
std::vector<std::int64_t> head_dims_needing(Direction direction, const HasEdge& has_edge) {
  std::set<std::int64_t> needed;
  for (const KernelUnderTest& k : kernels_under_test()) {
    if (!k.runs_in(direction) || has_edge(k.d64) == has_edge(k.d128)) continue;
    needed.insert(has_edge(k.d64) ? kHeadDimLevels[0] : kHeadDimLevels[1]);
  }
  if (needed.empty()) return {0};
  return {needed.begin(), needed.end()};
}

// The residues at and beside the edge of a kernel's period (P - 1, 0, 1): the
// everyday part has them besides one residue of each class modulo W.
inline std::vector<std::int64_t> everyday_edge_residues(const KernelUnderTest& k) {
  return {k.period() - 1, 0, 1};
}

// ---- The generator ------------------------------------------------------------------

inline constexpr std::uint64_t kDefaultShapeSeed = 20261207;
inline constexpr const char* kShapeSeedVariable = "ATTNBENCH_SHAPE_SEED";

// The seed: ATTNBENCH_SHAPE_SEED when set (a decimal number), else the default.
inline std::uint64_t shape_seed() {
  const char* text = std::getenv(kShapeSeedVariable);
  if (text == nullptr || *text == '\0') return kDefaultShapeSeed;
  return std::strtoull(text, nullptr, 10);
}

class ShapeGenerator {
 public:
  explicit ShapeGenerator(std::uint64_t seed) : random_(seed) {}

  std::vector<GeneratedCase> generate() {
    for (const Direction direction : {Direction::fwd, Direction::fwd_bwd}) {
      for (const MaskKind kind : kMaskKinds) {
        group_.clear();
        if (is_causal(kind)) shift_targets(direction, kind);
        if (is_window(kind)) window_targets(direction, kind);
        if (is_padded(kind)) padding_targets(direction, kind);
        size_targets(direction, kind);
        if (kind == MaskKind::padding_causal || kind == MaskKind::window_bottom_right) grid_stride_targets(direction, kind);
        assign_factors();
        cases_.insert(cases_.end(), group_.begin(), group_.end());
      }
    }
    return cases_;
  }

 private:
  std::int64_t uniform(std::int64_t low, std::int64_t high) {  // [low, high]
    return std::uniform_int_distribution<std::int64_t>(low, high)(random_);
  }

  GeneratedCase start(Direction direction, MaskKind kind, const std::string& target, bool everyday) {
    GeneratedCase c;
    c.direction = direction;
    c.kind = kind;
    c.everyday = everyday;
    c.name = std::string(direction == Direction::fwd ? "fwd_" : "fwdbwd_") + mask_kind_name(kind) + "_" + target;
    Problem& p = c.problem;
    p.direction = direction;
    p.batch = 1;
    p.heads = 2;
    p.kv_heads = 2;
    p.mask = MaskSpec{is_causal(kind) || kind == MaskKind::padding_causal,
                      kind != MaskKind::causal_top_left && kind != MaskKind::window_top_left, -1, -1};
    p.input.seed = static_cast<std::uint64_t>(uniform(1, 1 << 30));
    p.dropout.seed = static_cast<std::uint64_t>(uniform(1, 1 << 30));
    p.dropout.offset = static_cast<std::uint32_t>(uniform(0, 1000));
    return c;
  }

  // Lengths with Lk - Lq ≡ residue (mod P), each holding a whole largest tile
  // (Nq refitted to the head dim's tiles once it is drawn: fit_query_length).
  void realise_shift(Direction direction, std::int64_t residue, GeneratedCase& c) {
    const std::int64_t period = direction_period(direction);
    const Tiling largest = direction_largest_tiles(direction);
    Problem& p = c.problem;
    p.seqlen_k = uniform(largest.block_n, largest.block_n + period - 1);
    p.seqlen_q = largest.block_m + positive_modulo(p.seqlen_k - residue - largest.block_m, period);
    c.realises_shift = true;
  }
  // Nq of such lengths moved by a multiple of P to the least that holds a
  // whole query tile of the direction's kernels at the case's head dim: the
  // residue stays, and so do the window edges' (mask_shift moves by the
  // multiple, or not at all).
  static void fit_query_length(Direction direction, Problem& p) {
    const std::int64_t period = direction_period(direction);
    const std::int64_t block_m = direction_largest_tiles(direction, p.head_dim).block_m;
    p.seqlen_q = block_m + positive_modulo(p.seqlen_q - block_m, period);
  }

  // The everyday residues of a direction: class c modulo W at c + W·(c mod P/W),
  // and the residues at and beside the edge of the period of each kernel whose
  // period exceeds W.
  static std::set<std::int64_t> class_residues(Direction direction) {
    const std::int64_t period = direction_period(direction);
    const std::int64_t warp_period = direction_warp_period(direction);
    std::set<std::int64_t> residues;
    for (std::int64_t c = 0; c < warp_period; ++c) residues.insert(c + warp_period * (c % (period / warp_period)));
    return residues;
  }
  // A kernel whose period divides the direction's meets its edges at several
  // residues; one of them is enough, and a larger period's edges often
  // serve a smaller one's (P - 1 is also P/2 - 1 modulo P/2).
  static std::set<std::int64_t> edge_residues(Direction direction) {
    std::vector<const KernelUnderTest*> kernels;
    for (const KernelUnderTest& k : kernels_under_test()) {
      if (k.runs_in(direction) && k.period() > direction_warp_period(direction)) kernels.push_back(&k);
    }
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const KernelUnderTest* a, const KernelUnderTest* b) { return a->period() > b->period(); });
    std::set<std::int64_t> residues;
    for (const KernelUnderTest* k : kernels) {
      for (const std::int64_t edge : everyday_edge_residues(*k)) {
        const bool met = std::any_of(residues.begin(), residues.end(),
                                     [&](std::int64_t r) { return r % k->period() == edge; });
        if (!met) residues.insert(edge);
      }
    }
    return residues;
  }
  static std::set<std::int64_t> everyday_residues(Direction direction) {
    std::set<std::int64_t> residues = class_residues(direction);
    const std::set<std::int64_t> edges = edge_residues(direction);
    residues.insert(edges.begin(), edges.end());
    return residues;
  }

  void shift_targets(Direction direction, MaskKind kind) {
    const std::int64_t period = direction_period(direction);
    const std::set<std::int64_t> everyday = everyday_residues(direction);
    for (std::int64_t r = 0; r < period; ++r) {
      GeneratedCase c = start(direction, kind, "shift_" + std::to_string(r), everyday.count(r) > 0);
      realise_shift(direction, r, c);
      group_.push_back(c);
    }
  }

  // Case left_r: the left edge (shift - left) at residue r, the right edge (shift
  // + right) at σ(r) = π(r mod W) + W·ρ(r div W) for permutations π, ρ the seed
  // draws, a permutation of the residues that keeps the everyday classes whole.
  // Case right_r, for the everyday residues at the edges of the kernels'
  // periods: the right edge there, the left edge anywhere.
  void window_targets(Direction direction, MaskKind kind) {
    const std::int64_t period = direction_period(direction);
    const std::int64_t warp_period = direction_warp_period(direction);
    const std::set<std::int64_t> everyday = everyday_residues(direction);
    std::vector<std::int64_t> within(static_cast<std::size_t>(warp_period));
    std::vector<std::int64_t> across(static_cast<std::size_t>(period / warp_period));
    std::iota(within.begin(), within.end(), 0);
    std::iota(across.begin(), across.end(), 0);
    std::shuffle(within.begin(), within.end(), random_);
    std::shuffle(across.begin(), across.end(), random_);
    const auto add = [&](const std::string& target, std::int64_t left_edge, std::int64_t right_edge, bool daily) {
      GeneratedCase c = start(direction, kind, target, daily);
      Problem& p = c.problem;
      realise_shift(direction, uniform(0, period - 1), c);
      const std::int64_t shift = mask_shift(p.mask, p.seqlen_q, p.seqlen_k);
      p.mask.window_left = positive_modulo(shift - left_edge, period);
      p.mask.window_right = positive_modulo(right_edge - shift, period);
      group_.push_back(c);
    };
    for (std::int64_t r = 0; r < period; ++r) {
      add("left_" + std::to_string(r), r,
          within[static_cast<std::size_t>(r % warp_period)] +
              warp_period * across[static_cast<std::size_t>(r / warp_period)],
          everyday.count(r) > 0);
    }
    for (const std::int64_t r : edge_residues(direction)) add("right_" + std::to_string(r), uniform(0, period - 1), r, true);
  }

  // Valid lengths at every edge of each side's tiles and one either side, and
  // zero: three batch elements per case, each query-side length beside the
  // next key-side one (or a random one once a side runs out). Lengths at an
  // edge of one head dim's tiling alone (head_dims_needing) go beside each
  // other in cases of that head dim, after the rest.
  void padding_targets(Direction direction, MaskKind kind) {
    struct Length {
      std::int64_t length;
      std::int64_t head_dim;  // 0: any
    };
    const Tiling largest = direction_largest_tiles(direction);
    const auto edge_lengths = [&](bool query_side, std::vector<Length>& lengths) {
      const auto units = [query_side](const Tiling& t) {
        return query_side ? std::array<int, 2>{t.warp_rows, t.block_m} : std::array<int, 2>{t.warp_keys, t.block_n};
      };
      std::set<std::pair<std::int64_t, std::int64_t>> edges;  // (unit, offset)
      for (const KernelUnderTest& k : kernels_under_test()) {
        if (!k.runs_in(direction)) continue;
        for (const Tiling& t : {k.d64, k.d128}) {
          for (const int offset : {-1, 0, 1}) {
            for (const int unit : units(t)) {
              if (unit > 1) edges.insert({unit, offset});
            }
          }
        }
      }
      const std::int64_t largest_tile = query_side ? largest.block_m : largest.block_n;
      for (const auto& [unit, offset] : edges) {
        const auto at_edge = [&, unit = unit](const Tiling& t) {
          const std::array<int, 2> tile_units = units(t);
          return std::find(tile_units.begin(), tile_units.end(), unit) != tile_units.end();
        };
        for (const std::int64_t head_dim : head_dims_needing(direction, at_edge)) {
          const std::int64_t multiple = uniform(1, std::max<std::int64_t>(1, 2 * largest_tile / unit));
          lengths.push_back({unit * multiple + offset, head_dim});
        }
      }
    };
    std::vector<Length> lengths_q{{0, 0}}, lengths_k{{uniform(1, largest.block_n), 0}};  // Lq = 0
    lengths_q.push_back({uniform(1, largest.block_m), 0});
    lengths_k.push_back({0, 0});  // Lk = 0
    edge_lengths(true, lengths_q);
    edge_lengths(false, lengths_k);

    struct Element {
      std::int64_t len_q, len_k;
    };
    const auto lengths_of = [](const std::vector<Length>& lengths, std::int64_t head_dim) {
      std::vector<std::int64_t> picked;
      for (const Length& l : lengths) {
        if (l.head_dim == head_dim) picked.push_back(l.length);
      }
      return picked;
    };
    std::vector<std::pair<std::int64_t, std::vector<Element>>> batches, of_head_dims;  // (head dim, its elements)
    constexpr std::size_t kBatch = 3;
    const auto add = [](auto& into, std::int64_t head_dim, std::size_t i, const Element& e) {
      if (i % kBatch == 0) into.push_back({head_dim, {}});
      into.back().second.push_back(e);
    };
    std::vector<std::int64_t> free_q = lengths_of(lengths_q, 0), free_k = lengths_of(lengths_k, 0);
    // A head dim's side that runs short takes the last free length of that
    // side while it has more of them than the other (lengths that would
    // otherwise stand beside random ones), else a random one.
    const auto spare = [&](std::vector<std::int64_t>& own, const std::vector<std::int64_t>& other, std::int64_t tile) {
      if (own.size() <= other.size()) return uniform(1, 2 * tile);
      const std::int64_t length = own.back();
      own.pop_back();
      return length;
    };
    for (const std::int64_t head_dim : kHeadDimLevels) {
      const std::vector<std::int64_t> qs = lengths_of(lengths_q, head_dim), ks = lengths_of(lengths_k, head_dim);
      for (std::size_t i = 0; i < std::max(qs.size(), ks.size()); ++i) {
        const std::int64_t len_q = i < qs.size() ? qs[i] : spare(free_q, free_k, largest.block_m);
        const std::int64_t len_k = i < ks.size() ? ks[i] : spare(free_k, free_q, largest.block_n);
        add(of_head_dims, head_dim, i, {len_q, len_k});
      }
    }
    for (std::size_t i = 0; i < std::max(free_q.size(), free_k.size()); ++i) {
      const std::int64_t len_q = i < free_q.size() ? free_q[i] : uniform(1, 2 * largest.block_m);
      const std::int64_t len_k = i < free_k.size() ? free_k[i] : uniform(1, 2 * largest.block_n);
      add(batches, 0, i, {len_q, len_k});
    }
    batches.insert(batches.end(), of_head_dims.begin(), of_head_dims.end());
    for (std::size_t n = 0; n < batches.size(); ++n) {
      GeneratedCase c = start(direction, kind, "lengths_" + std::to_string(n), true);
      c.target_head_dim = batches[n].first;
      Problem& p = c.problem;
      p.padding.kind = PaddingSpec::Kind::explicit_lengths;
      for (const Element& e : batches[n].second) {
        p.lengths_q.push_back(e.len_q);
        p.lengths_k.push_back(e.len_k);
      }
      p.batch = static_cast<std::int64_t>(p.lengths_q.size());
      p.seqlen_q = *std::max_element(p.lengths_q.begin(), p.lengths_q.end()) + uniform(0, 20);
      p.seqlen_k = *std::max_element(p.lengths_k.begin(), p.lengths_k.end()) + uniform(0, 20);
      p.seqlen_q = std::max<std::int64_t>(p.seqlen_q, 1);
      p.seqlen_k = std::max<std::int64_t>(p.seqlen_k, 1);
      group_.push_back(c);
    }
  }

  // Nq below one query tile with Nk one more than a key tile, and the other way
  // round, for each kernel's tiles (a side whose tile is one row or key takes
  // any length); tiles of one head dim alone in a case of that head dim.
  void size_targets(Direction direction, MaskKind kind) {
    std::set<std::pair<std::int64_t, std::int64_t>> sizes;  // (block_m, block_n)
    for (const KernelUnderTest& k : kernels_under_test()) {
      if (!k.runs_in(direction)) continue;
      for (const Tiling& t : {k.d64, k.d128}) sizes.insert({t.block_m, t.block_n});
    }
    struct Side {
      std::int64_t length;
      std::string label;
    };
    const auto below = [&](std::int64_t tile) {
      return tile > 1 ? Side{uniform(1, tile - 1), "below_" + std::to_string(tile)} : Side{uniform(1, 80), "any"};
    };
    const auto above = [](std::int64_t tile) { return Side{tile + 1, std::to_string(tile + 1)}; };
    for (const auto& [block_m, block_n] : sizes) {
      const auto has_tiles = [block_m = block_m, block_n = block_n](const Tiling& t) {
        return t.block_m == block_m && t.block_n == block_n;
      };
      const std::vector<std::int64_t> head_dims = head_dims_needing(direction, has_tiles);
      for (const std::int64_t head_dim : head_dims) {
        const std::pair<Side, Side> shapes[] = {{below(block_m), above(block_n)}, {above(block_m), below(block_n)}};
        for (const auto& [query, key] : shapes) {
          const std::int64_t seqlen_q = query.length, seqlen_k = key.length;
          const std::string suffix = head_dims.size() > 1 ? "_d" + std::to_string(head_dim) : "";
          GeneratedCase c = start(direction, kind, "size_nq_" + query.label + "_nk_" + key.label + suffix, true);
          c.target_head_dim = head_dim;
          Problem& p = c.problem;
          p.seqlen_q = seqlen_q;
          p.seqlen_k = seqlen_k;
          if (is_window(kind)) {
            p.mask.window_left = uniform(0, seqlen_k);
            p.mask.window_right = uniform(0, seqlen_k);
          }
          if (is_padded(kind)) {
            p.padding.kind = PaddingSpec::Kind::explicit_lengths;
            p.batch = 2;
            p.lengths_q = {seqlen_q, uniform(0, seqlen_q)};
            p.lengths_k = {uniform(0, seqlen_k), seqlen_k};
          }
          group_.push_back(c);
        }
      }
    }
  }

  // The row kernels with their grids lowered to 1 and 3 blocks, so every block
  // takes several rows (and the pointer and conversion kernels several trips).
  void grid_stride_targets(Direction direction, MaskKind kind) {
    for (const std::int64_t cap : {1, 3}) {
      GeneratedCase c = start(direction, kind, "grid_stride_cap_" + std::to_string(cap), true);
      Problem& p = c.problem;
      c.grid_stride_cap = cap;
      p.seqlen_q = uniform(40, 90);
      p.seqlen_k = uniform(40, 90);
      if (is_window(kind)) {
        p.mask.window_left = uniform(0, 30);
        p.mask.window_right = uniform(0, 30);
      }
      if (is_padded(kind)) {
        p.padding.kind = PaddingSpec::Kind::explicit_lengths;
        p.batch = 2;
        p.lengths_q = {p.seqlen_q, uniform(0, p.seqlen_q)};
        p.lengths_k = {uniform(1, p.seqlen_k), p.seqlen_k};
      }
      group_.push_back(c);
    }
  }

  // The covering array's rows in a seed-shuffled order, everyday cases first, so
  // that the everyday part of a group of six or more is pairwise on its own; the
  // factor levels to values with seed-drawn polarity. Within the everyday part
  // and within the rest, a case whose target needs a head dim takes the first
  // row left with that head dim's level, the others the rows left in order:
  // each part keeps its rows, and with them the pairs they cover.
  void assign_factors() {
    std::stable_partition(group_.begin(), group_.end(), [](const GeneratedCase& c) { return c.everyday; });
    std::array<int, kCoveringRows> rows{};
    std::iota(rows.begin(), rows.end(), 0);
    std::shuffle(rows.begin(), rows.end(), random_);
    FactorLevels flip{};
    for (int& f : flip) f = static_cast<int>(uniform(0, 1));
    const auto levels_at = [&](std::size_t position) {
      FactorLevels levels = covering_row(rows[position % kCoveringRows]);
      for (int f = 0; f < kPairwiseFactors; ++f) levels[static_cast<std::size_t>(f)] ^= flip[static_cast<std::size_t>(f)];
      return levels;
    };
    const auto everyday = static_cast<std::size_t>(
        std::count_if(group_.begin(), group_.end(), [](const GeneratedCase& c) { return c.everyday; }));
    std::vector<std::size_t> position(group_.size());
    for (const auto& [first, last] : {std::pair{std::size_t{0}, everyday}, std::pair{everyday, group_.size()}}) {
      std::vector<bool> taken(group_.size(), false);
      const auto take = [&](std::int64_t head_dim) {  // head_dim 0: any; none left with its level: any
        for (const bool any : {false, true}) {
          for (std::size_t j = first; j < last; ++j) {
            if (!taken[j] && (any || head_dim == 0 || kHeadDimLevels[levels_at(j)[1]] == head_dim)) {
              taken[j] = true;
              return j;
            }
          }
        }
        return last;
      };
      for (std::size_t i = first; i < last; ++i) {
        if (group_[i].target_head_dim > 0) position[i] = take(group_[i].target_head_dim);
      }
      for (std::size_t i = first; i < last; ++i) {
        if (group_[i].target_head_dim == 0) position[i] = take(0);
      }
    }
    for (std::size_t i = 0; i < group_.size(); ++i) {
      GeneratedCase& c = group_[i];
      const FactorLevels levels = levels_at(position[i]);
      c.factors = levels;
      Problem& p = c.problem;
      p.dtype = levels[0] ? InputDType::bf16 : InputDType::fp16;
      p.head_dim = kHeadDimLevels[levels[1]];
      p.dropout.probability = levels[2] ? 0.1 : 0.0;
      p.layout = levels[3] ? Layout::bhsd : Layout::bshd;
      p.kv_heads = levels[4] ? 1 : 2;
      if (c.realises_shift) fit_query_length(c.direction, p);
      if (p.padding.kind == PaddingSpec::Kind::none) resolve_lengths(p);
    }
  }

  std::mt19937_64 random_;
  std::vector<GeneratedCase> group_;
  std::vector<GeneratedCase> cases_;
};

inline std::vector<GeneratedCase> generated_cases(std::uint64_t seed) { return ShapeGenerator(seed).generate(); }

// ---- The positions a case puts an edge at --------------------------------------------
// A position is "<kernel>/<direction>/<mask kind>/<edge>/<where>": a mask edge
// as "<residue>%<modulus>", a valid length as "<unit>k<offset>" or "0", a
// sequence length as "Nq<tile", "Nq=tile+1" (and Nk).

inline std::string position_prefix(const KernelUnderTest& k, Direction direction, MaskKind kind) {
  return k.name + "/" + (direction == Direction::fwd ? "fwd" : "fwdbwd") + "/" + mask_kind_name(kind) + "/";
}
inline std::string residue_position(std::int64_t value, std::int64_t modulus) {
  return std::to_string(positive_modulo(value, modulus)) + "%" + std::to_string(modulus);
}
inline std::string length_position(int unit, int offset) {
  return std::to_string(unit) + "k" + (offset < 0 ? "-1" : offset > 0 ? "+1" : "");
}

// Every position of `c` that kernel `k` meets (k runs in c's direction),
// computed from the problem; mask edges as residues modulo `modulus`.
inline std::set<std::string> positions_hit(const GeneratedCase& c, const KernelUnderTest& k, std::int64_t modulus) {
  std::set<std::string> positions;
  const Problem& p = c.problem;
  const std::string prefix = position_prefix(k, c.direction, c.kind);
  const Tiling& t = k.tiling(p.head_dim);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t len_q = p.length_q(b), len_k = p.length_k(b);
    const std::int64_t shift = mask_shift(p.mask, len_q, len_k);
    if (is_causal(c.kind)) positions.insert(prefix + "shift/" + residue_position(len_k - len_q, modulus));
    if (is_window(c.kind)) {
      positions.insert(prefix + "left/" + residue_position(shift - p.mask.window_left, modulus));
      positions.insert(prefix + "right/" + residue_position(shift + p.mask.window_right, modulus));
    }
    if (is_padded(c.kind)) {
      for (const int offset : {-1, 0, 1}) {
        for (const int unit : {t.warp_rows, t.block_m}) {
          if (unit > 1 && len_q >= unit + offset && positive_modulo(len_q - offset, unit) == 0) {
            positions.insert(prefix + "length_q/" + length_position(unit, offset));
          }
        }
        for (const int unit : {t.warp_keys, t.block_n}) {
          if (unit > 1 && len_k >= unit + offset && positive_modulo(len_k - offset, unit) == 0) {
            positions.insert(prefix + "length_k/" + length_position(unit, offset));
          }
        }
      }
      if (len_q == 0) positions.insert(prefix + "length_q/0");
      if (len_k == 0) positions.insert(prefix + "length_k/0");
    }
  }
  if (p.seqlen_q < t.block_m) positions.insert(prefix + "size/Nq<" + std::to_string(t.block_m));
  if (p.seqlen_q == t.block_m + 1) positions.insert(prefix + "size/Nq=" + std::to_string(t.block_m + 1));
  if (p.seqlen_k < t.block_n) positions.insert(prefix + "size/Nk<" + std::to_string(t.block_n));
  if (p.seqlen_k == t.block_n + 1) positions.insert(prefix + "size/Nk=" + std::to_string(t.block_n + 1));
  return positions;
}

// The positions kernel `k` must see in `direction` under mask kind `kind`: each
// of `residues` modulo `modulus` for every mask edge of the kind, and every
// length and size edge of its tilings.
inline std::set<std::string> positions_required(const KernelUnderTest& k, Direction direction, MaskKind kind,
                                                const std::vector<std::int64_t>& residues, std::int64_t modulus) {
  std::set<std::string> positions;
  const std::string prefix = position_prefix(k, direction, kind);
  for (const std::int64_t r : residues) {
    if (is_causal(kind)) positions.insert(prefix + "shift/" + residue_position(r, modulus));
    if (is_window(kind)) {
      positions.insert(prefix + "left/" + residue_position(r, modulus));
      positions.insert(prefix + "right/" + residue_position(r, modulus));
    }
  }
  for (const Tiling& t : {k.d64, k.d128}) {
    if (is_padded(kind)) {
      for (const int offset : {-1, 0, 1}) {
        for (const int unit : {t.warp_rows, t.block_m}) {
          if (unit > 1) positions.insert(prefix + "length_q/" + length_position(unit, offset));
        }
        for (const int unit : {t.warp_keys, t.block_n}) {
          if (unit > 1) positions.insert(prefix + "length_k/" + length_position(unit, offset));
        }
      }
      positions.insert(prefix + "length_q/0");
      positions.insert(prefix + "length_k/0");
    }
    if (t.block_m > 1) positions.insert(prefix + "size/Nq<" + std::to_string(t.block_m));
    positions.insert(prefix + "size/Nq=" + std::to_string(t.block_m + 1));
    if (t.block_n > 1) positions.insert(prefix + "size/Nk<" + std::to_string(t.block_n));
    positions.insert(prefix + "size/Nk=" + std::to_string(t.block_n + 1));
  }
  return positions;
}

}  // namespace attnbench::test
