// Human-readable numbers for messages and terminal tables.
#pragma once

#include <cstdint>
#include <string>

namespace attnbench {

std::string format_scientific(double value, int digits = 2);  // "3.14e-05"
std::string format_fixed(double value, int decimals);          // "12.35"
std::string format_bytes(double bytes);                        // "1.50 GiB"
std::string format_seconds(double seconds);                    // "812 us", "3.2 ms", "1.25 s"

}  // namespace attnbench
