// The "cpu" backend: host memory, a steady-clock timer, and a last-level-cache
// flush by writing a scratch buffer twice the cache's size (one instance of the
// last-level cache, as sysfs describes it; see host_info.hpp).

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend.hpp"
#include "host_info.hpp"

namespace attnbench {
namespace {

class HostTimer final : public SampleTimer {
 public:
  void start() override { begin_ = std::chrono::steady_clock::now(); }
  double stop() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }

 private:
  std::chrono::steady_clock::time_point begin_;
};

class HostBackend final : public Backend {
 public:
  HostBackend() : info_(read_host_info()) {}

  std::string_view device() const override { return "cpu"; }
  BackendKind kind() const override { return BackendKind::host; }
  Verdict availability() const override { return Verdict::yes(); }
  std::uint64_t available_memory() const override { return available_memory_bytes(); }

  void* allocate(std::size_t bytes) override {
    void* pointer = std::aligned_alloc(DeviceArena::kAlignment, DeviceArena::aligned(bytes));
    if (!pointer) throw std::bad_alloc();
    return pointer;
  }
  void release(void* pointer) override { std::free(pointer); }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void fill_with_nan(const TensorBuffer& buffer) override {
    attnbench::fill_with_nan(buffer.data, buffer.type, buffer.elements);
  }
  void fill_with_zeros(const TensorBuffer& buffer) override {
    if (buffer.elements) std::memset(buffer.data, 0, buffer.bytes());
  }
  void synchronize() override {}
  std::unique_ptr<SampleTimer> make_timer() override { return std::make_unique<HostTimer>(); }
  std::string_view clock_name() const override { return "host"; }

  void flush_cache() override {
    if (scratch_.empty()) scratch_.assign(cache_flush_bytes(), 0);
    ++flush_value_;
    std::memset(scratch_.data(), flush_value_, scratch_.size());
  }
  std::uint64_t cache_flush_bytes() const override { return 2 * info_.last_level_cache.bytes; }

  nlohmann::ordered_json describe() const override {
    return nlohmann::ordered_json{{"kind", "cpu"},
                                  {"name", info_.cpu_model},
                                  {"logical_cpus", info_.logical_cpus},
                                  {"last_level_cache_bytes", info_.last_level_cache.bytes},
                                  {"last_level_cache_level", info_.last_level_cache.level},
                                  {"last_level_cache_source", info_.last_level_cache.source},
                                  {"memory_bytes", info_.memory_total_bytes}};
  }

 private:
  HostInfo info_;
  std::vector<unsigned char> scratch_;
  unsigned char flush_value_ = 0;
};

const BackendRegistration kRegistration{"cpu", [] { return std::make_unique<HostBackend>(); }};

}  // namespace
}  // namespace attnbench
