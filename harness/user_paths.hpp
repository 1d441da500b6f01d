// File names as users give them, checked as names before any file system call:
// a name the file system cannot hold is bad input (exit code 2), not an
// internal error from deep inside a library. And the one rule for where outputs
// go: missing directories are created, and only a directory that cannot be
// made or written into is bad input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attnbench {

inline constexpr std::size_t kMaxFileNameBytes = 255;  // one path component (NAME_MAX on Linux)
inline constexpr std::size_t kMaxPathBytes = 4095;     // the whole path (PATH_MAX less its terminator)

// The most bytes the files written beside an output add to its name:
// ".tmp.<process id>" (a pid has at most 7 digits), ".journal", ".lock".
inline constexpr std::size_t kCompanionSuffixBytes = 12;

// Why `path` cannot name a file ("empty file name", a component or the whole
// path too long, a NUL byte), or "" when it can.
std::string path_name_problem(std::string_view path);

// Why `path` cannot name a file the tool writes, or "" when it can: besides
// path_name_problem, its last component must leave room for the temporary,
// journal and lock files beside it (kCompanionSuffixBytes).
std::string output_name_problem(std::string_view path);

// Creates `directory` with its missing parents ("" is the current directory)
// and checks that a file can be created in it; throws InputError naming
// `option` and the directory (exit 2) when it cannot.
void prepare_directory(const std::string& directory, const std::string& option);

// prepare_directory of the directory the output file `path` goes into. Every
// writer of an output file (run, merge and report -o, compare's --markdown,
// --junit and --json) calls it once its inputs are checked, before it writes.
void prepare_output_directory(const std::string& path, const std::string& option);

}  // namespace attnbench
