// Bytes that CPU tiled implementations move between their full-size arrays (the
// "HBM" of the paper's model) and their tile buffers (its on-chip memory).
#pragma once

#include <cstdint>
#include <vector>

namespace attnbench {

class TrafficCounter {
 public:
  explicit TrafficCounter(int slots = 1) : slots_(static_cast<std::size_t>(slots < 1 ? 1 : slots)) {}

  // One slot per worker thread, so counting needs no synchronisation.
  void add_read(int slot, std::uint64_t bytes) { slots_[static_cast<std::size_t>(slot)].read += bytes; }
  void add_write(int slot, std::uint64_t bytes) {
    slots_[static_cast<std::size_t>(slot)].write += bytes;
  }
  void reset() {
    for (auto& slot : slots_) slot = Slot{};
  }
  std::uint64_t read_bytes() const {
    std::uint64_t total = 0;
    for (const auto& slot : slots_) total += slot.read;
    return total;
  }
  std::uint64_t write_bytes() const {
    std::uint64_t total = 0;
    for (const auto& slot : slots_) total += slot.write;
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::uint64_t read = 0;
    std::uint64_t write = 0;
  };
  std::vector<Slot> slots_;
};

}  // namespace attnbench
