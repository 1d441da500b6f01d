#include "harness/cudasim/device_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "harness/cudasim/report_text.hpp"

namespace cudasim {

std::string describe_buffer(const DeviceBuffer& buffer) {
  return "buffer \"" + buffer.name + "\" (" + std::to_string(buffer.end - buffer.begin) + " bytes at " +
         hex(buffer.begin) + ")";
}

DeviceMemoryMap::DeviceMemoryMap(std::vector<DeviceAllocation> allocations) : allocations_(std::move(allocations)) {
  for (const DeviceAllocation& allocation : allocations_) {
    const std::uintptr_t low = allocation.begin > kDeviceMemorySlack ? allocation.begin - kDeviceMemorySlack : 0;
    lowest_ = lowest_ == highest_ ? low : std::min(lowest_, low);
    highest_ = std::max(highest_, allocation.end + kDeviceMemorySlack);
  }
}

DeviceMemoryMap::Placement DeviceMemoryMap::place(std::uintptr_t address, std::size_t bytes, std::string* why) const {
  if (!may_touch(address, bytes)) return Placement::host;
  const std::uintptr_t end = address + bytes;
  const auto outside = [why](std::string text) {
    if (why) *why = std::move(text);
    return Placement::outside;
  };
  for (const DeviceAllocation& allocation : allocations_) {
    if (end + kDeviceMemorySlack <= allocation.begin || address >= allocation.end + kDeviceMemorySlack) continue;
    if (allocation.buffers.empty()) {
      if (address >= allocation.begin && end <= allocation.end) return Placement::inside;
      return outside("it lies outside the device allocation of " + std::to_string(allocation.end - allocation.begin) +
             " bytes at " + hex(allocation.begin));
    }
    // The buffer that starts at or before the access, and the next one.
    const auto next = std::upper_bound(allocation.buffers.begin(), allocation.buffers.end(), address,
                                       [](std::uintptr_t a, const DeviceBuffer& b) { return a < b.begin; });
    if (next != allocation.buffers.begin()) {
      const DeviceBuffer& owner = *(next - 1);
      if (end <= owner.end) return Placement::inside;
      if (address < owner.end) {
        return outside("it runs " + std::to_string(end - owner.end) + " bytes past the end of " +
                       describe_buffer(owner));
      }
      std::string where = "it starts " + std::to_string(address - owner.end) + " bytes past the end of " +
                          describe_buffer(owner);
      if (next != allocation.buffers.end()) where += ", before " + describe_buffer(*next);
      return outside(where);
    }
    return outside("it starts " + std::to_string(next->begin - address) + " bytes before " + describe_buffer(*next));
  }
  return Placement::host;
}

DeviceMemoryRegistry& DeviceMemoryRegistry::instance() {
  static DeviceMemoryRegistry registry;
  return registry;
}

void DeviceMemoryRegistry::add_allocation(const void* pointer, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(pointer);
  const std::lock_guard lock(mutex_);
  allocations_.push_back(DeviceAllocation{begin, begin + bytes, {}});
}

void DeviceMemoryRegistry::remove_allocation(const void* pointer) {
  const auto begin = reinterpret_cast<std::uintptr_t>(pointer);
  const std::lock_guard lock(mutex_);
  std::erase_if(allocations_, [begin](const DeviceAllocation& a) { return a.begin == begin; });
}

void DeviceMemoryRegistry::add_buffer(const void* pointer, std::size_t bytes, std::string name) {
  const auto begin = reinterpret_cast<std::uintptr_t>(pointer);
  const std::lock_guard lock(mutex_);
  for (DeviceAllocation& allocation : allocations_) {
    if (begin < allocation.begin || begin + bytes > allocation.end) continue;
    auto& buffers = allocation.buffers;
    const auto at = std::upper_bound(buffers.begin(), buffers.end(), begin,
                                     [](std::uintptr_t a, const DeviceBuffer& b) { return a < b.begin; });
    buffers.insert(at, DeviceBuffer{begin, begin + bytes, std::move(name)});
    return;
  }
  throw std::logic_error("cudasim: a buffer outside every device allocation was registered");
}

DeviceMemoryMap::Placement DeviceMemoryRegistry::place(const void* pointer, std::size_t bytes, std::string* why) const {
  const std::lock_guard lock(mutex_);
  return DeviceMemoryMap(allocations_).place(reinterpret_cast<std::uintptr_t>(pointer), bytes, why);
}

DeviceMemoryMap DeviceMemoryRegistry::snapshot() const {
  const std::lock_guard lock(mutex_);
  return DeviceMemoryMap(allocations_);
}

}  // namespace cudasim
