// Reading JSON documents that people write: comments allowed, duplicate keys
// refused (the second one would silently win), errors with line and column.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/errors.hpp"

namespace attnbench {

// Parses `text`; on failure appends diagnostics (file = `file`) and returns null.
nlohmann::ordered_json parse_json_document(const std::string& text, const std::string& file,
                                           std::vector<Diagnostic>& diagnostics);

// How large a file a reader accepts: reading stops there whatever the file
// claims. `kind` names the file in the refusal ("an input file").
struct FileSizeBound {
  std::size_t max_bytes;
  const char* kind;
};

// Scenario files, compare settings and every other file people write
// (docs/scenarios.md): nothing the tool reads comes near 64 MiB.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;  // 64 MiB
inline constexpr FileSizeBound kInputFileBound{kMaxInputFileBytes, "an input file"};

// Results files, journals and dump indexes, which attnbench writes itself and
// must always read back: a 100,000-record sweep is 536 MB at 20 samples per
// record and about 2.3 GB at 1,000 (docs/results.md, "How large a results
// file grows").
inline constexpr std::size_t kMaxResultsFileBytes = std::size_t{16} << 30;  // 16 GiB
inline constexpr FileSizeBound kResultsFileBound{kMaxResultsFileBytes, "a results file"};

// Reads a whole regular file of at most `bound.max_bytes`; anything else (a
// directory, a FIFO, a device such as /dev/zero, a name the file system cannot
// hold, a larger file) appends a diagnostic naming the file and returns false.
// A FIFO is refused without waiting for a writer.
bool read_text_file(const std::string& path, std::string& text, std::vector<Diagnostic>& diagnostics,
                    const FileSizeBound& bound = kInputFileBound);

// The same checks, but the file is handed to `consume` piece by piece as it is
// read (at most 1 MiB at a time), so a large file is never held whole.
bool read_file_in_pieces(const std::string& path, const FileSizeBound& bound,
                         const std::function<void(std::string_view)>& consume, std::vector<Diagnostic>& diagnostics);

// Reads the file as read_text_file does and parses it as parse_json_document
// does, as it is read: its text is never held whole. On a problem appends
// diagnostics and returns null.
nlohmann::ordered_json parse_json_file(const std::string& path, const FileSizeBound& bound,
                                       std::vector<Diagnostic>& diagnostics);

}  // namespace attnbench
