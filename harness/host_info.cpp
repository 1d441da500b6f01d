#include "harness/host_info.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace attnbench {
namespace {

namespace fs = std::filesystem;

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

std::string first_word(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

// `directory` and each of its parents up to `root`, innermost first.
std::vector<fs::path> directory_and_parents(const fs::path& root, const std::string& cgroup_path) {
  std::vector<fs::path> directories;
  fs::path relative = fs::path(cgroup_path).relative_path();
  for (;;) {
    directories.push_back(root / relative);
    if (relative.empty()) break;
    relative = relative.parent_path();
  }
  return directories;
}

// floor(quota / period), at least 1 CPU; nullopt for no limit or unreadable numbers.
std::optional<int> cpus_of_quota(const std::string& quota, const std::string& period) {
  try {
    const long long q = std::stoll(quota), p = std::stoll(period);
    if (q <= 0 || p <= 0) return std::nullopt;
    return static_cast<int>(std::max(1LL, q / p));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void keep_smaller(std::optional<int>& limit, std::optional<int> candidate) {
  if (candidate && (!limit || *candidate < *limit)) limit = candidate;
}

int logical_cpu_count() {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) return static_cast<int>(online);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::optional<int> affinity_cpu_count() {
  for (int capacity = 1024; capacity <= (1 << 20); capacity *= 2) {
    cpu_set_t* set = CPU_ALLOC(capacity);
    if (!set) return std::nullopt;
    const std::size_t size = CPU_ALLOC_SIZE(capacity);
    CPU_ZERO_S(size, set);
    const bool read = sched_getaffinity(0, size, set) == 0;
    const int count = read ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (read) return count > 0 ? std::optional<int>(count) : std::nullopt;
    if (errno != EINVAL) return std::nullopt;  // EINVAL: the set is too small for this kernel
  }
  return std::nullopt;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

CacheInfo last_level_cache() {
  if (std::optional<CacheInfo> from_sysfs = last_level_cache_from_sysfs("/sys/devices/system/cpu")) {
    return *from_sysfs;
  }
  const std::pair<int, int> levels[] = {{_SC_LEVEL3_CACHE_SIZE, 3}, {_SC_LEVEL2_CACHE_SIZE, 2}};
  for (const auto& [name, level] : levels) {
    const long size = sysconf(name);
    if (size > 0) return CacheInfo{static_cast<std::uint64_t>(size), level, "sysconf"};
  }
  return CacheInfo{32ull << 20, 0, "assumed"};  // a generous guess when the OS does not say
}

}  // namespace

std::optional<int> cgroup_cpu_limit(const std::string& cgroup_root, const std::string& proc_self_cgroup) {
  std::optional<int> limit;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // cgroup v2: "<quota|max> <period>" in cpu.max, on its own or in a hybrid mount
      for (const fs::path& mount : {fs::path(cgroup_root), fs::path(cgroup_root) / "unified"}) {
        for (const fs::path& directory : directory_and_parents(mount, path)) {
          std::ifstream in(directory / "cpu.max");
          std::string quota, period;
          if (in >> quota >> period && quota != "max") keep_smaller(limit, cpus_of_quota(quota, period));
        }
      }
      continue;
    }
    std::set<std::string> names;
    std::istringstream list(controllers);
    for (std::string name; std::getline(list, name, ',');) names.insert(name);
    if (!names.count("cpu")) continue;
    for (const std::string mount : {"cpu", "cpu,cpuacct", "cpuacct,cpu"}) {  // cgroup v1
      for (const fs::path& directory : directory_and_parents(fs::path(cgroup_root) / mount, path)) {
        keep_smaller(limit, cpus_of_quota(first_word(directory / "cpu.cfs_quota_us"),
                                          first_word(directory / "cpu.cfs_period_us")));
      }
    }
  }
  return limit;
}

CpuAvailability available_cpus() {
  CpuAvailability available{logical_cpu_count(), "logical_cpus"};
  if (const std::optional<int> affinity = affinity_cpu_count(); affinity && *affinity < available.count) {
    available = {*affinity, "cpu_affinity"};
  }
  const std::optional<int> quota = cgroup_cpu_limit("/sys/fs/cgroup", read_text("/proc/self/cgroup"));
  if (quota && *quota < available.count) available = {*quota, "cgroup_cpu_quota"};
  return available;
}

std::optional<std::uint64_t> parse_cache_size(const std::string& text) {
  static const std::regex pattern(R"(\s*([0-9]{1,15})([KMG]?)\s*)");
  std::smatch match;
  if (!std::regex_match(text, match, pattern)) return std::nullopt;
  const std::uint64_t number = std::stoull(match[1].str());
  const std::string unit = match[2].str();
  const int shift = unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : 0;
  return number << shift;
}

std::optional<CacheInfo> last_level_cache_from_sysfs(const std::string& sysfs_cpu_root) {
  static const std::regex cpu_directory("cpu[0-9]+"), cache_directory("index[0-9]+");
  // Per level, the size of each cache instance (named by the CPUs sharing it).
  std::map<int, std::map<std::string, std::uint64_t>> instances;
  std::error_code error;
  for (const fs::directory_entry& cpu : fs::directory_iterator(sysfs_cpu_root, error)) {
    if (!std::regex_match(cpu.path().filename().string(), cpu_directory)) continue;
    for (const fs::directory_entry& index : fs::directory_iterator(cpu.path() / "cache", error)) {
      if (!std::regex_match(index.path().filename().string(), cache_directory)) continue;
      if (first_word(index.path() / "type") == "Instruction") continue;
      const std::optional<std::uint64_t> size = parse_cache_size(first_word(index.path() / "size"));
      int level = 0;
      try {
        level = std::stoi(first_word(index.path() / "level"));
      } catch (const std::exception&) {
        continue;
      }
      if (!size || *size == 0 || level <= 0) continue;
      std::string shared_by = first_word(index.path() / "shared_cpu_list");
      if (shared_by.empty()) shared_by = cpu.path().filename().string();
      instances[level][shared_by] = std::max(instances[level][shared_by], *size);
    }
  }
  if (instances.empty()) return std::nullopt;
  const auto& [level, caches] = *instances.rbegin();
  std::uint64_t largest = 0;
  for (const auto& [shared_by, size] : caches) largest = std::max(largest, size);
  return CacheInfo{largest, level, "sysfs"};
}

std::uint64_t available_memory_bytes() { return std::min(meminfo_bytes("MemAvailable"), cgroup_memory_left()); }

std::optional<std::array<double, 3>> load_average() {
  std::array<double, 3> loads{};
  if (getloadavg(loads.data(), 3) != 3) return std::nullopt;
  return loads;
}

std::optional<std::array<unsigned long long, 2>> parse_proc_stat_cpu_times(const std::string& proc_stat) {
  std::istringstream lines(proc_stat);
  std::string label;
  if (!(lines >> label) || label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is in user already)
  std::array<unsigned long long, 8> fields{};
  for (auto& field : fields) {
    if (!(lines >> field)) return std::nullopt;
  }
  unsigned long long all = 0;
  for (const auto field : fields) all += field;
  return std::array<unsigned long long, 2>{all, fields[7]};
}

namespace {

std::optional<std::array<unsigned long long, 2>> cpu_times() {
  std::ifstream file("/proc/stat");
  std::string line;
  if (!std::getline(file, line)) return std::nullopt;
  return parse_proc_stat_cpu_times(line);
}

long involuntary_switches() {
  rusage usage{};
  return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_nivcsw : 0;
}

}  // namespace

HostActivityProbe::HostActivityProbe() : cpu_times_(cpu_times()), involuntary_switches_(involuntary_switches()) {
  if (const auto loads = load_average()) load_ = (*loads)[0];
}

HostActivity HostActivityProbe::finish() const {
  HostActivity activity;
  activity.available_cpus = available_cpus().count;
  activity.load_before = load_;
  if (const auto loads = load_average()) activity.load_after = (*loads)[0];
  const auto times = cpu_times();
  if (times && cpu_times_ && (*times)[0] > (*cpu_times_)[0]) {
    activity.steal_fraction = static_cast<double>((*times)[1] - (*cpu_times_)[1]) /
                              static_cast<double>((*times)[0] - (*cpu_times_)[0]);
  }
  activity.involuntary_switches = involuntary_switches() - involuntary_switches_;
  return activity;
}

nlohmann::ordered_json HostInfo::to_json(JsonFields fields) const {
  nlohmann::ordered_json json{{"hostname", hostname},
                              {"os", os},
                              {"cpu_model", cpu_model},
                              {"logical_cpus", logical_cpus},
                              {"available_cpus", available_cpus.count},
                              {"available_cpus_source", available_cpus.source}};
  if (fields == JsonFields::info) {
    json["last_level_cache"] = {
        {"bytes", last_level_cache.bytes}, {"level", last_level_cache.level}, {"source", last_level_cache.source}};
  }
  json["memory_bytes"] = memory_total_bytes;
  if (fields == JsonFields::info) json["memory_available_bytes"] = memory_available_bytes;
  return json;
}

HostInfo read_host_info() {
  HostInfo info;
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0) info.hostname = hostname;
  utsname names{};
  if (uname(&names) == 0) info.os = std::string(names.sysname) + " " + names.release;
  info.cpu_model = cpu_model_name();
  info.logical_cpus = logical_cpu_count();
  info.available_cpus = available_cpus();
  info.last_level_cache = last_level_cache();
  info.memory_total_bytes = meminfo_bytes("MemTotal");
  info.memory_available_bytes = available_memory_bytes();
  return info;
}

}  // namespace attnbench
