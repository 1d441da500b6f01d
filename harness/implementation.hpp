// The extension point of docs/design.md §3: one way of computing attention on one
// device, registered under a stable name "<device>.<algorithm>".
//
// Adding an implementation is one file that defines a subclass and registers it:
//
//   namespace { const ImplementationRegistration kRegistration{
//       [] { return std::make_unique<MyAttention>(); }}; }
//
// Implementations allocate nothing: every buffer, including their workspace,
// comes from the harness (AttentionBuffers), so peak memory is measured.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/dtype.hpp"
#include "harness/common/problem.hpp"
#include "harness/traffic.hpp"
#include "harness/common/modelled_traffic.hpp"
#include "harness/verdict.hpp"

namespace attnbench {

// Memory on the implementation's device.
struct TensorBuffer {
  void* data = nullptr;
  ElementType type = ElementType::f32;
  std::size_t elements = 0;
  std::size_t bytes() const { return elements * element_size(type); }
};

// Tensors are [batch, seq, heads, dim] in the problem's layout (K, V, dK, dV with
// kv_heads heads); LSE is [batch, heads, seqlen_q] fp32, natural log.
struct AttentionBuffers {
  TensorBuffer q, k, v;        // inputs, problem dtype
  TensorBuffer d_out;          // dO, problem dtype; only when the direction has a backward
  TensorBuffer out, lse;       // forward outputs
  TensorBuffer d_q, d_k, d_v;  // backward outputs; only when the direction has a backward
  TensorBuffer workspace;      // workspace_bytes() bytes; persists from forward to backward
};

struct ExecutionContext {
  int threads = 1;                    // host threads an implementation may use
  TrafficCounter* traffic = nullptr;  // set by the harness, one slot per thread
  void* stream = nullptr;             // CUDA implementations: the cudaStream_t to launch on
  int thread_count() const { return threads < 1 ? 1 : threads; }
};

// What an implementation's own checks of its checked call found: a plug-in's
// stream and device-memory discipline (harness/plugin/call_audit.hpp).
struct CallChecks {
  nlohmann::ordered_json findings;    // the record's plugin.checks; null for none
  std::vector<std::string> warnings;  // added to the record's warnings
  std::string failure;                // not empty: the record fails with this reason
};

class Implementation {
 public:
  virtual ~Implementation() = default;

  virtual std::string_view name() const = 0;     // "<device>.<algorithm>"
  virtual std::string_view device() const = 0;   // a registered Backend's device name
  virtual std::string_view summary() const = 0;  // one line for `info` and `list`

  // Whether the implementation can run on this machine at all (e.g. no GPU).
  virtual Verdict availability() const { return Verdict::yes(); }
  // Whether it handles this problem, and why not.
  virtual Verdict supports(const Problem& problem) const = 0;

  // Storage type of O, dQ, dK and dV.
  virtual ElementType output_type(const Problem& problem) const = 0;
  // Bytes of workspace the forward and backward need, including what the forward
  // keeps for the backward.
  virtual std::size_t workspace_bytes(const Problem& problem,
                                      const ExecutionContext& context) const = 0;
  // Memory that a library the implementation calls holds outside the arena
  // (the BLAS's packing buffers): {"library", "bytes" (null where the library
  // does not say), "reason"}; null when there is none.
  virtual nlohmann::ordered_json memory_outside_arena() const { return nullptr; }

  virtual void forward(const Problem& problem, const AttentionBuffers& buffers,
                       ExecutionContext& context) = 0;
  // Runs after forward() on the same buffers.
  virtual void backward(const Problem& problem, const AttentionBuffers& buffers,
                        ExecutionContext& context) = 0;

  // The materializing implementation whose error bounds this one's (docs/design.md §6:
  // at most twice its error plus a floor); empty for none.
  virtual std::string_view accuracy_baseline() const { return {}; }
  // True for the fp64 oracle itself, which is not checked against itself.
  virtual bool is_oracle() const { return false; }
  // True when the implementation adds the bytes it moves to context.traffic.
  virtual bool counts_traffic() const { return false; }
  // The analytic HBM traffic of one call in the problem's direction
  // (harness/measure/traffic_model.hpp, docs/io-models.md): the standard or the fused
  // model with the storage widths and tiles this implementation really uses;
  // nullopt when it has none (the record's traffic.modelled is then null).
  virtual std::optional<TrafficModel> modelled_traffic(const Problem& /*problem*/) const { return std::nullopt; }
  // Settings that shape the run (tile sizes, threads), recorded with each result.
  virtual nlohmann::ordered_json configuration(const Problem& problem,
                                               const ExecutionContext& context) const;
  // The plug-in this implementation was loaded from ({"path", "sha256",
  // "version"}, recorded with each record); null for a built-in one.
  virtual nlohmann::ordered_json plugin_identity() const { return nullptr; }
  // Makes the checked call: `call` runs the case's direction once on `buffers`.
  // A plug-in checks around it what the harness cannot trust it to do.
  virtual CallChecks make_checked_call(const Problem& /*problem*/, const AttentionBuffers& /*buffers*/,
                                       ExecutionContext& /*context*/, const std::function<void()>& call) {
    call();
    return {};
  }
};

using ImplementationFactory = std::function<std::unique_ptr<Implementation>()>;

class ImplementationRegistry {
 public:
  static ImplementationRegistry& instance();
  void add(std::unique_ptr<Implementation> implementation);
  // nullptr when no implementation has that name.
  Implementation* find(std::string_view name) const;
  // Every implementation, sorted by name.
  std::vector<Implementation*> all() const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Implementation>> implementations_;
};

struct ImplementationRegistration {
  explicit ImplementationRegistration(const ImplementationFactory& factory) {
    ImplementationRegistry::instance().add(factory());
  }
};

}  // namespace attnbench
