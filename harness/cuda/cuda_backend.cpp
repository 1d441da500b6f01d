// The "cuda" backend: one device (`--device N`), one non-blocking stream that
// implementations launch on (waited for within a limit, so that a kernel that
// never ends fails its case: harness/cuda/device_wait.hpp), device
// allocations, CUDA-event sample timing, an
// L2 flush by writing a scratch buffer twice the L2 size (allocated once,
// outside any arena), the device record of the results file (with the CUPTI
// version), the clocks through NVML (harness/cuda/nvml_clocks.hpp) and the
// CUPTI profiler of the profiling pass (harness/cuda/cupti_profiler.hpp), and
// the timing methods of docs/design.md §4: events, CUPTI's kernel records
// (harness/cuda/cupti_activity.hpp) and captured graphs
// (harness/cuda/stream_capture.hpp), with the SM clock after every sample.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <string>

#include "harness/backend.hpp"
#include "harness/cuda/backend_kernels.hpp"
#include "harness/cuda/cuda_check.hpp"
#include "harness/cuda/cupti_activity.hpp"
#include "harness/cuda/cupti_library.hpp"
#include "harness/cuda/cupti_profiler.hpp"
#include "harness/cuda/device_wait.hpp"
#include "harness/cuda/nvidia_driver.hpp"
#include "harness/cuda/nvml_clocks.hpp"
#include "harness/cuda/stream_capture.hpp"
#include "harness/errors.hpp"

namespace attnbench {
namespace {

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// Waits, within `limit`, until `query` (cudaStreamQuery or cudaEventQuery of
// the work) stops answering cudaErrorNotReady.
template <typename Query>
void wait_until_done(Query&& query, std::chrono::duration<double> limit, const char* call, const std::string& what) {
  wait_for_device(
      [&] {
        const cudaError_t status = query();
        if (status == cudaErrorNotReady) {
          (void)cudaGetLastError();  // "not ready" is an answer, not an error to report later
          return DevicePoll::running;
        }
        if (status != cudaSuccess) throw_cuda_error(status, call, __FILE__, __LINE__);
        return DevicePoll::finished;
      },
      limit, what);
}

// start() and stop() record events on the stream; stop() waits for the end
// event (within the backend's wait limit), so a sample is the device time of
// all the work between them.
class CudaEventTimer final : public SampleTimer {
 public:
  CudaEventTimer(cudaStream_t stream, std::chrono::duration<double> wait_limit)
      : stream_(stream), wait_limit_(wait_limit) {
    ATTNBENCH_CUDA_CHECK(cudaEventCreate(&start_));
    ATTNBENCH_CUDA_CHECK(cudaEventCreate(&end_));
  }
  ~CudaEventTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  void start() override { ATTNBENCH_CUDA_CHECK(cudaEventRecord(start_, stream_)); }
  double stop() override {
    ATTNBENCH_CUDA_CHECK(cudaEventRecord(end_, stream_));
    wait_until_done([&] { return cudaEventQuery(end_); }, wait_limit_, "cudaEventQuery", "a timed sample");
    float milliseconds = 0;
    ATTNBENCH_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_, end_));
    return static_cast<double>(milliseconds) * 1e-3;
  }

