#include "harness/measure/traffic_model.hpp"

#include <algorithm>

#include "harness/common/mask_sums.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

// Adds bytes to the (pass, tensor) term, creating it in first-use order.
class TermList {
 public:
  explicit TermList(std::vector<TrafficTerm>& terms) : terms_(terms) {}
  void add(const std::string& pass, const std::string& tensor, double read, double write) {
    for (TrafficTerm& term : terms_) {
      if (term.pass == pass && term.tensor == tensor) {
        term.read += read;
        term.write += write;
        return;
      }
    }
    terms_.push_back(TrafficTerm{pass, tensor, read, write});
  }

 private:
  std::vector<TrafficTerm>& terms_;
};

double as_double(std::int64_t value) { return static_cast<double>(value); }

}  // namespace

TrafficModel standard_traffic(const Problem& p, const StandardWidths& w) {
  TrafficModel model;
  model.algorithm = "standard";
  model.formula =
      "per (batch, query head): forward (Nq + 2 Nk) d e_in + 2 Nq Nk (e_S + e_P) + Nq (d e_out + 4); "
      "backward (3 Nq + 2 Nk) d e_in + Nq Nk (2 e_P + 5 e_S) + (Nq + 2 Nk) d e_out";
  model.parameters = Json{
      {"widths", {{"input", w.input}, {"output", w.output}, {"scores", w.scores}, {"probabilities", w.probabilities}}},
      {"grid", "padded seqlen_q x seqlen_k, every batch element and query head"}};
  const double heads = as_double(p.batch * p.heads);
  const double nq = as_double(p.seqlen_q), nk = as_double(p.seqlen_k), d = as_double(p.head_dim);
  const double in = w.input, out = w.output, s = w.scores, pr = w.probabilities;
  const double grid = nq * nk;
  TermList terms(model.terms);
  if (has_forward(p.direction)) {
    const std::string pass = "forward";
    terms.add(pass, "Q", heads * nq * d * in, 0);  // S = τ Q Kᵀ
    terms.add(pass, "K", heads * nk * d * in, 0);
    terms.add(pass, "S", heads * grid * s, heads * grid * s);    // written, read by the softmax
    terms.add(pass, "P", heads * grid * pr, heads * grid * pr);  // written, read by O = P V
    terms.add(pass, "V", heads * nk * d * in, 0);
    terms.add(pass, "O", 0, heads * nq * d * out);
    terms.add(pass, "LSE", 0, heads * nq * 4);
  }
  if (has_backward(p.direction)) {
    const std::string pass = "backward";
    terms.add(pass, "P", 2 * heads * grid * pr, 0);     // dV = Pᵀ dO; dS = P ∘ (dP − D)
    terms.add(pass, "dO", 2 * heads * nq * d * in, 0);  // dV; dP = dO Vᵀ
    terms.add(pass, "V", heads * nk * d * in, 0);
    terms.add(pass, "dP", heads * grid * s, heads * grid * s);
    terms.add(pass, "dS", 2 * heads * grid * s, heads * grid * s);  // read by dQ = dS K and dK = dSᵀ Q
    terms.add(pass, "K", heads * nk * d * in, 0);
    terms.add(pass, "Q", heads * nq * d * in, 0);
    terms.add(pass, "dQ", 0, heads * nq * d * out);
    terms.add(pass, "dK", 0, heads * nk * d * out);
    terms.add(pass, "dV", 0, heads * nk * d * out);
  }
  return model;
}

namespace {

const char* to_string(FusedLoopOrder order) {
  return order == FusedLoopOrder::query_outer ? "query_outer" : "key_outer";
}

}  // namespace

