// Element types of the harness's buffers and host conversions for the 16-bit ones.
//
// Inputs are stored in the problem's dtype (fp16 or bf16) exactly as a GPU kernel
// would read them; CPU implementations convert on load, so every implementation
// and the fp64 oracle see the same rounded values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace attnbench {

enum class ElementType { f16, bf16, f32, f64 };

std::size_t element_size(ElementType type);
std::string_view element_type_name(ElementType type);  // "fp16", "bf16", "fp32", "fp64"

// Unit roundoff (half the machine epsilon) of a storage type.
double unit_roundoff(ElementType type);

inline float bits_to_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline std::uint32_t float_to_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// IEEE binary16 <-> binary32, round to nearest even, with subnormals, inf and NaN.
float half_to_float(std::uint16_t half);
std::uint16_t float_to_half(float value);

// bfloat16 is the upper half of a binary32; rounding is to nearest even.
inline float bfloat16_to_float(std::uint16_t bf16) {
  return bits_to_float(static_cast<std::uint32_t>(bf16) << 16);
}
std::uint16_t float_to_bfloat16(float value);

// Reads element `index` of a buffer of `type` as double.
double load_as_double(const void* data, ElementType type, std::size_t index);
// Reads element `index` of a 16-bit or fp32 buffer as float.
float load_as_float(const void* data, ElementType type, std::size_t index);
// Stores `value` into element `index` of a buffer of `type`, rounding to nearest even.
void store_from_double(void* data, ElementType type, std::size_t index, double value);

// Fills `count` elements with a quiet NaN of the type, so an element an
// implementation never writes is caught by the accuracy check.
void fill_with_nan(void* data, ElementType type, std::size_t count);

}  // namespace attnbench
