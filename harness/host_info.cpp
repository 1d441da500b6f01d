#include "host_info.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>

namespace attnbench {
namespace {

// Reads "Key:   value kB" lines of /proc/meminfo.
std::uint64_t meminfo_bytes(const std::string& key) {
  std::ifstream file("/proc/meminfo");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::uint64_t kilobytes = 0;
    fields >> kilobytes;
    return kilobytes * 1024;
  }
  return 0;
}

// The cgroup (v2) memory limit left to this process, when one is set.
std::uint64_t cgroup_memory_left() {
  std::ifstream limit_file("/sys/fs/cgroup/memory.max"), usage_file("/sys/fs/cgroup/memory.current");
  std::string limit;
  std::uint64_t usage = 0;
  if (!(limit_file >> limit) || limit == "max" || !(usage_file >> usage)) return UINT64_MAX;
  const std::uint64_t bytes = std::stoull(limit);
  return bytes > usage ? bytes - usage : 0;
}

std::string cpu_model_name() {
  std::ifstream file("/proc/cpuinfo");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "unknown";
}

std::uint64_t last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long size = sysconf(name);
    if (size > 0) return static_cast<std::uint64_t>(size);
  }
  return 32ull << 20;  // a generous guess when the OS does not say
}

}  // namespace

HostInfo read_host_info() {
  HostInfo info;
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0) info.hostname = hostname;
  utsname names{};
  if (uname(&names) == 0) info.os = std::string(names.sysname) + " " + names.release;
  info.cpu_model = cpu_model_name();
  info.logical_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  info.last_level_cache_bytes = last_level_cache_bytes();
  info.memory_total_bytes = meminfo_bytes("MemTotal");
  info.memory_available_bytes = std::min(meminfo_bytes("MemAvailable"), cgroup_memory_left());
  return info;
}

}  // namespace attnbench