TrafficModel fused_traffic(const Problem& p, const FusedTiling& t) {
  TrafficModel model;
  model.algorithm = "fused";
  model.formula =
      t.forward_order == FusedLoopOrder::query_outer
          ? "per (batch, query head): forward Nq d e_in + 2 d e_in K_vis + Nq (d e_out + 4), K_vis = key rows of the "
            "key tiles each query tile visits, summed over query tiles (unmasked: Nk ceil(Nq / block_m), "
            "block_m ~ M / d: Theta(N^2 d^2 / M))"
          : "per (batch, query head): forward Nq (d e_acc + 8) + 2 d e_in K_head + R_pairs (d e_in + 2 d e_acc + 16) "
            "+ 12 Nq, R_pairs = query rows summed over visited (query tile, key tile) pairs (unmasked: Nq ceil(Nk / "
            "block_n), block_n ~ M / (4 d): Theta(N^2 d^2 / M))";
  model.formula +=
      "; backward per (batch, kv head): G Nq d e_acc + 2 d e_in K_head + G R_pairs (2 d e_in + 3 d e_acc + 4) "
      "+ 2 Nk d e_out, G = query heads per kv head";
  model.parameters = Json{{"loop_order", to_string(t.forward_order)},
                          {"block_m", t.block_m},
                          {"block_n", t.block_n},
                          {"shared_bytes_per_cta", t.shared_bytes},
                          {"widths", {{"input", t.input}, {"output", t.output}, {"accumulator", t.accumulator}}}};
  const double d = as_double(p.head_dim), nq = as_double(p.seqlen_q), nk = as_double(p.seqlen_k);
  const double in = t.input, out = t.output, acc = t.accumulator;
  TermList terms(model.terms);
  // Batch elements with the same valid lengths visit the same tiles.
  for (const LengthGroup& group : length_groups(p)) {
    const TileVisits visits =
        tile_visits(p.mask, p.seqlen_q, p.seqlen_k, group.length_q, group.length_k, t.block_m, t.block_n);
    const double elements = as_double(group.count);
    const double query_rows = as_double(visits.query_rows), key_rows = as_double(visits.key_rows);
    const double pair_rows = as_double(visits.pair_rows), head_key_rows = as_double(visits.head_key_rows);
    const double heads = elements * as_double(p.heads), kv_heads = elements * as_double(p.kv_heads);
    if (has_forward(p.direction)) {
      const std::string pass = "forward";
      if (t.forward_order == FusedLoopOrder::query_outer) {
        terms.add(pass, "Q", heads * query_rows * d * in, 0);
        terms.add(pass, "K", heads * key_rows * d * in, 0);
        terms.add(pass, "V", heads * key_rows * d * in, 0);
        terms.add(pass, "O", 0, heads * nq * d * out);
        terms.add(pass, "LSE", 0, heads * nq * 4);
      } else {
        terms.add(pass, "K", heads * head_key_rows * d * in, 0);
        terms.add(pass, "V", heads * head_key_rows * d * in, 0);
        terms.add(pass, "Q", heads * pair_rows * d * in, 0);
        terms.add(pass, "O", heads * pair_rows * d * acc, heads * (nq + pair_rows) * d * acc);
        terms.add(pass, "l, m", heads * (pair_rows + nq) * 8, heads * (nq + pair_rows) * 8);
        terms.add(pass, "LSE", 0, heads * nq * 4);
      }
    }
    if (has_backward(p.direction)) {
      const std::string pass = "backward";
      terms.add(pass, "K", kv_heads * head_key_rows * d * in, 0);
      terms.add(pass, "V", kv_heads * head_key_rows * d * in, 0);
      terms.add(pass, "Q", heads * pair_rows * d * in, 0);
      terms.add(pass, "dO", heads * pair_rows * d * in, 0);
      terms.add(pass, "O", heads * pair_rows * d * acc, 0);
      terms.add(pass, "LSE", heads * pair_rows * 4, 0);
      terms.add(pass, "dQ", heads * pair_rows * d * acc, heads * (nq + pair_rows) * d * acc);
      terms.add(pass, "dK", 0, kv_heads * nk * d * out);
      terms.add(pass, "dV", 0, kv_heads * nk * d * out);
    }
  }
  return model;
}

Json traffic_ratio(const Json& bytes, const std::optional<TrafficModel>& model) {
  if (!model || !bytes.is_object() || !bytes.contains("read_bytes") || !bytes.contains("write_bytes") ||
      !bytes["read_bytes"].is_number() || !bytes["write_bytes"].is_number()) {
    return nullptr;
  }
  const ByteCount modelled = model->bytes();
  const double read = bytes["read_bytes"].get<double>(), write = bytes["write_bytes"].get<double>();
  const auto ratio = [](double value, double reference) { return reference > 0 ? Json(value / reference) : Json(); };
  return Json{{"read", ratio(read, modelled.read)},
              {"write", ratio(write, modelled.write)},
              {"total", ratio(read + write, modelled.total())}};
}

}  // namespace attnbench
