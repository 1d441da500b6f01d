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

#include "harness/common/modelled_traffic.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

// The paper's Algorithm 0 (forward) and Algorithm 3 (backward) on the padded
// Nq × Nk grid of every (batch, query head): each tensor read or written in
// full, once per use. K and V are read once per query head.
TrafficModel standard_traffic(const Problem& problem, const StandardWidths& widths);

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
