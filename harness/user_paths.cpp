#include "user_paths.hpp"

#include <algorithm>

#include "message_text.hpp"

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

}  // namespace attnbench
