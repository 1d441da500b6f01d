// The analytic HBM-traffic models of the results file (docs/io-models.md):
// the paper's count for the standard (materializing) algorithm, Θ(N·d + N²)
// per head, and for the fused one, Θ(N²·d²/M) with M the on-chip bytes of one
// CTA (or tile set), each spelled out per tensor with the storage widths the
// implementation really uses. An implementation picks its model and widths in
// Implementation::modelled_traffic(); the record carries it beside the
// measured (CUPTI) or counted (CPU) bytes, with their ratio.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/common/problem.hpp"

namespace attnbench {

// Bytes one tensor contributes in one pass.
struct TrafficTerm {
  std::string pass;    // "forward" or "backward"
  std::string tensor;  // "Q", "S", "P", "dO", …
  double read = 0;
  double write = 0;
};

struct TrafficModel {
  std::string algorithm;                                                 // "standard" or "fused"
  std::string formula;                                                   // the closed form, as text
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // widths, tiles, M
  std::vector<TrafficTerm> terms;

  ByteCount bytes() const;
  nlohmann::ordered_json to_json() const;
};

// Storage widths in bytes of the materializing algorithm's tensors.
struct StandardWidths {
  int input = 2;          // Q, K, V, dO
  int output = 2;         // O, dQ, dK, dV
  int scores = 4;         // S (and dP, dS in the backward)
  int probabilities = 2;  // P (P̃ with dropout)
};

// The paper's Algorithm 0 (forward) and Algorithm 3 (backward) on the padded
// Nq × Nk grid of every (batch, query head): each tensor read or written in
// full, once per use. K and V are read once per query head.
TrafficModel standard_traffic(const Problem& problem, const StandardWidths& widths);

// Which loop of the fused forward is outermost.
enum class FusedLoopOrder {
  query_outer,  // FlashAttention-2: a CTA keeps its Q tile and O accumulator on chip; K, V re-read per query tile
  key_outer,    // FlashAttention (Algorithm 1): K, V read once; Q, O, l, m re-read and O, l, m re-written per key tile
};

struct FusedTiling {
  FusedLoopOrder forward_order = FusedLoopOrder::query_outer;
  std::int64_t block_m = 64;      // query rows per tile (B_r)
  std::int64_t block_n = 64;      // keys per tile (B_c)
  std::int64_t shared_bytes = 0;  // M: on-chip bytes of one CTA or tile set (recorded; 0 if not applicable)
  int input = 2;                  // Q, K, V, dO
  int output = 2;                 // O, dQ, dK, dV
  int accumulator = 4;            // O, dQ carried through HBM between tiles (key_outer forward; the backward)
};

// The fused algorithm with its real tiles: a (query tile, key tile) pair is
// visited when some row of the query tile sees a key of the key tile
// (visible_key_bound, the rule the kernels skip tiles by), per batch element.
// Forward, query_outer: Q read once per visited query tile; K, V rows of each
// visited key tile read once per query tile; O written in full, LSE (fp32) too.
// Forward, key_outer: O, l, m initialised; K, V of each visited key tile read
// once; per visited pair Q, O, l, m read and O, l, m written; then l, m read
// and LSE written. Backward (FlashAttention's Algorithm 4 order, key tiles
// outer, per kv head): dQ zeroed; K, V of each visited key tile read once; per
// visited pair and query head Q, dO (input width), O, dQ (accumulator width)
// and LSE read and dQ written; dK, dV written once.
TrafficModel fused_traffic(const Problem& problem, const FusedTiling& tiling);

// modelled / other for the record's side-by-side ratios; null without both.
nlohmann::ordered_json traffic_ratio(const nlohmann::ordered_json& bytes, const std::optional<TrafficModel>& model);

}  // namespace attnbench
