// The "cpu" backend: host memory, a steady-clock timer, and a last-level-cache
// flush by writing a scratch buffer twice the cache's size (one instance of the
// last-level cache, as sysfs describes it; see host_info.hpp).

#include <cstdlib>
#include <cstring>
#include <new>

#include "harness/backend.hpp"
#include "harness/host_info.hpp"

namespace attnbench {
namespace {

class HostBackend final : public HostMemoryBackend {
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
