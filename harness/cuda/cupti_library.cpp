#include "harness/cuda/cupti_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attnbench {

std::string CuptiLibrary::result_text(CUptiResult result) const {
  const char* text = nullptr;
  if (cuptiGetResultString && cuptiGetResultString(result, &text) == CUPTI_SUCCESS && text) {
    return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
  }
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

void throw_cupti_error(const CuptiLibrary& cupti, CUptiResult result, const char* call, const char* file, int line) {
  throw CuptiError(result, std::string(call) + " failed: " + cupti.result_text(result) + " at " + file + ":" +
                               std::to_string(line));
}

namespace {

std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths{"libcupti.so.13", "libcupti.so"};
#if defined(ATTNBENCH_CUPTI_LIBRARY_DIRS)
  // A ':'-separated list of the toolkit's directories, from CMake.
  const std::string dirs = ATTNBENCH_CUPTI_LIBRARY_DIRS;
  std::size_t start = 0;
  while (start < dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    if (end > start) {
      paths.push_back(dirs.substr(start, end - start) + "/libcupti.so.13");
      paths.push_back(dirs.substr(start, end - start) + "/libcupti.so");
    }
    start = end + 1;
  }
#endif
  return paths;
}

struct LoadedCupti {
  CuptiLibrary library;
  bool loaded = false;
  std::string error;
};

LoadedCupti load() {
  LoadedCupti result;
  void* handle = nullptr;
  std::string tried;
  for (const std::string& path : candidate_paths()) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      result.library.path = path;
      break;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  if (!handle) {
    result.error = "libcupti could not be loaded (" + tried + ")";
    return result;
  }
  CuptiLibrary& cupti = result.library;
#define ATTNBENCH_CUPTI_RESOLVE(name)                                                       \
  cupti.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                   \
  if (!cupti.name) {                                                                        \
    result.error = cupti.path + " has no " #name " (CUPTI older than the 13.0 headers?)";  \
    return result;                                                                          \
  }
  ATTNBENCH_CUPTI_FUNCTIONS(ATTNBENCH_CUPTI_RESOLVE)
#undef ATTNBENCH_CUPTI_RESOLVE
  std::uint32_t version = 0;
  if (cupti.cuptiGetVersion(&version) == CUPTI_SUCCESS) cupti.version = std::to_string(version);
  result.loaded = true;
  return result;  // the handle stays open for the life of the process
}

}  // namespace

const CuptiLibrary* load_cupti(std::string* error) {
  static const LoadedCupti loaded = load();
  if (!loaded.loaded) {
    if (error) *error = loaded.error;
    return nullptr;
  }
  return &loaded.library;
}

}  // namespace attnbench
