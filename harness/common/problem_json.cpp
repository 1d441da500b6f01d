#include "harness/common/problem_json.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

Json problem_to_json(const Problem& p) {
  Json padding;
  switch (p.padding.kind) {
    case PaddingSpec::Kind::none:
      padding = Json{{"kind", "none"}};
      break;
    case PaddingSpec::Kind::explicit_lengths:
      padding = Json{{"kind", "explicit"}};
      break;
    case PaddingSpec::Kind::random:
      padding = Json{{"kind", "random"},
                     {"shortfall", {p.padding.shortfall_min, p.padding.shortfall_max}},
                     {"seed", p.padding.seed}};
      break;
  }
  // Every element's lengths when they differ from the full ones; none without padding.
  if (p.padding.kind != PaddingSpec::Kind::none) {
    Json lengths_q = Json::array(), lengths_k = Json::array();
    for (std::int64_t b = 0; b < p.batch; ++b) {
      lengths_q.push_back(p.length_q(b));
      lengths_k.push_back(p.length_k(b));
    }
    padding["lengths_q"] = std::move(lengths_q);
    padding["lengths_k"] = std::move(lengths_k);
  }

  Json window = nullptr;
  if (p.mask.window_left >= 0 || p.mask.window_right >= 0) {
    window = Json::array({p.mask.window_left, p.mask.window_right});
  }
  Json input{{"distribution", to_string(p.input.distribution)}};
  if (p.input.distribution == Distribution::normal) {
    input["mean"] = p.input.a;
    input["std"] = p.input.b;
  } else {
    input["low"] = p.input.a;
    input["high"] = p.input.b;
  }
  input["seed"] = p.input.seed;

  return Json{{"batch", p.batch},
              {"heads", p.heads},
              {"kv_heads", p.kv_heads},
              {"seqlen_q", p.seqlen_q},
              {"seqlen_k", p.seqlen_k},
              {"head_dim", p.head_dim},
              {"dtype", to_string(p.dtype)},
              {"layout", to_string(p.layout)},
              {"causal", p.mask.causal},
              {"window", window},
              {"align", p.mask.bottom_right ? "bottom_right" : "top_left"},
              {"padding", padding},
              {"dropout", {{"p", p.dropout.probability}, {"seed", p.dropout.seed}, {"offset", p.dropout.offset}}},
              {"scale", p.softmax_scale()},
              {"scale_is_default", !p.scale.has_value()},
              {"direction", to_string(p.direction)},
              {"input", input},
              {"block_q", p.tile.block_q ? Json(p.tile.block_q) : Json(nullptr)},
              {"block_k", p.tile.block_k ? Json(p.tile.block_k) : Json(nullptr)}};
}

Json flops_to_json(const Problem& p) {
  const FlopCount flops = flop_count(p);
  return Json{{"visible_pairs", visible_pairs(p)},
              {"forward", flops.forward},
              {"backward", flops.backward},
              {"total", flops.total}};
}

bool problem_matches(const nlohmann::ordered_json& where, const nlohmann::ordered_json& problem) {
  for (const auto& [key, wanted] : where.items()) {
    if (key == "seqlen") {
      if (problem["seqlen_q"] != wanted || problem["seqlen_k"] != wanted) return false;
      continue;
    }
    if (!problem.contains(key)) return false;
    const nlohmann::ordered_json& actual = problem[key];
    const bool by_probability = actual.is_object() && actual.contains("p") && wanted.is_number();
    if ((by_probability ? actual["p"] : actual) != wanted) return false;
  }
  return true;
}

}  // namespace attnbench
