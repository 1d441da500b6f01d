#include "harness/measure/accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "baselines/cpu_reference.hpp"
#include "harness/format.hpp"

namespace attnbench {
namespace {

// SplitMix64: a small deterministic generator, so the sample is the same on
// every platform for a given seed.
class SampleRng {
 public:
  explicit SampleRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::int64_t below(std::int64_t bound) {
    return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(bound));
  }

 private:
  std::uint64_t state_;
};

// The first `count` entries of a seeded random permutation of 0..n-1.
std::vector<std::int64_t> seeded_choice(std::int64_t n, std::int64_t count, SampleRng& rng) {
  std::vector<std::int64_t> items(static_cast<std::size_t>(n));
  std::iota(items.begin(), items.end(), 0);
  count = std::min(count, n);
  for (std::int64_t i = 0; i < count; ++i) {
    std::swap(items[static_cast<std::size_t>(i)], items[static_cast<std::size_t>(i + rng.below(n - i))]);
  }
  items.resize(static_cast<std::size_t>(count));
  return items;
}

// Sampled rows always include the first and last row, where masks and padding
// have their edges.
std::vector<std::int64_t> sample_rows(std::int64_t seqlen_q, std::int64_t count, SampleRng& rng) {
  if (count >= seqlen_q) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(seqlen_q));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  std::vector<std::int64_t> rows{0};
  if (count >= 2) rows.push_back(seqlen_q - 1);
  if (count > 2) {
    for (std::int64_t row : seeded_choice(seqlen_q - 2, count - 2, rng)) rows.push_back(row + 1);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

nlohmann::ordered_json SamplePlan::describe() const {
  std::size_t rows = 0;
  for (const auto& sample : query) rows += sample.rows.size();
  return nlohmann::ordered_json{{"complete", complete},
                                {"query_heads", query.size()},
                                {"query_rows", rows},
                                {"kv_heads", key.size()},
                                {"key_side_checked", key_side_checked},
                                {"oracle_macs", oracle_macs}};
}

SamplePlan plan_sample(const Problem& p, const AccuracySettings& settings) {
  SamplePlan plan;
  const bool backward = has_backward(p.direction);
  const double row_macs = (backward ? 4.0 : 2.0) * static_cast<double>(p.seqlen_k * p.head_dim);
  const double group_macs =
      5.0 * static_cast<double>(p.head_group() * p.seqlen_q * p.seqlen_k * p.head_dim);
  const double all_query_macs = static_cast<double>(p.batch * p.heads * p.seqlen_q) * row_macs;
  const double all_key_macs = backward ? static_cast<double>(p.batch * p.kv_heads) * group_macs : 0.0;
  SampleRng rng(settings.seed);

  const double query_budget = backward ? settings.max_oracle_macs / 2 : settings.max_oracle_macs;
  const double key_budget = settings.max_oracle_macs - query_budget;
  const bool whole = all_query_macs + all_key_macs <= settings.max_oracle_macs;

  // Query side: every row of every head, or up to 8 heads with as many rows as
  // the budget allows.
  if (whole || all_query_macs <= query_budget) {
    for (std::int64_t b = 0; b < p.batch; ++b) {
      for (std::int64_t h = 0; h < p.heads; ++h) {
        plan.query.push_back({b, h, sample_rows(p.seqlen_q, p.seqlen_q, rng)});
      }
    }
  } else {
    const std::int64_t heads = std::min<std::int64_t>(p.batch * p.heads, 8);
    const auto rows = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(query_budget / (static_cast<double>(heads) * row_macs)), 1, p.seqlen_q);
    for (std::int64_t flat : seeded_choice(p.batch * p.heads, heads, rng)) {
      plan.query.push_back({flat / p.heads, flat % p.heads, sample_rows(p.seqlen_q, rows, rng)});
    }
  }

  // Key side: whole kv heads, as many as the budget allows.
  if (backward) {
    std::int64_t groups = p.batch * p.kv_heads;
    if (!whole) groups = std::min<std::int64_t>(groups, static_cast<std::int64_t>(key_budget / group_macs));
    plan.key_side_checked = groups > 0;
    for (std::int64_t flat : seeded_choice(p.batch * p.kv_heads, groups, rng)) {
      plan.key.push_back({flat / p.kv_heads, flat % p.kv_heads});
    }
    std::sort(plan.key.begin(), plan.key.end(), [](const auto& a, const auto& b) {
      return std::tie(a.batch, a.kv_head) < std::tie(b.batch, b.kv_head);
    });
  }
  std::sort(plan.query.begin(), plan.query.end(), [](const auto& a, const auto& b) {
    return std::tie(a.batch, a.head) < std::tie(b.batch, b.head);
  });

  std::size_t rows = 0;
  for (const auto& sample : plan.query) rows += sample.rows.size();
  plan.oracle_macs = static_cast<double>(rows) * row_macs + static_cast<double>(plan.key.size()) * group_macs;
  plan.complete = rows == static_cast<std::size_t>(p.batch * p.heads * p.seqlen_q) &&
                  (!backward || plan.key.size() == static_cast<std::size_t>(p.batch * p.kv_heads));
  return plan;
}

OracleSample compute_oracle(const Problem& p, const AttentionBuffers& inputs, const SamplePlan& plan,
                            int threads) {
  OracleSample oracle;
  oracle.plan = plan;
  const bool backward = has_backward(p.direction);
  const auto query_count = static_cast<std::int64_t>(plan.query.size());
  const auto key_count = static_cast<std::int64_t>(plan.key.size());
  oracle.out.resize(plan.query.size());
  oracle.lse.resize(plan.query.size());
  oracle.d_q.resize(plan.query.size());
  oracle.d_k.resize(plan.key.size());
  oracle.d_v.resize(plan.key.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic)
  for (std::int64_t unit = 0; unit < query_count + key_count; ++unit) {
    if (unit < query_count) {
      const auto index = static_cast<std::size_t>(unit);
      const QueryRowSample& sample = plan.query[index];
      ReferenceRows rows = reference_query_rows(p, inputs, sample.batch, sample.head, sample.rows, backward);
      oracle.out[index] = std::move(rows.out);
      oracle.lse[index] = std::move(rows.lse);
      oracle.d_q[index] = std::move(rows.d_q);
    } else {
      const auto index = static_cast<std::size_t>(unit - query_count);
      const KeyHeadSample& sample = plan.key[index];
      ReferenceKeyGradients gradients = reference_key_gradients(p, inputs, sample.batch, sample.kv_head);
      oracle.d_k[index] = std::move(gradients.d_k);
      oracle.d_v[index] = std::move(gradients.d_v);
    }
  }
  return oracle;
}

namespace {

class ErrorAccumulator {
 public:
  void add(double value, double reference) {
    ++error_.checked;
    if (!std::isfinite(reference)) {
      ++error_.oracle_nonfinite;
      return;
    }
    error_.oracle_max_abs = std::max(error_.oracle_max_abs, std::abs(reference));
    if (std::isnan(value)) {
      ++error_.nan;
      return;
    }
    if (std::isinf(value)) {
      ++error_.inf;
      return;
    }
    const double difference = std::abs(value - reference);
    error_.max_abs_error = std::max(error_.max_abs_error, difference);
    sum_abs_ += difference;
    sum_squared_error_ += difference * difference;
    sum_squared_reference_ += reference * reference;
    ++finite_;
  }

