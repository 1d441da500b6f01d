// Text the simulator's reports share: addresses in hexadecimal.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cudasim {

// "0x1f40"
inline std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace cudasim
