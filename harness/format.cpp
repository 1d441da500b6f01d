#include "harness/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

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

namespace {

constexpr ByteUnit kByteUnits[] = {{"B", 1.0},
                                   {"KiB", 1024.0},
                                   {"MiB", 1024.0 * 1024},
                                   {"GiB", 1024.0 * 1024 * 1024},
                                   {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                   {"PiB", 1024.0 * 1024 * 1024 * 1024 * 1024}};

// Four significant digits for values from 1 to 9999.
std::string four_digits(double value) {
  const double magnitude = std::abs(value);
  return format_fixed(value, magnitude >= 1000 ? 0 : magnitude >= 100 ? 1 : magnitude >= 10 ? 2 : 3);
}

}  // namespace

ByteUnit byte_unit_for(double largest_bytes) {
  std::size_t unit = 0;
  while (unit + 1 < std::size(kByteUnits) && std::abs(largest_bytes) >= kByteUnits[unit + 1].bytes) ++unit;
  return kByteUnits[unit];
}

std::string format_bytes(double bytes) {
  const ByteUnit unit = byte_unit_for(bytes);
  return format_fixed(bytes / unit.bytes, unit.bytes == 1.0 ? 0 : 2) + " " + unit.name;
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 1e-3) return four_digits(seconds * 1e6) + " us";
  if (seconds < 1.0) return four_digits(seconds * 1e3) + " ms";
  return four_digits(seconds) + " s";
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (total < 60) return std::to_string(total) + " s";
  const long long minutes = (total + 30) / 60;
  if (minutes < 60) return std::to_string(minutes) + " min";
  const long long hours = minutes / 60;
  if (hours < 48) return std::to_string(hours) + " h " + std::to_string(minutes % 60) + " min";
  return std::to_string(hours / 24) + " days " + std::to_string(hours % 24) + " h";
}

std::string format_flops_rate(double flops_per_second) {
  if (!std::isfinite(flops_per_second)) return "-";
  static const std::pair<double, const char*> kUnits[] = {
      {1e15, "PFLOP/s"}, {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1e6, "MFLOP/s"}, {1e3, "kFLOP/s"}};
  for (const auto& [size, name] : kUnits) {
    if (std::abs(flops_per_second) >= size) return four_digits(flops_per_second / size) + " " + name;
  }
  return four_digits(flops_per_second) + " FLOP/s";
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string joined;
  for (const std::string& part : parts) {
    if (!joined.empty()) joined += separator;
    joined += part;
  }
  return joined;
}

std::string count_of(std::size_t count, const std::string& singular, const std::string& plural) {
  return std::to_string(count) + " " + (count == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

std::vector<std::string> wrap_words(const std::string& text, std::size_t width, const std::string& indent) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string line;
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? indent : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace attnbench
