#include "format.hpp"

#include <cmath>
#include <cstdio>

namespace attnbench {

std::string format_scientific(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*e", digits, value);
  return buffer;
}

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::abs(bytes) >= 1024.0 && unit < 5) {
    bytes /= 1024.0;
    ++unit;
  }
  return format_fixed(bytes, unit == 0 ? 0 : 2) + " " + units[unit];
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 1e-3) return format_fixed(seconds * 1e6, 1) + " us";
  if (seconds < 1.0) return format_fixed(seconds * 1e3, 3) + " ms";
  return format_fixed(seconds, 2) + " s";
}

}  // namespace attnbench