 private:
  cudaStream_t stream_;
  std::chrono::duration<double> wait_limit_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t end_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() : ordinal_(BackendRegistry::instance().device_index()) {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      unavailable_ = cuda_unavailable_reason(cudaGetErrorName(status), cudaGetErrorString(status), probe_nvidia_driver());
      (void)cudaGetLastError();
      return;
    }
    if (ordinal_ < 0 || ordinal_ >= count) {
      unavailable_ = "--device " + std::to_string(ordinal_) + " was asked for; this machine has " +
                     std::to_string(count) + " CUDA device(s)";
      return;
    }
    ATTNBENCH_CUDA_CHECK(cudaSetDevice(ordinal_));
    ATTNBENCH_CUDA_CHECK(cudaGetDeviceProperties(&properties_, ordinal_));
    ATTNBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal_) == cudaSuccess) pci_bus_id_ = bus_id;
    nvml_ = std::make_unique<NvmlDevice>(pci_bus_id_);
  }
  ~CudaBackend() override {
    restore_clocks();
    if (device_wait_expired()) return;  // a kernel still runs: freeing would wait for it
    if (scratch_) cudaFree(scratch_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string_view device() const override { return "cuda"; }
  BackendKind kind() const override { return BackendKind::accelerator; }
  Verdict availability() const override {
    return unavailable_.empty() ? Verdict::yes() : Verdict::no(unavailable_);
  }
  std::uint64_t available_memory() const override {
    std::size_t free_bytes = 0, total_bytes = 0;
    ATTNBENCH_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
  }
  void* allocate(std::size_t bytes) override {
    void* pointer = nullptr;
    ATTNBENCH_CUDA_CHECK(cudaMalloc(&pointer, bytes));
    return pointer;
  }
  void release(void* pointer) override {
    if (!device_wait_expired()) cudaFree(pointer);  // else the restart frees it (device_wait.hpp)
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) ATTNBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    synchronize();
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) ATTNBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    synchronize();
  }
  void fill_with_nan(const TensorBuffer& buffer) override {
    cuda::fill_with_nan(buffer, stream_);
    synchronize();
  }
  void fill_with_zeros(const TensorBuffer& buffer) override {
    if (buffer.elements) ATTNBENCH_CUDA_CHECK(cudaMemsetAsync(buffer.data, 0, buffer.bytes(), stream_));
    synchronize();
  }
  void synchronize() override {
    wait_until_done([&] { return cudaStreamQuery(stream_); }, wait_limit_, "cudaStreamQuery", "the work of its stream");
  }
  std::unique_ptr<SampleTimer> make_timer() override {
    return std::make_unique<CudaEventTimer>(stream_, wait_limit_);
  }
  std::string_view clock_name() const override { return "cuda_event"; }
  void* stream() override { return stream_; }

  Verdict timing_method(TimingMethod method) const override {
    if (method != TimingMethod::cupti) return Verdict::yes();
    const std::string unavailable = cupti_activity_unavailable();
    return unavailable.empty() ? Verdict::yes() : Verdict::no("CUPTI cannot be loaded: " + unavailable);
  }
  std::unique_ptr<SampleTimer> make_kernel_timer() override { return make_cupti_kernel_timer(make_timer()); }
  nlohmann::ordered_json kernel_timer_cost() override {
    return measure_cupti_cost([&] { return make_timer(); }, [&] { cuda::launch_empty_kernel(stream_); });
  }
  std::unique_ptr<CapturedCalls> capture(const std::function<void()>& calls) override {
    return capture_graph(stream_, calls);
  }
  std::uint64_t last_level_cache_bytes() const override { return static_cast<std::uint64_t>(properties_.l2CacheSize); }
  std::optional<double> sm_clock_mhz() override { return nvml_ ? nvml_->sm_clock_mhz() : std::nullopt; }
  std::string lock_clocks() override {
    if (!nvml_) return "no GPU (" + unavailable_ + ")";
    unsigned mhz = 0;
    const std::string refused = nvml_->lock_sm_clock(mhz);
    if (refused.empty()) locked_sm_mhz_ = mhz;
    return refused;
  }
  void restore_clocks() override {
    if (!locked_sm_mhz_) return;
    nvml_->reset_locked_clocks();
    locked_sm_mhz_.reset();
  }

  std::vector<MachineFinding> machine_findings() override {
    if (!nvml_ || !nvml_->usable()) {
      return {{"gpu", "note", "GPU checks unavailable: " + (nvml_ ? nvml_->error() : std::string("no NVML")), ""}};
    }
    return check_gpu(nvml_->state());
  }

  nlohmann::ordered_json read_clocks() override {
    if (!nvml_) return nullptr;
    nlohmann::ordered_json clocks = nvml_->clocks();
    if (clocks["source"] != "nvml") return nullptr;
    clocks["locked"] = locked_sm_mhz_.has_value();
    return clocks;
  }
  // Created on first use; its probe touches CUPTI only when a device exists.
  CallObserver* call_observer() override {
    if (!call_observer_) call_observer_ = make_stream_capture_observer(stream_);
    return call_observer_.get();
  }
  DeviceProfiler* profiler() override {
    if (!profiler_) profiler_ = make_cupti_profiler(ordinal_, pci_bus_id_);
    return profiler_.get();
  }

  bool generate_inputs(const Problem& problem, const AttentionBuffers& buffers) override {
    cuda::generate_inputs(problem, buffers, stream_);
    synchronize();
    return true;
  }

  void flush_cache() override {
    if (!scratch_) ATTNBENCH_CUDA_CHECK(cudaMalloc(&scratch_, cache_flush_bytes()));
    ATTNBENCH_CUDA_CHECK(cudaMemsetAsync(scratch_, ++flush_value_, cache_flush_bytes(), stream_));
  }
  std::uint64_t cache_flush_bytes() const override {
    return 2 * static_cast<std::uint64_t>(properties_.l2CacheSize);
  }

  nlohmann::ordered_json describe() const override {
    int driver = 0, runtime = 0, cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cublasGetProperty(MAJOR_VERSION, &cublas_major);
    cublasGetProperty(MINOR_VERSION, &cublas_minor);
    cublasGetProperty(PATCH_LEVEL, &cublas_patch);
    return nlohmann::ordered_json{
        {"kind", "cuda"},
        {"name", properties_.name},
        {"ordinal", ordinal_},
        {"compute_capability", std::to_string(properties_.major) + "." + std::to_string(properties_.minor)},
        {"sm_count", properties_.multiProcessorCount},
        {"l2_bytes", properties_.l2CacheSize},
        {"memory_bytes", properties_.totalGlobalMem},
        {"shared_memory_per_block_optin_bytes", properties_.sharedMemPerBlockOptin},
        {"ecc", properties_.ECCEnabled != 0},
        {"driver", cuda_version_text(driver)},
        {"cuda_runtime", cuda_version_text(runtime)},
        {"cublas", std::to_string(cublas_major) + "." + std::to_string(cublas_minor) + "." +
                       std::to_string(cublas_patch)},
        {"cupti", cupti_version()},
        {"pci_bus_id", pci_bus_id_},
        {"clock_monitor", nvml_ && nvml_->usable() ? "nvml" : "none: " + (nvml_ ? nvml_->error() : std::string())},
        {"clock_policy", locked_sm_mhz_ ? nlohmann::ordered_json{{"sm_mhz", *locked_sm_mhz_}}
                                        : nlohmann::ordered_json("default")}};
  }

  static std::string cupti_version() {
    std::string error;
    const CuptiLibrary* cupti = load_cupti(&error);
    return cupti ? cupti->version : "unavailable: " + error;
  }

 private:
  int ordinal_;
  std::string unavailable_;
  cudaDeviceProp properties_{};
  cudaStream_t stream_ = nullptr;
  const std::chrono::duration<double> wait_limit_ = device_wait_limit();  // read once: every sample waits
  void* scratch_ = nullptr;
  std::string pci_bus_id_;
  std::unique_ptr<NvmlDevice> nvml_;
  std::unique_ptr<DeviceProfiler> profiler_;
  std::unique_ptr<CallObserver> call_observer_;
  unsigned char flush_value_ = 0;
  std::optional<unsigned> locked_sm_mhz_;  // --lock-clocks took effect
};

const BackendRegistration kRegistration{"cuda", [] { return std::make_unique<CudaBackend>(); }};

}  // namespace
}  // namespace attnbench
