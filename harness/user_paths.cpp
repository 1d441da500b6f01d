#include "harness/user_paths.hpp"

#include <algorithm>

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

}  // namespace attnbench