  // LSE: -inf marks a row with no visible key and must match exactly.
  void add_lse(double value, double reference) {
    const bool value_empty = value == -std::numeric_limits<double>::infinity();
    const bool reference_empty = reference == -std::numeric_limits<double>::infinity();
    if (value_empty && reference_empty) {
      ++error_.checked;
      ++finite_;
      return;
    }
    if (value_empty != reference_empty && !std::isnan(value)) {
      ++error_.checked;
      ++error_.infinity_mismatch;
      return;
    }
    if (reference_empty) {  // and the value is NaN: a row never written
      ++error_.checked;
      ++error_.nan;
      return;
    }
    add(value, reference);
  }

  TensorError result() const {
    TensorError out = error_;
    if (finite_ > 0) out.mean_abs_error = sum_abs_ / static_cast<double>(finite_);
    out.relative_l2_error = sum_squared_reference_ > 0
                                ? std::sqrt(sum_squared_error_ / sum_squared_reference_)
                                : std::sqrt(sum_squared_error_);
    return out;
  }

 private:
  TensorError error_;
  double sum_abs_ = 0;
  double sum_squared_error_ = 0;
  double sum_squared_reference_ = 0;
  std::size_t finite_ = 0;
};

bool tensor_is_clean(const TensorError& error) {
  return error.nan == 0 && error.inf == 0 && error.infinity_mismatch == 0 && error.oracle_nonfinite == 0;
}

TensorVerdict judge(std::string name, const TensorError& error, ElementType type,
                    const AccuracySettings& settings) {
  TensorVerdict verdict;
  verdict.tensor = std::move(name);
  verdict.error = error;
  verdict.bound = settings.bound.at(type) * std::max(1.0, error.oracle_max_abs);
  verdict.passed = tensor_is_clean(error) && error.max_abs_error <= verdict.bound;
  return verdict;
}

std::string describe_failure(const TensorVerdict& verdict, const std::string& baseline) {
  std::ostringstream out;
  out << verdict.tensor << ": ";
  const TensorError& e = verdict.error;
  if (e.oracle_nonfinite) out << e.oracle_nonfinite << " oracle values overflow (the problem is beyond fp64)";
  else if (e.nan) out << e.nan << " NaN of " << e.checked << " checked";
  else if (e.inf) out << e.inf << " infinite of " << e.checked << " checked";
  else if (e.infinity_mismatch) out << e.infinity_mismatch << " rows disagree on having a visible key";
  else if (verdict.rule_limit && e.max_abs_error > *verdict.rule_limit)
    out << "max abs error " << format_scientific(e.max_abs_error) << " > "
        << format_scientific(*verdict.rule_limit) << " (2 x " << baseline << "'s error + floor)";
  else
    out << "max abs error " << format_scientific(e.max_abs_error) << " > bound "
        << format_scientific(verdict.bound);
  return out.str();
}

void settle_status(AccuracyResult& result) {
  std::vector<std::string> failures;
  for (const auto& verdict : result.tensors) {
    if (!verdict.passed) failures.push_back(describe_failure(verdict, result.baseline));
  }
  if (!result.note.empty()) failures.push_back(result.note);
  result.status = std::all_of(result.tensors.begin(), result.tensors.end(),
                              [](const TensorVerdict& v) { return v.passed; })
                      ? "passed"
                      : "failed";
  result.reason.clear();
  for (std::size_t i = 0; i < failures.size(); ++i) result.reason += (i ? "; " : "") + failures[i];
}

}  // namespace

AccuracyResult check_outputs(const Problem& p, const AttentionBuffers& outputs,
                             const OracleSample& oracle, const AccuracySettings& settings) {
  AccuracyResult result;
  result.sample = oracle.plan.describe();
  const bool backward = has_backward(p.direction);
  const std::int64_t d = p.head_dim;
  ErrorAccumulator out_error, lse_error, dq_error, dk_error, dv_error;

  for (std::size_t s = 0; s < oracle.plan.query.size(); ++s) {
    const QueryRowSample& sample = oracle.plan.query[s];
    const TensorStrides strides = q_strides(p);
    for (std::size_t r = 0; r < sample.rows.size(); ++r) {
      const std::int64_t row = sample.rows[r];
      const auto lse_at = static_cast<std::size_t>(lse_index(p, sample.batch, sample.head, row));
      lse_error.add_lse(load_as_double(outputs.lse.data, outputs.lse.type, lse_at), oracle.lse[s][r]);
      for (std::int64_t c = 0; c < d; ++c) {
        const auto at = static_cast<std::size_t>(strides.offset(sample.batch, row, sample.head) + c);
        const std::size_t ref = r * static_cast<std::size_t>(d) + static_cast<std::size_t>(c);
        out_error.add(load_as_double(outputs.out.data, outputs.out.type, at), oracle.out[s][ref]);
        if (backward) dq_error.add(load_as_double(outputs.d_q.data, outputs.d_q.type, at), oracle.d_q[s][ref]);
      }
    }
  }
  for (std::size_t s = 0; s < oracle.plan.key.size(); ++s) {
    const KeyHeadSample& sample = oracle.plan.key[s];
    const TensorStrides strides = kv_strides(p);
    for (std::int64_t row = 0; row < p.seqlen_k; ++row) {
      for (std::int64_t c = 0; c < d; ++c) {
        const auto at = static_cast<std::size_t>(strides.offset(sample.batch, row, sample.kv_head) + c);
        const auto ref = static_cast<std::size_t>(row * d + c);
        dk_error.add(load_as_double(outputs.d_k.data, outputs.d_k.type, at), oracle.d_k[s][ref]);
        dv_error.add(load_as_double(outputs.d_v.data, outputs.d_v.type, at), oracle.d_v[s][ref]);
      }
    }
  }

  const ElementType type = outputs.out.type;
  result.tensors.push_back(judge("O", out_error.result(), type, settings));
  result.tensors.push_back(judge("LSE", lse_error.result(), outputs.lse.type, settings));
  if (backward) {
    result.tensors.push_back(judge("dQ", dq_error.result(), type, settings));
    if (oracle.plan.key_side_checked) {
      result.tensors.push_back(judge("dK", dk_error.result(), type, settings));
      result.tensors.push_back(judge("dV", dv_error.result(), type, settings));
    }
  }
  if (backward && !oracle.plan.key_side_checked) {
    result.note =
        "dK and dV not checked: one kv head needs more oracle work than accuracy.max_oracle_macs allows";
  }
  settle_status(result);
  return result;
}

void apply_baseline_rule(AccuracyResult& fused, const AccuracyResult& baseline,
                         ElementType fused_output_type, const AccuracySettings& settings) {
  for (auto& verdict : fused.tensors) {
    const auto match = std::find_if(baseline.tensors.begin(), baseline.tensors.end(),
                                    [&](const TensorVerdict& b) { return b.tensor == verdict.tensor; });
    if (match == baseline.tensors.end() || !tensor_is_clean(match->error)) continue;
    const ElementType type = verdict.tensor == "LSE" ? ElementType::f32 : fused_output_type;
    const double roundoff =
        std::max(unit_roundoff(type), AccuracySettings::kAccumulationRoundoffs * unit_roundoff(ElementType::f32));
    const double floor = settings.floor_factor * roundoff * std::max(1.0, verdict.error.oracle_max_abs);
    verdict.rule_limit = 2.0 * match->error.max_abs_error + floor;
    verdict.passed = verdict.passed && verdict.error.max_abs_error <= *verdict.rule_limit;
  }
  fused.rule_applied = true;
  settle_status(fused);
}

nlohmann::ordered_json AccuracyResult::to_json() const {
  nlohmann::ordered_json json{{"status", status}, {"reason", reason}, {"oracle", "cpu.reference"},
                              {"sample", sample}};
  json["baseline"] = baseline.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(baseline);
  json["rule_applied"] = rule_applied;
  nlohmann::ordered_json tensor_json = nlohmann::ordered_json::object();
  for (const auto& verdict : tensors) {
    const TensorError& e = verdict.error;
    nlohmann::ordered_json entry{{"checked", e.checked},
                                 {"max_abs_error", e.max_abs_error},
                                 {"mean_abs_error", e.mean_abs_error},
                                 {"relative_l2_error", e.relative_l2_error},
                                 {"oracle_max_abs", e.oracle_max_abs},
                                 {"nan", e.nan},
                                 {"inf", e.inf},
                                 {"infinity_mismatch", e.infinity_mismatch},
                                 {"oracle_nonfinite", e.oracle_nonfinite},
                                 {"bound", verdict.bound}};
    entry["rule_limit"] = verdict.rule_limit ? nlohmann::ordered_json(*verdict.rule_limit)
                                             : nlohmann::ordered_json(nullptr);
    entry["passed"] = verdict.passed;
    tensor_json[verdict.tensor] = entry;
  }
  json["tensors"] = tensor_json;
  return json;
}

}  // namespace attnbench
