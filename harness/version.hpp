#pragma once

namespace attnbench {

// Stamped at build time by cmake/write_version.cmake.
const char* tool_version();
const char* git_revision();  // short hash, "-dirty" when tracked files were modified
const char* build_type();
const char* compiler_id();

}  // namespace attnbench

namespace attnbench {

// Whether this build includes the CUDA implementations.
bool cuda_built();

}  // namespace attnbench
