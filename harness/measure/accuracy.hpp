// Accuracy against the fp64 oracle (docs/design.md §6): a bounded, seeded sample of
// query rows and key heads; error metrics per output tensor; the per-dtype
// bound; and the fused-versus-materializing rule (a fused result may err at most
// twice as much as its materializing baseline on the same sample, plus a floor).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/measure_settings.hpp"
#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

// Which outputs the oracle computes. Query-side tensors (O, LSE, dQ) are checked
// on sampled rows of sampled query heads; key-side gradients (dK, dV), which sum
// over every query row, on whole sampled kv heads.
struct QueryRowSample {
  std::int64_t batch = 0;
  std::int64_t head = 0;
  std::vector<std::int64_t> rows;
};
struct KeyHeadSample {
  std::int64_t batch = 0;
  std::int64_t kv_head = 0;
};
struct SamplePlan {
  bool complete = false;  // every row of every head
  std::vector<QueryRowSample> query;
  std::vector<KeyHeadSample> key;
  bool key_side_checked = true;  // false when one kv head alone exceeds the budget
  double oracle_macs = 0;
  nlohmann::ordered_json describe() const;
};
SamplePlan plan_sample(const Problem& problem, const AccuracySettings& settings);

// The oracle's values on the sample.
struct OracleSample {
  SamplePlan plan;
  std::vector<std::vector<double>> out, lse, d_q;  // per QueryRowSample, rows x d (lse: rows)
  std::vector<std::vector<double>> d_k, d_v;       // per KeyHeadSample, seqlen_k x d
};
OracleSample compute_oracle(const Problem& problem, const AttentionBuffers& host_inputs,
                            const SamplePlan& plan, int threads);

struct TensorError {
  std::size_t checked = 0;
  double max_abs_error = 0;
  double mean_abs_error = 0;
  double relative_l2_error = 0;
  double oracle_max_abs = 0;
  std::size_t nan = 0;
  std::size_t inf = 0;
  // Rows where exactly one of the two LSE values is -inf (LSE only).
  std::size_t infinity_mismatch = 0;
  // Oracle values that are NaN or infinite (other than an LSE of -inf): the
  // problem itself overflows, so nothing can be judged against it.
  std::size_t oracle_nonfinite = 0;
};

struct TensorVerdict {
  std::string tensor;  // "O", "LSE", "dQ", "dK", "dV"
  TensorError error;
  double bound = 0;                  // from the per-dtype bound
  std::optional<double> rule_limit;  // 2 x baseline error + floor, when the rule applied
  bool passed = false;
};

struct AccuracyResult {
  std::string status;  // "passed", "failed", "not_checked", "oracle"
  std::string reason;  // failures, then the note
  std::string note;    // what was not checked, and why
  std::vector<TensorVerdict> tensors;
  nlohmann::ordered_json sample;
  std::string baseline;      // accuracy baseline named by the implementation
  bool rule_applied = false;
  nlohmann::ordered_json to_json() const;
};

// Compares one implementation's outputs (host copies, in its output type)
// against the oracle and applies the per-dtype bound.
AccuracyResult check_outputs(const Problem& problem, const AttentionBuffers& host_outputs,
                             const OracleSample& oracle, const AccuracySettings& settings);

// Applies the baseline rule to `fused` given its baseline's result on the same
// sample, and settles its status.
void apply_baseline_rule(AccuracyResult& fused, const AccuracyResult& baseline,
                         ElementType fused_output_type, const AccuracySettings& settings);

}  // namespace attnbench
