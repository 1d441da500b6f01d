#include "harness/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "harness/dtype.hpp"

namespace attnbench {

namespace {

class SteadyClockTimer final : public SampleTimer {
 public:
  void start() override { begin_ = std::chrono::steady_clock::now(); }
  double stop() override { return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count(); }

 private:
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace

void HostMemoryBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes) std::memcpy(device_dst, host_src, bytes);
}

void HostMemoryBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes) std::memcpy(host_dst, device_src, bytes);
}

void HostMemoryBackend::fill_with_nan(const TensorBuffer& buffer) {
  attnbench::fill_with_nan(buffer.data, buffer.type, buffer.elements);
}

void HostMemoryBackend::fill_with_zeros(const TensorBuffer& buffer) {
  if (buffer.elements) std::memset(buffer.data, 0, buffer.bytes());
}

std::unique_ptr<SampleTimer> HostMemoryBackend::make_timer() { return std::make_unique<SteadyClockTimer>(); }

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry registry;
  return registry;
}

void BackendRegistry::add(std::string device, BackendFactory factory) {
  for (const auto& entry : entries_) {
    if (entry.device == device) throw std::logic_error("backend registered twice: " + device);
  }
  entries_.push_back(Entry{std::move(device), std::move(factory), nullptr});
}

Backend* BackendRegistry::get(std::string_view device) {
  for (auto& entry : entries_) {
    if (entry.device != device) continue;
    if (!entry.instance) entry.instance = entry.factory();
    return entry.instance.get();
  }
  return nullptr;
}

std::vector<std::string> BackendRegistry::devices() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry.device);
  std::sort(out.begin(), out.end());
  return out;
}

DeviceArena::DeviceArena(Backend& backend, std::size_t capacity)
    : backend_(backend),
      capacity_(aligned(capacity)),
      red_zone_(aligned(std::max(backend.buffer_red_zone(), kGuardBytes))),
      offset_(red_zone_) {
  if (capacity_ > 0) base_ = static_cast<std::byte*>(backend_.allocate(capacity_ + (kMaxPieces + 1) * red_zone_));
}

DeviceArena::~DeviceArena() {
  if (base_) backend_.release(base_);
}

TensorBuffer DeviceArena::take(ElementType type, std::size_t elements, std::string_view name) {
  const std::size_t bytes = aligned(elements * element_size(type));
  if (used_ + bytes > capacity_ || pieces_.size() == kMaxPieces) {
    throw std::logic_error("device arena overflow: the memory plan is smaller than what was taken");
  }
  TensorBuffer buffer{base_ + offset_, type, elements};
  used_ += bytes;
  offset_ += bytes + red_zone_;
  pieces_.push_back(Piece{std::string(name), static_cast<std::byte*>(buffer.data), buffer.bytes()});
  backend_.note_buffer(buffer, name);
  return buffer;
}

std::vector<DeviceArena::GuardZone> DeviceArena::guard_zones() const {
  std::vector<GuardZone> zones;
  if (!base_) return zones;
  std::byte* start = base_;
  std::string before;
  for (const Piece& piece : pieces_) {
    zones.push_back(GuardZone{start, static_cast<std::size_t>(piece.data - start), before, piece.name});
    start = piece.data + piece.bytes;
    before = piece.name;
  }
  zones.push_back(GuardZone{start, static_cast<std::size_t>(base_ + offset_ - start), before, ""});
  return zones;
}

}  // namespace attnbench
