#include "harness/results/npy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "harness/results/document.hpp"

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

void write_npy(int directory, const std::string& name, const std::string& shown_path, const void* data,
               ElementType type, const std::vector<std::int64_t>& shape) {
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

  // Not through a symbolic link planted at `path`: its target is never written.
  const int descriptor = openat(directory, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (descriptor < 0) {
    const int error = errno;
    throw std::runtime_error("cannot write " + shown_path + ": " +
                             (error == ELOOP ? std::string("it is a symbolic link, which attnbench does not follow")
                                             : std::strerror(error)));
  }
  const auto length = static_cast<std::uint16_t>(header.size());
  std::string preamble = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(length & 0xff),
                          static_cast<char>(length >> 8)};
  preamble += header;
  const bool written =
      write_all(descriptor, preamble) &&
      write_all(descriptor, std::string_view(static_cast<const char*>(data), elements * element_size(type)));
  const int error = errno;
  close(descriptor);
  if (!written) throw std::runtime_error("cannot write " + shown_path + ": " + std::strerror(error));
}

}  // namespace attnbench
