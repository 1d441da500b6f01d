#include "harness/measure/session.hpp"

#include <algorithm>

#include "harness/format.hpp"
#include "harness/measure/buffer_guards.hpp"
#include "harness/measure/noise.hpp"
#include "harness/measure/openmp_threads.hpp"
#include "harness/measure/statistics.hpp"
#include "harness/measure/timing_methods.hpp"
#include "harness/measure/trace.hpp"

namespace attnbench {

CaseData::CaseData(const Problem& problem, const AccuracySettings& accuracy, int threads)
    : problem_(problem), accuracy_(accuracy), threads_(threads) {
  resolve_lengths(problem_);  // implementations that upload the lengths need the arrays
}

const HostInputs& CaseData::inputs() {
  if (!inputs_) inputs_ = generate_inputs(problem_, threads_);
  return *inputs_;
}

const OracleSample& CaseData::oracle() {
  if (!oracle_) oracle_ = compute_oracle(problem_, inputs().buffers(), plan_sample(problem_, accuracy_), threads_);
  return *oracle_;
}

AttentionBuffers HostOutputs::buffers() const {
  AttentionBuffers b;
  b.out = out.buffer;
  b.lse = lse.buffer;
  b.d_q = d_q.buffer;
  b.d_k = d_k.buffer;
  b.d_v = d_v.buffer;
  return b;
}

namespace {

MemoryPlan plan_memory_with(const Problem& p, const Implementation& implementation, const ExecutionContext& context) {
  const bool backward = has_backward(p.direction);
  const ElementType in = element_type(p.dtype);
  const ElementType out = implementation.output_type(p);
  const auto bytes = [](ElementType type, std::int64_t elements) {
    return DeviceArena::aligned(static_cast<std::size_t>(elements) * element_size(type));
  };
  MemoryPlan plan;
  plan.inputs = bytes(in, q_elements(p)) + 2 * bytes(in, kv_elements(p)) + (backward ? bytes(in, q_elements(p)) : 0);
  plan.outputs = bytes(out, q_elements(p)) + bytes(ElementType::f32, lse_elements(p)) +
                 (backward ? bytes(out, q_elements(p)) + 2 * bytes(out, kv_elements(p)) : 0);
  plan.workspace = DeviceArena::aligned(implementation.workspace_bytes(p, context));
  return plan;
}

HostTensor copy_to_host(Backend& backend, const TensorBuffer& device) {
  HostTensor host(device.type, device.elements);
  backend.copy_to_host(host.buffer.data, device.data, device.bytes());
  return host;
}

}  // namespace

MemoryPlan plan_memory(const Implementation& implementation, const Problem& problem, int threads) {
  Problem resolved = problem;
  resolve_lengths(resolved);
  return plan_memory_with(resolved, implementation, ExecutionContext{threads, nullptr});
}

Preflight preflight(const Implementation& implementation, const Problem& p, int threads, bool host_inputs_ready) {
  Preflight result;
  const Verdict available = implementation.availability();
  if (!available.ok) {
    result.skip_reason = "unavailable: " + available.reason;
    return result;
  }
  const Verdict supported = implementation.supports(p);
  if (!supported.ok) {
    result.skip_reason = supported.reason;
    return result;
  }
  result.backend = BackendRegistry::instance().get(implementation.device());
  if (!result.backend) {
    result.skip_reason = "no backend for device \"" + std::string(implementation.device()) + "\" in this build";
    return result;
  }
  const ExecutionContext context{threads, nullptr};
  result.memory = plan_memory_with(p, implementation, context);
  const MemoryPlan& memory = result.memory;
  // The arena, plus host copies of the outputs (in the same memory when the device's is the host's).
  const std::uint64_t need = memory.total() + (result.backend->uses_host_memory() ? memory.outputs : 0);
  const std::uint64_t available_bytes = result.backend->available_memory();
  if (need > available_bytes) {
    result.skip_reason = "needs " + format_bytes(static_cast<double>(need)) + " (inputs " +
                         format_bytes(static_cast<double>(memory.inputs)) + ", outputs " +
                         format_bytes(static_cast<double>(memory.outputs)) + ", workspace " +
                         format_bytes(static_cast<double>(memory.workspace)) + "); " +
                         format_bytes(static_cast<double>(available_bytes)) + " available";
    return result;
  }
  if (!host_inputs_ready) {
    const std::uint64_t host_need = host_input_bytes(p);
    const std::uint64_t host_available = BackendRegistry::instance().get("cpu")->available_memory();
    if (host_need > host_available) {
      result.skip_reason = "the host inputs alone need " + format_bytes(static_cast<double>(host_need)) + "; " +
                           format_bytes(static_cast<double>(host_available)) + " available";
    }
  }
  return result;
}

std::unique_ptr<ImplementationSession> ImplementationSession::open(Implementation& implementation, CaseData& data,
                                                                   int threads, std::string& skip_reason) {
  const Preflight checked = preflight(implementation, data.problem(), threads, data.has_inputs());
  skip_reason = checked.skip_reason;
  if (!skip_reason.empty()) return nullptr;
  return std::unique_ptr<ImplementationSession>(
      new ImplementationSession(implementation, *checked.backend, data, threads, checked.memory));
}

ImplementationSession::ImplementationSession(Implementation& implementation, Backend& backend, CaseData& data,
                                             int threads, const MemoryPlan& memory)
    : implementation_(implementation),
      backend_(backend),
      data_(data),
      traffic_(threads),
      context_{threads, &traffic_, backend.stream()},
      memory_(memory),
      arena_(backend, memory.total()) {
  const Problem& p = data.problem();
  const bool backward = has_backward(p.direction);
  const ElementType in = element_type(p.dtype);
  const ElementType out = implementation.output_type(p);
  buffers_.q = arena_.take(in, static_cast<std::size_t>(q_elements(p)), "Q");
  buffers_.k = arena_.take(in, static_cast<std::size_t>(kv_elements(p)), "K");
  buffers_.v = arena_.take(in, static_cast<std::size_t>(kv_elements(p)), "V");
  if (backward) buffers_.d_out = arena_.take(in, static_cast<std::size_t>(q_elements(p)), "dO");
  buffers_.out = arena_.take(out, static_cast<std::size_t>(q_elements(p)), "O");
  buffers_.lse = arena_.take(ElementType::f32, static_cast<std::size_t>(lse_elements(p)), "LSE");
  if (backward) {
    buffers_.d_q = arena_.take(out, static_cast<std::size_t>(q_elements(p)), "dQ");
    buffers_.d_k = arena_.take(out, static_cast<std::size_t>(kv_elements(p)), "dK");
    buffers_.d_v = arena_.take(out, static_cast<std::size_t>(kv_elements(p)), "dV");
  }
  buffers_.workspace = arena_.take(ElementType::f32, memory.workspace / sizeof(float), "workspace");

  // The first device session of a case generates the inputs where they are
  // used, and the host keeps a copy for the oracle and the other sessions.
  if (!data.has_inputs() && backend.generate_inputs(p, buffers_)) {
    HostInputs generated = allocate_inputs(p);
    backend.copy_to_host(generated.q.buffer.data, buffers_.q.data, buffers_.q.bytes());
    backend.copy_to_host(generated.k.buffer.data, buffers_.k.data, buffers_.k.bytes());
    backend.copy_to_host(generated.v.buffer.data, buffers_.v.data, buffers_.v.bytes());
    if (backward) backend.copy_to_host(generated.d_out.buffer.data, buffers_.d_out.data, buffers_.d_out.bytes());
    data.adopt_inputs(std::move(generated));
    return;
  }
  const HostInputs& inputs = data.inputs();
  backend.copy_to_device(buffers_.q.data, inputs.q.buffer.data, buffers_.q.bytes());
  backend.copy_to_device(buffers_.k.data, inputs.k.buffer.data, buffers_.k.bytes());
  backend.copy_to_device(buffers_.v.data, inputs.v.buffer.data, buffers_.v.bytes());
  if (backward) backend.copy_to_device(buffers_.d_out.data, inputs.d_out.buffer.data, buffers_.d_out.bytes());
}

nlohmann::ordered_json ImplementationSession::configuration() const {
  return implementation_.configuration(data_.problem(), context_);
}

std::optional<ByteCount> ImplementationSession::checked_call() {
  const TraceRange range("check");
  const Problem& p = data_.problem();
  for (const TensorBuffer* poisoned :
       {&buffers_.out, &buffers_.lse, &buffers_.d_q, &buffers_.d_k, &buffers_.d_v, &buffers_.workspace}) {
    if (poisoned->elements) backend_.fill_with_nan(*poisoned);
  }
  const BufferGuards guards(backend_, arena_);
  traffic_.reset();
  call_checks_ = implementation_.make_checked_call(p, buffers_, context_, [&] {
    implementation_.forward(p, buffers_, context_);
    if (p.direction == Direction::bwd) traffic_.reset();
    if (has_backward(p.direction)) implementation_.backward(p, buffers_, context_);
  });
  backend_.synchronize();
  std::string written;
  for (const std::string& violation : guards.violations(buffers_, data_.inputs())) {
    written += (written.empty() ? "" : "; ") + violation;
  }
  if (!written.empty()) {
    const std::string failure =
        "guard check: " + std::string(implementation_.name()) + "'s checked call wrote where it must not: " + written;
    call_checks_.failure = call_checks_.failure.empty() ? failure : call_checks_.failure + "; " + failure;
  }
  if (!implementation_.counts_traffic()) return std::nullopt;
  return ByteCount{static_cast<double>(traffic_.read_bytes()), static_cast<double>(traffic_.write_bytes())};
}

HostOutputs ImplementationSession::copy_outputs() const {
  HostOutputs host;
  host.out = copy_to_host(backend_, buffers_.out);
  host.lse = copy_to_host(backend_, buffers_.lse);
  if (has_backward(data_.problem().direction)) {
    host.d_q = copy_to_host(backend_, buffers_.d_q);
    host.d_k = copy_to_host(backend_, buffers_.d_k);
    host.d_v = copy_to_host(backend_, buffers_.d_v);
  }
  return host;
}

AccuracyResult ImplementationSession::check_accuracy(const HostOutputs& outputs) {
  AccuracyResult result =
      check_outputs(data_.problem(), outputs.buffers(), data_.oracle(), data_.accuracy_settings());
  result.baseline = std::string(implementation_.accuracy_baseline());
  return result;
}

void ImplementationSession::sample_call() {
  const Problem& p = data_.problem();
  if (p.direction != Direction::bwd) implementation_.forward(p, buffers_, context_);
  if (has_backward(p.direction)) implementation_.backward(p, buffers_, context_);
}

void ImplementationSession::before_sample(bool cold_cache) {
  if (cold_cache) backend_.flush_cache();
}

void ImplementationSession::prepare_for_timing() { release_idle_openmp_threads(); }

MeasureSettings ImplementationSession::timing_settings(const MeasureSettings& scenario_settings) const {
  // A simulator's time says nothing about a GPU's: one sample, no warm-up,
  // whatever the scenario asks (the record's timing says it is simulated).
  MeasureSettings settings = scenario_settings;
  if (backend_.kind() == BackendKind::simulator) {
    settings.warmup_min_iterations = 0;
    settings.warmup_min_seconds = 0;
    settings.warmup_window = 0;
    settings.min_samples = settings.max_samples = 1;
    settings.min_seconds = 0;
  }
  return settings;
}

namespace {

// Passes samples through to `inner`, and keeps what the record says of each
// besides its time: the events time where the inner timer has one, and the
// SM clock read right after (outside the timed region).
class RecordingTimer final : public SampleTimer {
 public:
  RecordingTimer(SampleTimer& inner, Backend& backend) : inner_(inner), backend_(backend) {}
  void start() override { inner_.start(); }
  double stop() override {
    const double seconds = inner_.stop();
    events_.push_back(inner_.last_events_seconds());
    sm_mhz_.push_back(backend_.sm_clock_mhz());
    return seconds;
  }
  // The last `samples` stops (the warm-up's timed calls come before them).
  void attach_to(Measurement& measurement) const {
    const std::size_t samples = measurement.samples_seconds.size();
    const std::size_t first = sm_mhz_.size() - samples;
    measurement.sm_mhz.assign(sm_mhz_.begin() + static_cast<std::ptrdiff_t>(first), sm_mhz_.end());
    measurement.events_seconds.clear();
    for (std::size_t i = first; i < events_.size(); ++i) {
      if (events_[i]) measurement.events_seconds.push_back(*events_[i]);
    }
  }

