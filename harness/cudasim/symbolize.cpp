#include "harness/cudasim/symbolize.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "harness/cudasim/report_text.hpp"

namespace cudasim {
namespace {

// addr2line's answer for `address` inside the loaded object that holds it:
// pairs of lines (function, file:line), innermost inline frame first.
std::vector<SourceFrame> run_addr2line(std::uintptr_t address) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) {
    return {SourceFrame{"?", hex(address)}};
  }
  const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  // The main program is named by its path in /proc; dladdr may give argv[0].
  std::string object = info.dli_fname;
  if (object.empty() || object.find('/') == std::string::npos) object = "/proc/self/exe";
  const std::string command =
      "addr2line -C -f -i -e '" + object + "' " + hex(address - base) + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::vector<SourceFrame> frames;
  if (pipe) {
    std::array<char, 4096> line{};
    std::vector<std::string> lines;
    while (std::fgets(line.data(), static_cast<int>(line.size()), pipe.get())) {
      std::string text = line.data();
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      lines.push_back(text);
    }
    for (std::size_t i = 0; i + 1 < lines.size(); i += 2) {
      std::string location = lines[i + 1];
      if (const auto discriminator = location.find(" (discriminator"); discriminator != std::string::npos) {
        location.erase(discriminator);
      }
      if (location.rfind("./", 0) == 0) location.erase(0, 2);  // source-relative (-fdebug-prefix-map)
      frames.push_back(SourceFrame{lines[i], location});
    }
  }
  if (frames.empty() || frames.front().location.rfind("??", 0) == 0) {
    return {SourceFrame{info.dli_sname ? info.dli_sname : "?", object + "+" + hex(address - base)}};
  }
  return frames;
}

std::mutex cache_mutex;
std::map<std::uintptr_t, std::vector<SourceFrame>> cache;

const std::vector<SourceFrame>& cached_frames(std::uintptr_t address) {
  const std::lock_guard lock(cache_mutex);
  auto found = cache.find(address);
  if (found == cache.end()) found = cache.emplace(address, run_addr2line(address)).first;
  return found->second;
}

}  // namespace

std::vector<SourceFrame> source_frames(const void* pc) {
  // A return address points after the call; the call itself is one byte earlier.
  return cached_frames(reinterpret_cast<std::uintptr_t>(pc) - 1);
}

bool same_source(const void* a, const void* b) { return a == b || source_frames(a) == source_frames(b); }

std::string function_name(const void* function) {
  const std::vector<SourceFrame>& frames = cached_frames(reinterpret_cast<std::uintptr_t>(function));
  return frames.back().function;
}

}  // namespace cudasim
