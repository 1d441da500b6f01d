// The device side of the harness: memory, timing and cache state for one kind
// of device ("cpu" here; "cuda" plugs in the same way). The measuring loop and
// the runner talk only to this interface, so a CUDA-event timer and device
// allocations slot in without touching their callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <optional>

#include "harness/machine_check.hpp"

#include "harness/implementation.hpp"
#include "harness/common/device_profiler.hpp"
#include "harness/common/measure_settings.hpp"
#include "harness/verdict.hpp"

namespace attnbench {

class CallObserver;  // harness/plugin/call_audit.hpp

// Times one sample: start() just before the call, stop() just after; stop()
// waits for the work to finish and returns the elapsed seconds.
class SampleTimer {
 public:
  virtual ~SampleTimer() = default;
  virtual void start() = 0;
  virtual double stop() = 0;
  // Where a sample's time is not the events time of its call (timing
  // "cupti": the kernels' time), the events time of the last sample.
  virtual std::optional<double> last_events_seconds() const { return std::nullopt; }
};

// Calls captured once (a CUDA graph), launched as one on the backend's stream.
class CapturedCalls {
 public:
  virtual ~CapturedCalls() = default;
  virtual void launch() = 0;
};

// Why `calls` could not be captured (the call synchronises, allocates, or
// does work the capture cannot hold): the record is skipped with it.
class CaptureRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a backend's work runs: on the host itself ("cpu"), on an accelerator
// ("cuda"), or on the host as a simulation of an accelerator ("cudasim"), whose
// times are host times and which no default selection picks.
enum class BackendKind { host, accelerator, simulator };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view device() const = 0;  // matches Implementation::device()
  virtual BackendKind kind() const = 0;
  // Its memory is host memory (the pre-flight counts the host copies of the outputs in it).
  bool uses_host_memory() const { return kind() != BackendKind::accelerator; }
  virtual Verdict availability() const = 0;
  // Bytes that could be allocated now (for the pre-flight check).
  virtual std::uint64_t available_memory() const = 0;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  // One buffer of an allocation, named as in AttentionBuffers ("Q", "workspace");
  // the simulator holds kernels to these bounds.
  virtual void note_buffer(const TensorBuffer& /*buffer*/, std::string_view /*name*/) {}
  // Unused bytes a DeviceArena leaves after each buffer, so that an access
  // past a buffer's end lands in no buffer (the simulator's red zones).
  virtual std::size_t buffer_red_zone() const { return 0; }
  virtual void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  virtual void fill_with_nan(const TensorBuffer& buffer) = 0;
  virtual void fill_with_zeros(const TensorBuffer& buffer) = 0;
  virtual void synchronize() = 0;
  virtual std::unique_ptr<SampleTimer> make_timer() = 0;
  // Whether this device, in this build, can time samples with `method`
  // (docs/design.md §4); the reason where not. Events every backend gives.
  virtual Verdict timing_method(TimingMethod method) const {
    if (method == TimingMethod::events) return Verdict::yes();
    return Verdict::no("the " + std::string(device()) + " device has no " + std::string(to_string(method)) + " timing");
  }
  // The timer of timing "cupti": a sample is the device time of the kernels
  // its call launched (their intervals merged), and last_events_seconds() the
  // events time of the same call. Only where timing_method(cupti) is yes.
  virtual std::unique_ptr<SampleTimer> make_kernel_timer() { return nullptr; }
  // What the kernel timer costs the calls it times, measured once per run:
  // {"launch_seconds_with", "launch_seconds_without", "added_seconds_per_launch"}; null where not measured.
  virtual nlohmann::ordered_json kernel_timer_cost() { return nullptr; }
  // `calls` captured on the stream, for timing "graph"; throws CaptureRefused
  // with the reason where they cannot be. Only where timing_method(graph) is yes.
  virtual std::unique_ptr<CapturedCalls> capture(const std::function<void()>& /*calls*/) {
    throw CaptureRefused("the " + std::string(device()) + " device cannot capture calls");
  }
  // The last-level cache whose eviction a cold sample needs; 0 where none is modelled.
  virtual std::uint64_t last_level_cache_bytes() const { return 0; }
  // The SM clock now, cheaply enough to read after every sample; nullopt where not monitored.
  virtual std::optional<double> sm_clock_mhz() { return std::nullopt; }
  // --lock-clocks: holds the clocks fixed for the run where this process may;
  // "" when they are locked, else why not. From then on describe() says so in
  // "clock_policy". restore_clocks() gives the clocks back (idempotent).
  virtual std::string lock_clocks() { return "the " + std::string(device()) + " device has no clocks to lock"; }
  virtual void restore_clocks() {}
  // What implementations launch on (a cudaStream_t); nullptr for the host.
  virtual void* stream() { return nullptr; }
  // Fills Q, K, V (and dO) of `buffers` on the device from the problem's seeded
  // distribution (kernels/common/input_distribution.hpp); false when this
  // backend cannot, and the harness copies host-generated inputs instead.
  virtual bool generate_inputs(const Problem& /*problem*/, const AttentionBuffers& /*buffers*/) { return false; }
  virtual std::string_view clock_name() const = 0;  // "host" or "cuda_event"
  // Evicts the implementation's data from the last-level cache (outside the timed
  // region) by writing a scratch buffer at least twice its size.
  virtual void flush_cache() = 0;
  virtual std::uint64_t cache_flush_bytes() const = 0;
  // What the results file records about this device.
  virtual nlohmann::ordered_json describe() const = 0;
  // The device's clocks now: {"sm_mhz", "memory_mhz", "throttle_reasons", …};
  // null where they are not monitored (the host).
  virtual nlohmann::ordered_json read_clocks() { return nullptr; }
  // What makes the device unfit for benchmarking now (harness/machine_check.hpp):
  // other processes on it, clocks, persistence, power limit, ECC, throttling.
  virtual std::vector<MachineFinding> machine_findings() { return {}; }
  // The hardware-counter profiler of the profiling pass; nullptr for none.
  virtual DeviceProfiler* profiler() { return nullptr; }
  // What this device can observe of a call on its stream (stream capture, free
  // memory), for checking plug-ins; nullptr where there is nothing to check.
  virtual CallObserver* call_observer() { return nullptr; }
};

