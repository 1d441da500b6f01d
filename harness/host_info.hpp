// What the results file and `attnbench info` say about the host.
#pragma once

#include <cstdint>
#include <string>

namespace attnbench {

struct HostInfo {
  std::string hostname;
  std::string os;         // kernel name and release
  std::string cpu_model;
  int logical_cpus = 1;
  std::uint64_t last_level_cache_bytes = 0;
  std::uint64_t memory_total_bytes = 0;
  std::uint64_t memory_available_bytes = 0;  // MemAvailable, or less under a cgroup limit
};

HostInfo read_host_info();

}  // namespace attnbench
