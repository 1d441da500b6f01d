// The harness's problem, buffers and context in the plug-in ABI's C structs
// (include/attnbench/plugin.h), and the rules a plug-in's registration must
// follow. Pure conversions: tested without any plug-in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attnbench/plugin.h"
#include "harness/implementation.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

// A problem as a plug-in sees it, with the per-batch lengths its pointers
// refer to (every batch element's, padded or not). Movable, not copyable: the
// pointers stay valid when it moves.
class AbiProblem {
 public:
  AbiProblem(const Problem& problem, ElementType output_type);
  AbiProblem(AbiProblem&&) = default;
  AbiProblem& operator=(AbiProblem&&) = default;
  AbiProblem(const AbiProblem&) = delete;
  AbiProblem& operator=(const AbiProblem&) = delete;

  const attnbench_problem& get() const { return problem_; }
  const std::vector<std::int64_t>& lengths_q() const { return lengths_q_; }
  const std::vector<std::int64_t>& lengths_k() const { return lengths_k_; }
  // Points device_lengths_* at copies of the arrays in device memory.
  void set_device_lengths(const std::int64_t* lengths_q, const std::int64_t* lengths_k);

 private:
  std::vector<std::int64_t> lengths_q_, lengths_k_;
  attnbench_problem problem_{};
};

// The ABI's names of element types: ATTNBENCH_DTYPE_* <-> ElementType.
std::int32_t abi_dtype(ElementType type);

attnbench_buffers abi_buffers(const AttentionBuffers& buffers, std::uint64_t plugin_workspace_bytes);
attnbench_context abi_context(const ExecutionContext& context, std::int32_t device_ordinal);

// Why `name` is not an acceptable implementation name for `device`
// (ATTNBENCH_DEVICE_*), or "" when it is.
std::string implementation_name_problem(std::string_view name, std::int32_t device);

// "cpu", "cuda", or "" for a device the ABI does not define.
std::string_view abi_device_name(std::int32_t device);

}  // namespace attnbench
