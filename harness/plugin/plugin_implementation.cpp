#include "harness/plugin/plugin_implementation.hpp"

#include "harness/backend.hpp"
#include "harness/plugin/call_audit.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kMessageCapacity = 1024;

// Bytes of the device copies of the lengths behind the plug-in's workspace.
std::size_t device_lengths_bytes(std::int64_t batch) {
  return 2 * static_cast<std::size_t>(batch) * sizeof(std::int64_t);
}

std::string status_text(std::int32_t status, const char* message) {
  const std::string text = message[0] ? message : "(no message)";
  if (status == ATTNBENCH_STATUS_ERROR) return text;
  return "returned status " + std::to_string(status) + " (neither ATTNBENCH_STATUS_OK nor ATTNBENCH_STATUS_ERROR): " +
         text;
}

}  // namespace

PluginImplementation::PluginImplementation(PluginOrigin origin, PluginDescriptor descriptor)
    : origin_(std::move(origin)),
      descriptor_(std::move(descriptor)),
      device_(abi_device_name(descriptor_.device)),
      summary_(descriptor_.summary + " [" + algorithm_name() + ", plug-in " + origin_.path + ", version " +
               descriptor_.version + "]") {}

std::string PluginImplementation::algorithm_name() const {
  return descriptor_.algorithm == ATTNBENCH_ALGORITHM_FUSED ? "fused" : "materializing";
}

Verdict PluginImplementation::availability() const {
  Backend* backend = BackendRegistry::instance().get(device_);
  if (!backend) return Verdict::no("this attnbench was built without the " + device_ + " backend");
  return backend->availability();
}

Verdict PluginImplementation::supports(const Problem& problem) const {
  if (has_backward(problem.direction) && !descriptor_.backward) {
    return Verdict::no(descriptor_.name + " implements the forward only (its plug-in registered no backward)");
  }
  const AbiProblem abi(problem, output_type(problem));
  char text[kMessageCapacity] = "";
  attnbench_message message{text, sizeof text};
  const std::int32_t status = descriptor_.supports(descriptor_.user_data, &abi.get(), &message);
  if (status == ATTNBENCH_STATUS_OK) return Verdict::yes();
  if (status == ATTNBENCH_STATUS_UNSUPPORTED) return Verdict::no(text[0] ? text : "unsupported (no reason given)");
  throw PluginCallError(descriptor_.name + " supports() failed: " + status_text(status, text));
}

ElementType PluginImplementation::output_type(const Problem& problem) const {
  return descriptor_.output_dtype == ATTNBENCH_DTYPE_FP32 ? ElementType::f32 : element_type(problem.dtype);
}

std::uint64_t PluginImplementation::plugin_workspace_bytes(const AbiProblem& problem,
                                                           const ExecutionContext& context) const {
  if (!descriptor_.workspace_bytes) return 0;
  const attnbench_context abi_context_value = abi_context(context, BackendRegistry::instance().device_index());
  std::uint64_t bytes = 0;
  char text[kMessageCapacity] = "";
  attnbench_message message{text, sizeof text};
  const std::int32_t status =
      descriptor_.workspace_bytes(descriptor_.user_data, &problem.get(), &abi_context_value, &bytes, &message);
  if (status != ATTNBENCH_STATUS_OK) {
    throw PluginCallError(descriptor_.name + " workspace_bytes() failed: " + status_text(status, text));
  }
  return bytes;
}

std::size_t PluginImplementation::workspace_bytes(const Problem& problem, const ExecutionContext& context) const {
  const AbiProblem abi(problem, output_type(problem));
  const std::size_t own = static_cast<std::size_t>(plugin_workspace_bytes(abi, context));
  return on_cuda() ? DeviceArena::aligned(own) + device_lengths_bytes(problem.batch) : own;
}

const AbiProblem& PluginImplementation::prepare(const Problem& problem, const AttentionBuffers& buffers,
                                                const ExecutionContext& context) {
  if (prepared_ && prepared_problem_ == &problem && prepared_workspace_ == buffers.workspace.data) return *prepared_;
  prepared_.emplace(problem, output_type(problem));
  prepared_problem_ = &problem;
  prepared_workspace_ = buffers.workspace.data;
  prepared_workspace_bytes_ = plugin_workspace_bytes(*prepared_, context);
  if (on_cuda() && problem.batch > 0) {
    Backend& backend = *BackendRegistry::instance().get(device_);
    auto* lengths = reinterpret_cast<std::int64_t*>(static_cast<std::byte*>(buffers.workspace.data) +
                                                    DeviceArena::aligned(prepared_workspace_bytes_));
    const std::size_t bytes = device_lengths_bytes(problem.batch) / 2;
    backend.copy_to_device(lengths, prepared_->lengths_q().data(), bytes);
    backend.copy_to_device(lengths + problem.batch, prepared_->lengths_k().data(), bytes);
    prepared_->set_device_lengths(lengths, lengths + problem.batch);
  }
  return *prepared_;
}

void PluginImplementation::call(attnbench_call_fn function, const char* what, const Problem& problem,
                                const AttentionBuffers& buffers, ExecutionContext& context) {
  const AbiProblem& abi = prepare(problem, buffers, context);
  const attnbench_buffers abi_buffers_value = abi_buffers(buffers, prepared_workspace_bytes_);
  const attnbench_context abi_context_value = abi_context(context, BackendRegistry::instance().device_index());
  char text[kMessageCapacity];
  text[0] = '\0';
  attnbench_message message{text, sizeof text};
  const std::int32_t status =
      function(descriptor_.user_data, &abi.get(), &abi_buffers_value, &abi_context_value, &message);
  if (status != ATTNBENCH_STATUS_OK) {
    throw PluginCallError(descriptor_.name + " " + what + "() failed: " + status_text(status, text));
  }
}

void PluginImplementation::forward(const Problem& problem, const AttentionBuffers& buffers,
                                   ExecutionContext& context) {
  call(descriptor_.forward, "forward", problem, buffers, context);
}

void PluginImplementation::backward(const Problem& problem, const AttentionBuffers& buffers,
                                    ExecutionContext& context) {
  call(descriptor_.backward, "backward", problem, buffers, context);
}

Json PluginImplementation::configuration(const Problem& problem, const ExecutionContext& context) const {
  // The output dtype the plug-in chose: it changes the memory and the error.
  Json configuration{{"algorithm", algorithm_name()}, {"output_dtype", element_type_name(output_type(problem))}};
  if (!descriptor_.configuration.empty()) configuration["plugin"] = descriptor_.configuration;
  if (!on_cuda()) configuration["threads"] = context.thread_count();
  return configuration;
}

Json PluginImplementation::plugin_identity() const {
  return Json{{"path", origin_.path}, {"sha256", origin_.sha256}, {"version", descriptor_.version}};
}

CallChecks PluginImplementation::make_checked_call(const Problem& problem, const AttentionBuffers& buffers,
                                                   ExecutionContext& context, const std::function<void()>& call) {
  prepared_.reset();  // the workspace was poisoned: the lengths go in again
  prepare(problem, buffers, context);
  Backend& backend = *BackendRegistry::instance().get(device_);
  CallObserver* observer = backend.call_observer();
  if (!observer) {
    call();
    return {};
  }
  const CallAudit audit = audit_call(*observer, call, [&] { backend.synchronize(); });
  CallChecks checks{audit.to_json(), audit.warnings(), ""};
  if (audit.stream == "failed") checks.failure = "stream check: " + audit.stream_detail;
  return checks;
}

}  // namespace attnbench
