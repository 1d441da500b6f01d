// The "cudasim" device: CUDA kernels executed on the host by the simulator
// (docs/cudasim.md). Its memory is host memory taken from the harness's arena
// like any device's, every buffer of which it registers so that kernels are
// held to its bounds; it times with the host clock, and its records say that
// the times are simulated. There is no cache to flush (a simulated time says
// nothing about a GPU's caches) and no hardware-counter profiler. Timing
// "graph" captures the simulated kernels' launches and replays them, so the
// capture path runs without a GPU; a call that does other work on the
// stream (a copy, the simulator's cuBLAS) is refused, as a call that
// synchronises is on a GPU. CUPTI it has not.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <new>

#include "harness/backend.hpp"
#include "harness/cudasim/device_memory.hpp"
#include "harness/cudasim/runtime_api.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/cudasim/shared_memory.hpp"
#include "harness/host_info.hpp"

namespace attnbench {
namespace {

// Captured launches, run in order.
struct ReplayedLaunches final : CapturedCalls {
  std::vector<std::function<void()>> launches;
  void launch() override {
    for (const auto& launch : launches) launch();
  }
};

class CudasimBackend final : public HostMemoryBackend {
 public:
  std::string_view device() const override { return "cudasim"; }
  BackendKind kind() const override { return BackendKind::simulator; }
  Verdict availability() const override { return Verdict::yes(); }
  std::uint64_t available_memory() const override { return read_host_info().memory_available_bytes; }

  // Each allocation sits between two inaccessible regions of
  // cudasim::kDeviceMemorySlack bytes, so nothing of the host's lies where a
  // kernel's stray access near a buffer could land.
  void* allocate(std::size_t bytes) override {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t size = (DeviceArena::aligned(bytes) + page - 1) / page * page;
    const std::size_t guard = cudasim::kDeviceMemorySlack;
    void* mapping = mmap(nullptr, size + 2 * guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    unsigned char* pointer = static_cast<unsigned char*>(mapping) + guard;
    if (mprotect(pointer, size, PROT_READ | PROT_WRITE) != 0) {
      munmap(mapping, size + 2 * guard);
      throw std::bad_alloc();
    }
    cudasim::DeviceMemoryRegistry::instance().add_allocation(pointer, size);
    sizes_[pointer] = size;
    return pointer;
  }
  void release(void* pointer) override {
    cudasim::DeviceMemoryRegistry::instance().remove_allocation(pointer);
    const auto found = sizes_.find(pointer);
    const std::size_t guard = cudasim::kDeviceMemorySlack;
    munmap(static_cast<unsigned char*>(pointer) - guard, found->second + 2 * guard);
    sizes_.erase(found);
  }
  // 64 KiB: more than a row of any tensor the kernels index, so a row too far
  // past a buffer lands in its red zone, not in the next buffer.
  std::size_t buffer_red_zone() const override { return std::size_t{64} << 10; }
  void note_buffer(const TensorBuffer& buffer, std::string_view name) override {
    cudasim::DeviceMemoryRegistry::instance().add_buffer(buffer.data, buffer.bytes(), std::string(name));
  }
  void* stream() override { return &stream_; }
  Verdict timing_method(TimingMethod method) const override {
    if (method == TimingMethod::cupti) return Verdict::no("the simulator has no CUPTI activity records");
    return Verdict::yes();
  }
  std::unique_ptr<CapturedCalls> capture(const std::function<void()>& calls) override {
    auto replay = std::make_unique<ReplayedLaunches>();
    stream_.captured = &replay->launches;
    stream_.capture_refusal.clear();
    try {
      calls();
    } catch (const std::exception& error) {
      stream_.captured = nullptr;
      throw CaptureRefused(std::string("the call cannot be captured (") + error.what() + ")");
    }
    stream_.captured = nullptr;
    if (!stream_.capture_refusal.empty()) throw CaptureRefused(stream_.capture_refusal);
    return replay;
  }
  void flush_cache() override {}
  std::uint64_t cache_flush_bytes() const override { return 0; }

  nlohmann::ordered_json describe() const override {
    return nlohmann::ordered_json{
        {"kind", "cudasim"},
        {"name", "cudasim: the CUDA kernels executed on the host (" + read_host_info().cpu_model + ")"},
        {"simulated_architecture", "sm_90"},
        {"max_shared_memory_per_block", cudasim::kMaxSharedBytesPerBlock},
        {"sanitizer", cudasim::sanitizer_enabled()}};
  }

 private:
  cudasim::Stream stream_;
  std::map<void*, std::size_t> sizes_;
};

const BackendRegistration kRegistration{"cudasim", [] { return std::make_unique<CudasimBackend>(); }};

}  // namespace
}  // namespace attnbench
