// What an analytic HBM-traffic model is made of (docs/io-models.md): the
// per-tensor terms and their total, and the storage widths and tiles an
// implementation really uses, which pick the model's parameters. They sit on
// the floor because the Implementation interface (harness/implementation.hpp)
// returns a TrafficModel and the implementations describe their tiles with
// these types; the models themselves are computed by the measure stage
// (harness/measure/traffic_model.hpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
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

}  // namespace attnbench
