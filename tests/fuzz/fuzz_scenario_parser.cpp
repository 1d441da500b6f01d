// libFuzzer target: scenario files as users and scripts write them, mutated.
// Whatever the text, parse_scenario must return (diagnostics or cases) without
// a crash, a sanitizer report or an exception other than what it documents;
// for every small case it accepts, the closed-form counts behind FLOPs and the
// fused traffic model must equal their row-by-row and tile-by-tile definitions.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/common/mask_sums.hpp"
#include "harness/scenario/scenario.hpp"

namespace {

using namespace attnbench;

[[noreturn]] void mismatch(const char* what, const Problem& p) {
  std::fprintf(stderr, "closed form differs from the definition (%s) on %s\n", what, case_key(p).c_str());
  std::abort();
}

void check_against_definitions(const Problem& p) {
  std::int64_t pairs = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t i = 0; i < p.seqlen_q; ++i) pairs += visible_keys(p.mask, i, p.length_q(b), p.length_k(b)).size();
  }
  if (visible_pairs(p) != pairs * p.heads) mismatch("visible pairs", p);

  const std::int64_t block_m = p.tile.block_q > 0 ? p.tile.block_q : 64;
  const std::int64_t block_n = p.tile.block_k > 0 ? p.tile.block_k : 64;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t len_q = p.length_q(b), len_k = p.length_k(b);
    std::int64_t query_rows = 0, key_rows = 0, pair_rows = 0;
    for (std::int64_t row = 0; row < p.seqlen_q; row += block_m) {
      const std::int64_t rows = std::min(block_m, p.seqlen_q - row);
      const KeyRange bound = visible_key_bound(p.mask, row, row + rows, len_q, len_k);
      if (bound.empty()) continue;
      const std::int64_t first = bound.begin / block_n, end = (bound.end + block_n - 1) / block_n;
      query_rows += rows;
      key_rows += std::min(end * block_n, p.seqlen_k) - first * block_n;
      pair_rows += rows * (end - first);
    }
    const TileVisits visits = tile_visits(p.mask, p.seqlen_q, p.seqlen_k, len_q, len_k, block_m, block_n);
    if (visits.query_rows != query_rows || visits.key_rows != key_rows || visits.pair_rows != pair_rows) {
      mismatch("visited tiles", p);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<Diagnostic> diagnostics;
  const Scenario scenario = parse_scenario(text, "fuzz.json", diagnostics);
  if (!diagnostics.empty()) {
    const InputError error(diagnostics);  // collapsing and formatting every message
    for (const Diagnostic& diagnostic : error.diagnostics()) (void)diagnostic.format();
    return 0;
  }
  for (const ScenarioCase& scenario_case : scenario.cases) {
    const Problem& p = scenario_case.problem;
    if (p.batch * p.seqlen_q <= 4096) check_against_definitions(p);  // the definitions loop over rows
  }
  return 0;
}
