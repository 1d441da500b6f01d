#include "harness/results/npy.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace attnbench {

std::string npy_descr(ElementType type) {
  switch (type) {
    case ElementType::f16:
      return "<f2";
    case ElementType::bf16:
      return "<u2";
    case ElementType::f32:
      return "<f4";
    case ElementType::f64:
      return "<f8";
  }
  throw std::logic_error("unknown element type");
}

void write_npy(const std::string& path, const void* data, ElementType type,
               const std::vector<std::int64_t>& shape) {
  std::string shape_text = "(";
  std::size_t elements = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    shape_text += (i ? ", " : "") + std::to_string(shape[i]);
    elements *= static_cast<std::size_t>(shape[i]);
  }
  shape_text += shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + npy_descr(type) + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  // Magic (6) + version (2) + header length (2) + header, padded with spaces and a
  // newline to a multiple of 64 bytes.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, sizeof magic);
  const auto length = static_cast<std::uint16_t>(header.size());
  const char length_bytes[] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(elements * element_size(type)));
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace attnbench
