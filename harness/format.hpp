// Human-readable numbers and text for messages and terminal tables. One
// convention everywhere: bytes in binary units (KiB, MiB, GiB), throughput in
// the largest FLOP/s unit that shows it without rounding to zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

std::string format_scientific(double value, int digits = 2);  // "3.14e-05"
std::string format_fixed(double value, int decimals);          // "12.35"
std::string format_bytes(double bytes);                        // "1.50 GiB"
std::string format_seconds(double seconds);                    // "812.3 us", "3.216 ms", "123.5 ms", "1.250 s"
std::string format_duration(double seconds);                   // "45 s", "26 min", "3 h 12 min", "2 days 4 h"
// A rate of floating-point operations, four significant digits in the largest
// unit of at least 1: "312.5 TFLOP/s", "2.204 GFLOP/s", "640.0 MFLOP/s".
std::string format_flops_rate(double flops_per_second);

// A binary byte unit and its size in bytes.
struct ByteUnit {
  const char* name;  // "MiB"
  double bytes;      // 1048576
};
// The largest unit in which `largest_bytes` is at least 1 (B for less than a KiB).
ByteUnit byte_unit_for(double largest_bytes);

// The parts with `separator` between them: join({"a", "b"}, ", ") is "a, b".
std::string join(const std::vector<std::string>& parts, std::string_view separator);

// "1 case", "3 cases"; `plural` defaults to the singular with an "s".
std::string count_of(std::size_t count, const std::string& singular, const std::string& plural = "");

// Words of `text` in lines of at most `width` characters (a longer word gets a
// line of its own), every line starting with `indent`.
std::vector<std::string> wrap_words(const std::string& text, std::size_t width, const std::string& indent);

}  // namespace attnbench
