#include "harness/user_paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "harness/errors.hpp"
#include "harness/message_text.hpp"

namespace attnbench {

std::string path_name_problem(std::string_view path) {
  if (path.empty()) return "empty file name";
  if (path.find('\0') != std::string_view::npos) return "the file name holds a NUL byte";
  if (path.size() > kMaxPathBytes) {
    return "the path is " + std::to_string(path.size()) + " bytes long; at most " + std::to_string(kMaxPathBytes) +
           " are allowed";
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view component = path.substr(start, end - start);
    if (component.size() > kMaxFileNameBytes) {
      return "the file name " + quote(component) + " is longer than " + std::to_string(kMaxFileNameBytes) +
             " bytes, the most a file system allows";
    }
    start = end + 1;
  }
  return "";
}

std::string output_name_problem(std::string_view path) {
  if (std::string problem = path_name_problem(path); !problem.empty()) return problem;
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::size_t most = kMaxFileNameBytes - kCompanionSuffixBytes;
  if (name.size() > most) {
    return "the file name " + quote(name) + " is longer than " +
           std::to_string(most) +
           " bytes, the most an output may have: its temporary, journal and lock files add up to " +
           std::to_string(kCompanionSuffixBytes) + " bytes to the " + std::to_string(kMaxFileNameBytes) +
           " a file system allows";
  }
  return "";
}

void prepare_directory(const std::string& directory, const std::string& option) {
  namespace fs = std::filesystem;
  const std::string shown = directory.empty() ? "." : directory;
  const std::string named = "\"" + shown + "\"";  // whole: a user needs the path (main escapes its bytes)
  std::error_code error;
  if (!directory.empty() && !fs::is_directory(directory, error)) {
    fs::create_directories(directory, error);
    if (error) throw InputError(option + ": cannot create the directory " + named + " (" + error.message() + ")");
  }
  // A probe file, not access(2): it also catches a read-only file system and
  // ignores what root may bypass. The probe has no name (O_TMPFILE), so a kill
  // leaves nothing behind; a file system without such files gets a named probe.
  int descriptor = open(shown.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (descriptor >= 0) {
    close(descriptor);
    return;
  }
  if (errno != EOPNOTSUPP && errno != EISDIR) {
    throw InputError(option + ": cannot write into the directory " + named + " (" + std::strerror(errno) + ")");
  }
  const std::string probe = (fs::path(shown) / (".attnbench-probe-" + std::to_string(getpid()))).string();
  descriptor = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (descriptor < 0) {
    throw InputError(option + ": cannot write into the directory " + named + " (" + std::strerror(errno) + ")");
  }
  close(descriptor);
  unlink(probe.c_str());
}

void prepare_output_directory(const std::string& path, const std::string& option) {
  prepare_directory(std::filesystem::path(path).parent_path().string(), option);
}

}  // namespace attnbench
