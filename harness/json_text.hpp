// Reading JSON documents that people write: comments allowed, duplicate keys
// refused (the second one would silently win), errors with line and column.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "errors.hpp"

namespace attnbench {

// Parses `text`; on failure appends diagnostics (file = `file`) and returns null.
nlohmann::ordered_json parse_json_document(const std::string& text, const std::string& file,
                                           std::vector<Diagnostic>& diagnostics);

// Reads a whole file; on failure appends a diagnostic and returns false.
bool read_text_file(const std::string& path, std::string& text, std::vector<Diagnostic>& diagnostics);

}  // namespace attnbench
