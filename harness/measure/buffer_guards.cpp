#include "harness/measure/buffer_guards.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>


namespace attnbench {
namespace {

// A float NaN with a payload no computation produces (0x7fa5a5a5, little-endian).
constexpr unsigned char kCanary[4] = {0xa5, 0xa5, 0xa5, 0x7f};

std::vector<unsigned char> canary_bytes(std::size_t bytes) {
  std::vector<unsigned char> pattern(bytes);
  for (std::size_t i = 0; i < bytes; ++i) pattern[i] = kCanary[i % 4];
  return pattern;
}

std::string byte_count(std::size_t bytes) { return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes"); }

// Which side of which buffer bytes [first, last] of `zone` are on.
std::string zone_violation(const DeviceArena::GuardZone& zone, std::size_t first, std::size_t last) {
  const std::string written = byte_count(last - first + 1) + " written ";
  const std::string range = std::to_string(first) + " to " + std::to_string(last);
  if (!zone.before.empty() && (first == 0 || zone.after.empty())) {
    return written + "past the end of " + zone.before + " (bytes " + range + " after its last element" +
           (zone.after.empty() ? ", at the end of the arena)" : ", in the guard zone before " + zone.after + ")");
  }
  if (!zone.after.empty() && (last + 1 == zone.bytes || zone.before.empty())) {
    return written + "before the start of " + zone.after + " (the " + byte_count(zone.bytes - first) +
           " before its first element" + (zone.before.empty() ? ")" : ", in the guard zone after " + zone.before + ")");
  }
  return written + "between " + zone.before + " and " + zone.after + " (bytes " + range + " after the end of " +
         zone.before + ")";
}

}  // namespace

BufferGuards::BufferGuards(Backend& backend, const DeviceArena& arena) : backend_(backend), zones_(arena.guard_zones()) {
  for (const DeviceArena::GuardZone& zone : zones_) {
    if (zone.bytes == 0) continue;
    const std::vector<unsigned char> pattern = canary_bytes(zone.bytes);
    backend_.copy_to_device(zone.data, pattern.data(), zone.bytes);
  }
}

std::vector<std::string> BufferGuards::violations(const AttentionBuffers& buffers, const HostInputs& inputs) const {
  std::vector<std::string> found;
  std::vector<unsigned char> copy;
  for (const DeviceArena::GuardZone& zone : zones_) {
    if (zone.bytes == 0) continue;
    copy.resize(zone.bytes);
    backend_.copy_to_host(copy.data(), zone.data, zone.bytes);
    std::size_t first = zone.bytes, last = 0;
    for (std::size_t i = 0; i < zone.bytes; ++i) {
      if (copy[i] != kCanary[i % 4]) {
        first = std::min(first, i);
        last = i;
      }
    }
    if (first < zone.bytes) found.push_back(zone_violation(zone, first, last));
  }
  const struct {
    const char* name;
    const TensorBuffer& given;
    const TensorBuffer& host;
  } compared[] = {{"Q", buffers.q, inputs.q.buffer},
                  {"K", buffers.k, inputs.k.buffer},
                  {"V", buffers.v, inputs.v.buffer},
                  {"dO", buffers.d_out, inputs.d_out.buffer}};
  for (const auto& input : compared) {
    const std::size_t bytes = input.given.bytes();
    if (bytes == 0) continue;
    const unsigned char* now = static_cast<const unsigned char*>(input.given.data);
    if (!backend_.uses_host_memory()) {
      copy.resize(bytes);
      backend_.copy_to_host(copy.data(), input.given.data, bytes);
      now = copy.data();
    }
    if (std::memcmp(now, input.host.data, bytes) == 0) continue;
    const auto* before = static_cast<const unsigned char*>(input.host.data);
    std::size_t first = 0;
    while (now[first] == before[first]) ++first;
    const std::size_t element_bytes = element_size(input.given.type);
    found.push_back("the input " + std::string(input.name) + " was written (first at element " +
                    std::to_string(first / element_bytes) + " of " + std::to_string(input.given.elements) +
                    "): inputs are read-only");
  }
  return found;
}

}  // namespace attnbench
