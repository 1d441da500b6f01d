// What the results file and `attnbench info` say about the host, and what the
// host can give a run: the CPUs this process may really use (its affinity and
// cgroup CPU quota, not only the CPUs the machine has), the last-level cache
// the cold-cache flush must evict, and the load average.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace attnbench {

// The CPUs this process can use, and which limit decided it: "logical_cpus"
// (the machine's online CPUs), "cpu_affinity" (sched_getaffinity) or
// "cgroup_cpu_quota" (cpu.max, or cpu.cfs_quota_us / cpu.cfs_period_us, rounded
// down so that that many busy threads are never throttled).
struct CpuAvailability {
  int count = 1;
  std::string source = "logical_cpus";
};

// The largest cache of the highest level that holds data (a "Data" or
// "Unified" cache), one instance of it, and where the figure came from:
// "sysfs" (/sys/devices/system/cpu/cpu*/cache/index*/), "sysconf", or
// "assumed" (32 MiB when the OS says nothing).
struct CacheInfo {
  std::uint64_t bytes = 0;
  int level = 0;  // 0 when not known
  std::string source;
};

struct HostInfo {
  std::string hostname;
  std::string os;         // kernel name and release
  std::string cpu_model;
  int logical_cpus = 1;
  CpuAvailability available_cpus;
  CacheInfo last_level_cache;
  std::uint64_t memory_total_bytes = 0;
  std::uint64_t memory_available_bytes = 0;  // MemAvailable, or less under a cgroup limit

  // The results file's `host` (what identifies the machine a run measured),
  // or `attnbench info`'s, which adds the last-level cache and the memory
  // available now.
  enum class JsonFields { results_file, info };
  nlohmann::ordered_json to_json(JsonFields fields) const;
};

HostInfo read_host_info();

CpuAvailability available_cpus();

// MemAvailable, or less under a cgroup memory limit.
std::uint64_t available_memory_bytes();

// The CPU limit of the cgroup (v2 or v1) that `proc_self_cgroup` (the text of
// /proc/self/cgroup) names, under the cgroup file system mounted at
// `cgroup_root`, including the limits of its ancestors; nullopt when there is none.
std::optional<int> cgroup_cpu_limit(const std::string& cgroup_root, const std::string& proc_self_cgroup);

// The last-level cache as the cache directories under `sysfs_cpu_root`
// (normally /sys/devices/system/cpu) describe it; nullopt when they say nothing.
std::optional<CacheInfo> last_level_cache_from_sysfs(const std::string& sysfs_cpu_root);

// Size fields of sysfs cache directories: "32768K", "32M", "1G" or plain bytes;
// nullopt for anything else.
std::optional<std::uint64_t> parse_cache_size(const std::string& text);

// The 1-, 5- and 15-minute load averages; nullopt where the OS does not say.
std::optional<std::array<double, 3>> load_average();

// What the host did while samples were taken (harness/measure/noise.hpp judges it).
struct HostActivity {
  std::optional<double> load_before, load_after;  // 1-minute load average
  std::optional<double> steal_fraction;            // of all CPU time on the host (/proc/stat)
  std::optional<long> involuntary_switches;        // of this process (getrusage)
  int available_cpus = 1;
};

// Started before the samples, finished after them.
class HostActivityProbe {
 public:
  HostActivityProbe();
  HostActivity finish() const;

 private:
  std::optional<double> load_;
  std::optional<std::array<unsigned long long, 2>> cpu_times_;  // all, steal (clock ticks)
  long involuntary_switches_ = 0;
};

// The "cpu" line of /proc/stat as (all, steal) clock ticks; nullopt where it cannot be read.
std::optional<std::array<unsigned long long, 2>> parse_proc_stat_cpu_times(const std::string& proc_stat);

}  // namespace attnbench
