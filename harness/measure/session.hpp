// One case and one implementation, set up the way every front end measures them
// (`attnbench run` and the Google Benchmark front end): the case's inputs and
// oracle, generated once and shared by its implementations; per implementation,
// a pre-flight (availability, support, memory), every buffer from one arena,
// inputs copied in, outputs and workspace poisoned, one checked call, then
// timed calls.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "harness/measure/accuracy.hpp"
#include "harness/backend.hpp"
#include "harness/implementation.hpp"
#include "harness/measure/inputs.hpp"
#include "harness/measure/protocol.hpp"
#include "harness/common/problem.hpp"

namespace attnbench {

// The inputs of one case (generated on first use) and its fp64 oracle on the
// accuracy sample (computed on first use).
class CaseData {
 public:
  CaseData(const Problem& problem, const AccuracySettings& accuracy, int threads);
  const Problem& problem() const { return problem_; }
  const AccuracySettings& accuracy_settings() const { return accuracy_; }
  // The inputs, generated on the host on first use unless a device generated
  // them first (adopt_inputs): every implementation and the oracle see the same.
  const HostInputs& inputs();
  bool has_inputs() const { return inputs_.has_value(); }
  void adopt_inputs(HostInputs inputs) { inputs_ = std::move(inputs); }
  const OracleSample& oracle();

 private:
  Problem problem_;
  AccuracySettings accuracy_;
  int threads_;
  std::optional<HostInputs> inputs_;
  std::optional<OracleSample> oracle_;
};

// Sizes of everything the harness allocates for one (case, implementation).
struct MemoryPlan {
  std::size_t inputs = 0, outputs = 0, workspace = 0;
  std::size_t total() const { return inputs + outputs + workspace; }
};

// The arena an implementation would take for `problem` with `threads` host
// threads: host logic for every implementation, its device here or not.
MemoryPlan plan_memory(const Implementation& implementation, const Problem& problem, int threads);

// What the pre-flight of one (case, implementation) found: the backend and the
// memory plan, or why the implementation cannot run the case here. `attnbench
// list` shows the same verdicts `run` reaches.
struct Preflight {
  std::string skip_reason;  // empty when it can run
  Backend* backend = nullptr;
  MemoryPlan memory;
};

// Availability, support, a backend for the device, the device memory (the
// arena, plus host copies of the outputs when the device is the host) and,
// unless `host_inputs_ready`, host memory for the inputs; `threads` sizes the
// per-thread workspace of CPU implementations.
Preflight preflight(const Implementation& implementation, const Problem& problem, int threads,
                    bool host_inputs_ready);

// Host copies of an implementation's outputs, for the accuracy check and --dump.
struct HostOutputs {
  HostTensor out, lse, d_q, d_k, d_v;
  AttentionBuffers buffers() const;
};

class ImplementationSession {
 public:
  // Pre-flight and set-up. Returns nullptr with `skip_reason` set when the
  // implementation cannot run the case here (unavailable, unsupported, or it
  // would not fit: the reason carries the numbers).
  static std::unique_ptr<ImplementationSession> open(Implementation& implementation, CaseData& data, int threads,
                                                     std::string& skip_reason);

  Implementation& implementation() const { return implementation_; }
  Backend& backend() const { return backend_; }
  const MemoryPlan& memory() const { return memory_; }
  std::size_t peak_bytes() const { return arena_.used(); }
  nlohmann::ordered_json configuration() const;

  // One call in the case's direction on poisoned outputs (a bwd case runs the
  // forward first, outside what is counted), made through the implementation's
  // make_checked_call; returns the bytes counted for the direction's work when
  // the implementation counts them.
  std::optional<ByteCount> checked_call();
  // What the implementation's own checks of the last checked call found.
  const CallChecks& call_checks() const { return call_checks_; }
  HostOutputs copy_outputs() const;
  // The oracle comparison of the last checked call's outputs.
  AccuracyResult check_accuracy(const HostOutputs& outputs);

  // What one timed sample runs (the backward of a bwd sample reuses the
  // forward state of the checked call), and what runs before it, untimed.
  void sample_call();
  void before_sample(bool cold_cache);
  // Ends the idle OpenMP workers that set-up, the checked call and the oracle
  // left behind (harness/measure/openmp_threads.hpp), so that only the timed call's own team
  // runs while samples are timed; measure() calls it before it warms up and
  // after its last sample.
  void prepare_for_timing();
  // The settings measure() applies: the scenario's, but one sample without
  // warm-up on a simulator.
  MeasureSettings timing_settings(const MeasureSettings& scenario_settings) const;
  // `call_done` as attnbench::measure (harness/measure/protocol.hpp) takes it.
  // Times with the first method of settings.timing that the backend gives
  // and, for "graph", that captures the call; the methods passed over are in
  // the result's passed_over. Throws CaptureRefused when none could time it.
  Measurement measure(const MeasureSettings& settings,
                      const std::function<void(int warmup_calls, int samples)>& call_done = {});
  // The profiling pass: one sample call inside a profiling range of `profiler`,
  // the L2 flushed (and finished) before the range opens; the device's clocks
  // are read right after.
  ProfileResult profile(DeviceProfiler& profiler, bool per_kernel);

 private:
  ImplementationSession(Implementation& implementation, Backend& backend, CaseData& data, int threads,
                        const MemoryPlan& memory);
  // The sampling loop with `timer` (timing "events" and "cupti").
  Measurement measure_calls(const MeasureSettings& settings, SampleTimer& timer,
                            const std::function<void(int, int)>& call_done);
  // Timing "graph": settings.graph_calls calls (each after a flush when
  // cold and the device has a cache to flush) captured into one graph; a sample is one launch, and the time per
  // call subtracts a flush-only graph of the same shape.
  Measurement measure_graph(const MeasureSettings& settings, const std::function<void(int, int)>& call_done);

  Implementation& implementation_;
  Backend& backend_;
  CaseData& data_;
  TrafficCounter traffic_;
  ExecutionContext context_;
  MemoryPlan memory_;
  DeviceArena arena_;
  AttentionBuffers buffers_;
  CallChecks call_checks_;
};

}  // namespace attnbench
