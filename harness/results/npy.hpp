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

void write_npy(const std::string& path, const void* data, ElementType type,
               const std::vector<std::int64_t>& shape);

}  // namespace attnbench
