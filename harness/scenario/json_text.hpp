// Reading JSON documents that people write: comments allowed, duplicate keys
// refused (the second one would silently win), errors with line and column.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/errors.hpp"

namespace attnbench {

// Parses `text`; on failure appends diagnostics (file = `file`) and returns null.
nlohmann::ordered_json parse_json_document(const std::string& text, const std::string& file,
                                           std::vector<Diagnostic>& diagnostics);

// Input files larger than this are refused (docs/scenarios.md): nothing the tool
// reads comes near it, and reading stops there whatever the file claims.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;  // 64 MiB

// Reads a whole regular file of at most kMaxInputFileBytes; anything else (a
// directory, a FIFO, a device such as /dev/zero, a name the file system cannot
// hold, a larger file) appends a diagnostic naming the file and returns false.
// A FIFO is refused without waiting for a writer.
bool read_text_file(const std::string& path, std::string& text, std::vector<Diagnostic>& diagnostics);

}  // namespace attnbench
