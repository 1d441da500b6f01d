// Writing tensors as NumPy .npy files (format version 1.0) for --dump.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/dtype.hpp"

namespace attnbench {

// The .npy descr of a storage type: "<f2", "<f4", "<f8"; bf16, which NumPy has
// no type for, is written as its raw bits "<u2".
std::string npy_descr(ElementType type);

// Writes `name` in the open directory `directory`, never through a symbolic
// link planted at the name (its target is not touched); `shown_path` names the
// file in the std::runtime_error thrown when it cannot be written.
void write_npy(int directory, const std::string& name, const std::string& shown_path, const void* data,
               ElementType type, const std::vector<std::int64_t>& shape);

}  // namespace attnbench