// What every backend whose memory the host addresses directly ("cpu",
// "cudasim") does alike: copies are memcpy, fills are host loops, there is
// nothing to synchronize, and samples are timed by the host's steady clock.
class HostMemoryBackend : public Backend {
 public:
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override;
  void fill_with_nan(const TensorBuffer& buffer) override;
  void fill_with_zeros(const TensorBuffer& buffer) override;
  void synchronize() override {}
  std::unique_ptr<SampleTimer> make_timer() override;
  std::string_view clock_name() const override { return "host"; }
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

class BackendRegistry {
 public:
  static BackendRegistry& instance();
  void add(std::string device, BackendFactory factory);
  // Creates the backend on first use; nullptr for an unknown device.
  Backend* get(std::string_view device);
  std::vector<std::string> devices() const;
  // Which device of its kind a backend opens (`--device N`); set before first use.
  void set_device_index(int index) { device_index_ = index; }
  int device_index() const { return device_index_; }

 private:
  int device_index_ = 0;
  struct Entry {
    std::string device;
    BackendFactory factory;
    std::unique_ptr<Backend> instance;
  };
  std::vector<Entry> entries_;
};

struct BackendRegistration {
  BackendRegistration(std::string device, BackendFactory factory) {
    BackendRegistry::instance().add(std::move(device), std::move(factory));
  }
};

// One allocation from a backend, handed out in aligned pieces; its high-water
// mark is the peak memory of a (case, implementation). Before the first piece
// and after each lies a guard zone of unused bytes (at least kGuardBytes, or
// the backend's red zone), allocated beside the capacity and not counted in
// used(): an access just outside a buffer lands in no buffer, and the checked
// call's canaries there show a write (harness/measure/buffer_guards.hpp).
class DeviceArena {
 public:
  static constexpr std::size_t kAlignment = 256;
  static constexpr std::size_t kMaxPieces = 16;
  static constexpr std::size_t kGuardBytes = 4096;

  // The unused bytes between two pieces (from the end of the one before's
  // elements, padding included, to the start of the one after); `before` and
  // `after` name the pieces, "" at the arena's ends.
  struct GuardZone {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    std::string before, after;
  };
  static std::size_t aligned(std::size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  DeviceArena(Backend& backend, std::size_t capacity);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  TensorBuffer take(ElementType type, std::size_t elements, std::string_view name);
  std::size_t used() const { return used_; }
  std::size_t capacity() const { return capacity_; }
  // One before the first piece and one after each piece taken so far.
  std::vector<GuardZone> guard_zones() const;

 private:
  struct Piece {
    std::string name;
    std::byte* data;
    std::size_t bytes;  // of its elements, without the alignment's padding
  };
  Backend& backend_;
  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t red_zone_ = 0;
  std::size_t used_ = 0;    // bytes handed out
  std::size_t offset_ = 0;  // where the next piece starts, red zones included
  std::vector<Piece> pieces_;
};

}  // namespace attnbench