 private:
  SampleTimer& inner_;
  Backend& backend_;
  std::vector<std::optional<double>> events_;
  std::vector<std::optional<double>> sm_mhz_;
};

// The protocol (harness/measure/protocol.hpp) over `recording`, each of its
// phases in a trace range of its own; then the idle OpenMP threads released and
// the timer's per-sample extras attached to the measurement.
Measurement measure_in_phases(const MeasureSettings& settings, RecordingTimer& recording,
                              const std::function<void()>& before_sample, const std::function<void()>& call,
                              const std::function<void(int, int)>& call_done) {
  std::optional<TraceRange> phase_range;
  const auto phase = [&](const char* name) {
    phase_range.reset();
    phase_range.emplace(name);
  };
  Measurement measurement = attnbench::measure(settings, recording, before_sample, call, phase, call_done);
  release_idle_openmp_threads();
  recording.attach_to(measurement);
  return measurement;
}

}  // namespace

Measurement ImplementationSession::measure_calls(const MeasureSettings& settings, SampleTimer& timer,
                                                 const std::function<void(int, int)>& call_done) {
  RecordingTimer recording(timer, backend_);
  prepare_for_timing();
  return measure_in_phases(
      settings, recording, [&] { before_sample(settings.cold_cache); }, [&] { sample_call(); }, call_done);
}

Measurement ImplementationSession::measure_graph(const MeasureSettings& settings,
                                                 const std::function<void(int, int)>& call_done) {
  const int calls = settings.graph_calls;
  const bool cold = settings.cold_cache && backend_.cache_flush_bytes() > 0;  // a device with a cache to flush
  if (cold) backend_.flush_cache();  // its scratch buffer is allocated here, outside the capture
  backend_.synchronize();
  const std::unique_ptr<CapturedCalls> graph = backend_.capture([&] {
    for (int i = 0; i < calls; ++i) {
      if (cold) backend_.flush_cache();
      sample_call();
    }
  });
  const std::unique_ptr<CapturedCalls> flushes =
      cold ? backend_.capture([&] {
        for (int i = 0; i < calls; ++i) backend_.flush_cache();
      })
           : nullptr;
  std::unique_ptr<SampleTimer> timer = backend_.make_timer();
  RecordingTimer recording(*timer, backend_);
  prepare_for_timing();
  Measurement measurement = measure_in_phases(settings, recording, [] {}, [&] { graph->launch(); }, call_done);

  // The flush-only graph, as many launches as samples (at least 3): its median is subtracted.
  std::vector<double> flush_seconds;
  if (flushes) {
    const TraceRange range("flush graph");
    const std::size_t launches = std::max<std::size_t>(3, measurement.samples_seconds.size());
    for (std::size_t i = 0; i < launches; ++i) {
      timer->start();
      flushes->launch();
      flush_seconds.push_back(timer->stop());
    }
  }
  const double flush_median = flush_seconds.empty() ? 0.0 : median_of(flush_seconds);
  const std::vector<double> graph_seconds = measurement.samples_seconds;
  measurement.samples_seconds = per_call_seconds(graph_seconds, flush_median, calls);
  measurement.statistics = summarize(measurement.samples_seconds);
  widen_to_resolution(measurement.statistics, assess_noise(measurement.samples_seconds).resolution_seconds);
  measurement.method_details["graph"] = nlohmann::ordered_json{
      {"calls_per_graph", calls},
      {"graph_seconds", graph_seconds},
      {"flush_graph_seconds", flush_seconds},
      {"flush_seconds_per_call", flush_median / calls}};
  return measurement;
}

Measurement ImplementationSession::measure(const MeasureSettings& scenario_settings,
                                           const std::function<void(int, int)>& call_done) {
  const MeasureSettings settings = timing_settings(scenario_settings);
  std::vector<std::string> passed_over;
  for (TimingMethod method : settings.timing) {
    const std::string name(to_string(method));
    const Verdict given = backend_.timing_method(method);
    if (!given.ok) {
      passed_over.push_back(name + ": " + given.reason);
      continue;
    }
    Measurement measurement;
    if (method == TimingMethod::graph) {
      try {
        measurement = measure_graph(settings, call_done);
      } catch (const CaptureRefused& refused) {
        passed_over.push_back(name + ": " + refused.what());
        continue;
      }
    } else {
      std::unique_ptr<SampleTimer> timer =
          method == TimingMethod::cupti ? backend_.make_kernel_timer() : backend_.make_timer();
      measurement = measure_calls(settings, *timer, call_done);
    }
    measurement.method = method;
    measurement.passed_over = std::move(passed_over);
    return measurement;
  }
  std::string reasons;
  for (const std::string& reason : passed_over) reasons += (reasons.empty() ? "" : "; ") + reason;
  throw CaptureRefused("no timing method could time it (" + reasons + ")");
}

ProfileResult ImplementationSession::profile(DeviceProfiler& profiler, bool per_kernel) {
  const TraceRange range("profiling");
  ProfileResult result = profiler.profile(
      [&] {
        backend_.flush_cache();
        backend_.synchronize();
      },
      [&] {
        sample_call();
        backend_.synchronize();
      },
      per_kernel);
  result.clocks = backend_.read_clocks();
  return result;
}

}  // namespace attnbench
