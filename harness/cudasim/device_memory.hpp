// The cudasim device's memory: host allocations made through its backend and
// the buffers the harness carves out of them (the Q, K, V, O, … of
// AttentionBuffers, each with its name). A simulated kernel may touch global
// memory only inside those buffers; an access that falls in or near a device
// allocation but outside every buffer is reported as out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cudasim {

struct DeviceBuffer {
  std::uintptr_t begin = 0, end = 0;
  std::string name;
};

struct DeviceAllocation {
  std::uintptr_t begin = 0, end = 0;
  std::vector<DeviceBuffer> buffers;  // sorted by begin; none: the whole allocation is one buffer
};

// An immutable copy of the map for one launch, safe to read from every host thread.
class DeviceMemoryMap {
 public:
  explicit DeviceMemoryMap(std::vector<DeviceAllocation> allocations);
  // Where [address, address + bytes) falls; for `outside`, `why` says where.
  enum class Placement { host, inside, outside };
  Placement place(std::uintptr_t address, std::size_t bytes, std::string* why) const;
  // False when the range cannot touch device memory (the quick test before place()).
  bool may_touch(std::uintptr_t address, std::size_t bytes) const {
    return address < highest_ && address + bytes > lowest_;
  }

 private:
  std::vector<DeviceAllocation> allocations_;
  std::uintptr_t lowest_ = 0, highest_ = 0;  // every allocation with its slack lies in [lowest_, highest_)
};

// Accesses this far before or after an allocation are still taken as aimed at
// it (the backend keeps that much inaccessible address space around each).
inline constexpr std::uintptr_t kDeviceMemorySlack = std::uintptr_t{16} << 20;

class DeviceMemoryRegistry {
 public:
  static DeviceMemoryRegistry& instance();
  void add_allocation(const void* pointer, std::size_t bytes);
  void remove_allocation(const void* pointer);
  void add_buffer(const void* pointer, std::size_t bytes, std::string name);
  DeviceMemoryMap snapshot() const;
  // DeviceMemoryMap::place on the current map.
  DeviceMemoryMap::Placement place(const void* pointer, std::size_t bytes, std::string* why) const;

 private:
  mutable std::mutex mutex_;
  std::vector<DeviceAllocation> allocations_;
};

// "buffer \"Q\" (4096 bytes at 0x…)"
std::string describe_buffer(const DeviceBuffer& buffer);

}  // namespace cudasim
