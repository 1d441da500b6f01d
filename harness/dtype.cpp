#include "harness/dtype.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnbench {

std::size_t element_size(ElementType type) {
  switch (type) {
    case ElementType::f16:
    case ElementType::bf16:
      return 2;
    case ElementType::f32:
      return 4;
    case ElementType::f64:
      return 8;
  }
  throw std::logic_error("unknown element type");
}

std::string_view element_type_name(ElementType type) {
  switch (type) {
    case ElementType::f16:
      return "fp16";
    case ElementType::bf16:
      return "bf16";
    case ElementType::f32:
      return "fp32";
    case ElementType::f64:
      return "fp64";
  }
  throw std::logic_error("unknown element type");
}

double unit_roundoff(ElementType type) {
  switch (type) {
    case ElementType::f16:
      return std::ldexp(1.0, -11);
    case ElementType::bf16:
      return std::ldexp(1.0, -8);
    case ElementType::f32:
      return std::ldexp(1.0, -24);
    case ElementType::f64:
      return std::ldexp(1.0, -53);
  }
  throw std::logic_error("unknown element type");
}

float half_to_float(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu) {  // inf or NaN
    return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent != 0) {  // normal
    return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return bits_to_float(sign);  // signed zero
  // Subnormal: value = mantissa * 2^-24, exact in binary32.
  const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  return sign ? -magnitude : magnitude;
}

std::uint16_t float_to_half(float value) {
  const std::uint32_t bits = float_to_bits(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude_bits = bits & 0x7fffffffu;
  if (magnitude_bits >= 0x7f800000u) {  // inf or NaN (NaN stays quiet)
    const bool is_nan = magnitude_bits > 0x7f800000u;
    return static_cast<std::uint16_t>(sign | 0x7c00u | (is_nan ? 0x200u : 0u));
  }
  // Round to nearest even at the binary16 precision for the value's range. Values
  // at or above 65520 round to infinity.
  if (magnitude_bits >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (magnitude_bits < 0x38800000u) {
    // Result is subnormal (or zero): quantum 2^-24. rint rounds half to even.
    const float magnitude = bits_to_float(magnitude_bits);
    const auto units = static_cast<std::uint32_t>(std::nearbyint(std::ldexp(magnitude, 24)));
    return static_cast<std::uint16_t>(sign | units);  // units == 0x400 is the smallest normal
  }
  // Normal: keep 10 mantissa bits, round the 13 dropped bits to nearest even.
  const std::uint32_t dropped = magnitude_bits & 0x1fffu;
  std::uint32_t rounded = magnitude_bits >> 13;
  if (dropped > 0x1000u || (dropped == 0x1000u && (rounded & 1u))) ++rounded;
  // Rebias the exponent from 127 to 15 (a carry into the exponent is correct).
  return static_cast<std::uint16_t>(sign | (rounded - (112u << 10)));
}

std::uint16_t float_to_bfloat16(float value) {
  const std::uint32_t bits = float_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  }
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

double load_as_double(const void* data, ElementType type, std::size_t index) {
  switch (type) {
    case ElementType::f16:
      return half_to_float(static_cast<const std::uint16_t*>(data)[index]);
    case ElementType::bf16:
      return bfloat16_to_float(static_cast<const std::uint16_t*>(data)[index]);
    case ElementType::f32:
      return static_cast<const float*>(data)[index];
    case ElementType::f64:
      return static_cast<const double*>(data)[index];
  }
  throw std::logic_error("unknown element type");
}

float load_as_float(const void* data, ElementType type, std::size_t index) {
  switch (type) {
    case ElementType::f16:
      return half_to_float(static_cast<const std::uint16_t*>(data)[index]);
    case ElementType::bf16:
      return bfloat16_to_float(static_cast<const std::uint16_t*>(data)[index]);
    case ElementType::f32:
      return static_cast<const float*>(data)[index];
    case ElementType::f64:
      return static_cast<float>(static_cast<const double*>(data)[index]);
  }
  throw std::logic_error("unknown element type");
}

void store_from_double(void* data, ElementType type, std::size_t index, double value) {
  switch (type) {
    case ElementType::f16:
      static_cast<std::uint16_t*>(data)[index] = float_to_half(static_cast<float>(value));
      return;
    case ElementType::bf16:
      static_cast<std::uint16_t*>(data)[index] = float_to_bfloat16(static_cast<float>(value));
      return;
    case ElementType::f32:
      static_cast<float*>(data)[index] = static_cast<float>(value);
      return;
    case ElementType::f64:
      static_cast<double*>(data)[index] = value;
      return;
  }
  throw std::logic_error("unknown element type");
}

void fill_with_nan(void* data, ElementType type, std::size_t count) {
  switch (type) {
    case ElementType::f16: {
      auto* out = static_cast<std::uint16_t*>(data);
      for (std::size_t i = 0; i < count; ++i) out[i] = 0x7e00u;
      return;
    }
    case ElementType::bf16: {
      auto* out = static_cast<std::uint16_t*>(data);
      for (std::size_t i = 0; i < count; ++i) out[i] = 0x7fc0u;
      return;
    }
    case ElementType::f32: {
      auto* out = static_cast<float*>(data);
      for (std::size_t i = 0; i < count; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
      return;
    }
    case ElementType::f64: {
      auto* out = static_cast<double*>(data);
      for (std::size_t i = 0; i < count; ++i) out[i] = std::numeric_limits<double>::quiet_NaN();
      return;
    }
  }
  throw std::logic_error("unknown element type");
}

}  // namespace attnbench
