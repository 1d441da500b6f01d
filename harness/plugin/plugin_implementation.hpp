// An implementation a plug-in registered (include/attnbench/plugin.h), as an
// `Implementation` like any built-in one: selection, pre-flight, the arena,
// poisoned outputs, the oracle check, timing and records need nothing else.
// Every callback's error becomes a PluginCallError (the record fails with its
// message); a CUDA plug-in's checked call is audited (harness/plugin/call_audit.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "attnbench/plugin.h"
#include "harness/implementation.hpp"
#include "harness/plugin/abi.hpp"

namespace attnbench {

// Where a plug-in came from: what records carry and what --resume and merge compare.
struct PluginOrigin {
  std::string path;    // the shared library, absolute and canonical
  std::string sha256;  // of the file when it was loaded
};

// What the harness keeps of an attnbench_implementation (its strings copied).
struct PluginDescriptor {
  std::string name, summary, version, accuracy_baseline, configuration;
  std::int32_t device = 0, algorithm = 0, output_dtype = ATTNBENCH_OUTPUT_INPUT_DTYPE;
  void* user_data = nullptr;
  attnbench_supports_fn supports = nullptr;
  attnbench_workspace_fn workspace_bytes = nullptr;
  attnbench_call_fn forward = nullptr;
  attnbench_call_fn backward = nullptr;
  attnbench_release_fn release_user_data = nullptr;  // NULL from a plug-in built against 1.0
};

class PluginImplementation final : public Implementation {
 public:
  PluginImplementation(PluginOrigin origin, PluginDescriptor descriptor);

  std::string_view name() const override { return descriptor_.name; }
  std::string_view device() const override { return device_; }
  std::string_view summary() const override { return summary_; }
  Verdict availability() const override;
  Verdict supports(const Problem& problem) const override;
  ElementType output_type(const Problem& problem) const override;
  std::size_t workspace_bytes(const Problem& problem, const ExecutionContext& context) const override;
  void forward(const Problem& problem, const AttentionBuffers& buffers, ExecutionContext& context) override;
  void backward(const Problem& problem, const AttentionBuffers& buffers, ExecutionContext& context) override;
  std::string_view accuracy_baseline() const override { return descriptor_.accuracy_baseline; }
  nlohmann::ordered_json configuration(const Problem& problem, const ExecutionContext& context) const override;
  nlohmann::ordered_json plugin_identity() const override;
  CallChecks make_checked_call(const Problem& problem, const AttentionBuffers& buffers, ExecutionContext& context,
                               const std::function<void()>& call) override;

  const PluginDescriptor& descriptor() const { return descriptor_; }
  const PluginOrigin& origin() const { return origin_; }

 private:
  bool on_cuda() const { return descriptor_.device == ATTNBENCH_DEVICE_CUDA; }
  std::string algorithm_name() const;  // "fused" or "materializing"
  // The plug-in's own workspace, as its callback gives it.
  std::uint64_t plugin_workspace_bytes(const AbiProblem& problem, const ExecutionContext& context) const;
  // The problem in the ABI's form for calls on `buffers`, converted once per
  // (case, implementation): on a CUDA device the lengths are copied behind the
  // plug-in's workspace.
  const AbiProblem& prepare(const Problem& problem, const AttentionBuffers& buffers, const ExecutionContext& context);
  void call(attnbench_call_fn function, const char* what, const Problem& problem, const AttentionBuffers& buffers,
            ExecutionContext& context);

  PluginOrigin origin_;
  PluginDescriptor descriptor_;
  std::string device_, summary_;
  // The prepared call state, for the problem and workspace it was made for.
  std::optional<AbiProblem> prepared_;
  const Problem* prepared_problem_ = nullptr;
  const void* prepared_workspace_ = nullptr;
  std::uint64_t prepared_workspace_bytes_ = 0;
};

}  // namespace attnbench
