#include "harness/machine_check.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "harness/backend.hpp"
#include "harness/format.hpp"
#include "harness/host_info.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string read_word(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

// Busy and total clock ticks of every "cpuN" line of /proc/stat.
std::map<int, std::pair<unsigned long long, unsigned long long>> per_cpu_ticks() {
  std::map<int, std::pair<unsigned long long, unsigned long long>> ticks;
  std::ifstream file("/proc/stat");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream fields(line.substr(3));
    int cpu = 0;
    fields >> cpu;
    unsigned long long value = 0, total = 0, idle = 0;
    for (int i = 0; fields >> value; ++i) {
      total += value;
      if (i == 3 || i == 4) idle += value;  // idle, iowait
    }
    ticks[cpu] = {total - idle, total};
  }
  return ticks;
}

// The CPUs listed in a sysfs list ("0-3,8").
std::set<int> parse_cpu_list(const std::string& text) {
  std::set<int> cpus;
  std::stringstream ranges(text);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    const auto dash = range.find('-');
    try {
      const int first = std::stoi(range.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
      for (int cpu = first; cpu <= last; ++cpu) cpus.insert(cpu);
    } catch (const std::exception&) {
    }
  }
  return cpus;
}

std::string percent(double fraction) { return format_fixed(100.0 * fraction, 0) + "%"; }

}  // namespace

HostState read_host_state(int threads, double window_seconds) {
  HostState state;
  state.available_cpus = available_cpus().count;
  state.threads = threads;
  if (const auto loads = load_average()) state.load_1min = (*loads)[0];
  const fs::path cpu_root = "/sys/devices/system/cpu";
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(cpu_root, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    const std::string governor = read_word(entry.path() / "cpufreq" / "scaling_governor");
    if (!governor.empty()) state.governors.push_back(governor);
  }
  if (const std::string no_turbo = read_word(cpu_root / "intel_pstate" / "no_turbo"); !no_turbo.empty()) {
    state.turbo_enabled = no_turbo == "0";
  } else if (const std::string boost = read_word(cpu_root / "cpufreq" / "boost"); !boost.empty()) {
    state.turbo_enabled = boost == "1";
  }
  state.smt_active = read_word(cpu_root / "smt" / "active") == "1";

  // Steal time and the siblings' utilisation over a short window.
  cpu_set_t mine;
  CPU_ZERO(&mine);
  sched_getaffinity(0, sizeof mine, &mine);
  std::set<int> siblings;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mine)) continue;
    for (int sibling : parse_cpu_list(
             read_word(cpu_root / ("cpu" + std::to_string(cpu)) / "topology" / "thread_siblings_list"))) {
      if (!CPU_ISSET(sibling, &mine)) siblings.insert(sibling);
    }
  }
  std::ifstream stat_before("/proc/stat");
  std::string first_line;
  std::getline(stat_before, first_line);
  const auto totals_before = parse_proc_stat_cpu_times(first_line);
  const auto ticks_before = per_cpu_ticks();
  std::this_thread::sleep_for(std::chrono::duration<double>(window_seconds));
  std::ifstream stat_after("/proc/stat");
  std::getline(stat_after, first_line);
  const auto totals_after = parse_proc_stat_cpu_times(first_line);
  const auto ticks_after = per_cpu_ticks();
  if (totals_before && totals_after && (*totals_after)[0] > (*totals_before)[0]) {
    state.steal_fraction = static_cast<double>((*totals_after)[1] - (*totals_before)[1]) /
                           static_cast<double>((*totals_after)[0] - (*totals_before)[0]);
  }
  for (int sibling : siblings) {
    const auto before = ticks_before.find(sibling), after = ticks_after.find(sibling);
    if (before == ticks_before.end() || after == ticks_after.end()) continue;
    const auto total = after->second.second - before->second.second;
    if (total > 0) {
      state.busy_sibling_fractions.push_back(static_cast<double>(after->second.first - before->second.first) /
                                             static_cast<double>(total));
    }
  }

  const HostInfo host = read_host_info();
  if (host.memory_total_bytes > 0) {
    state.memory_available_fraction =
        static_cast<double>(host.memory_available_bytes) / static_cast<double>(host.memory_total_bytes);
  }
  std::ifstream pressure("/proc/pressure/memory");
  std::string word;
  while (pressure >> word) {
    if (word.rfind("avg10=", 0) == 0) {
      state.memory_pressure_avg10 = std::stod(word.substr(6));
      break;  // the "some" line comes first
    }
  }
  return state;
}

std::vector<MachineFinding> check_host(const HostState& state) {
  std::vector<MachineFinding> findings;
  const std::string cpus = count_of(static_cast<std::size_t>(state.available_cpus), "available CPU");
  if (state.load_1min) {
    const double load = *state.load_1min;
    // Other work: the load beyond this process's own threads (it is idle while checking).
    if (load + state.threads > state.available_cpus + 0.5) {
      findings.push_back({"load", "warn",
                          "load average " + format_fixed(load, 1) + " on " + cpus + " with " +
                              count_of(static_cast<std::size_t>(state.threads), "thread") +
                              " of ours: other work will compete with the samples",
                          "run when the machine is idle (stop other jobs; on CI, a runner that runs one job at a "
                          "time), or give fewer --threads"});
    } else {
      findings.push_back({"load", "ok", "load average " + format_fixed(load, 1) + " on " + cpus, ""});
    }
  }
  if (state.steal_fraction) {
    const bool stolen = *state.steal_fraction >= 0.02;
    findings.push_back({"steal", stolen ? "warn" : "ok",
                        "steal time " + percent(*state.steal_fraction) + " of CPU time" +
                            (stolen ? ": the hypervisor gave our CPUs to other guests" : ""),
                        stolen ? "use a dedicated (bare-metal or pinned-vCPU) runner" : ""});
  }
  if (state.governors.empty()) {
    findings.push_back({"governor", "note", "no CPU frequency governor is exposed (a virtual machine?)", ""});
  } else {
    std::set<std::string> kinds(state.governors.begin(), state.governors.end());
    std::string list;
    for (const std::string& kind : kinds) list += (list.empty() ? "" : ", ") + kind;
    const bool performance = kinds.size() == 1 && *kinds.begin() == "performance";
    findings.push_back({"governor", performance ? "ok" : "warn", "CPU frequency governor " + list,
                        performance ? "" : "sudo cpupower frequency-set -g performance (pyperf system tune does too)"});
  }
  if (state.turbo_enabled) {
    findings.push_back({"turbo", *state.turbo_enabled ? "note" : "ok",
                        std::string("turbo boost ") + (*state.turbo_enabled ? "on: clocks follow temperature and load"
                                                                            : "off"),
                        *state.turbo_enabled ? "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo "
                                               "(or 0 > cpufreq/boost) for steadier clocks"
                                             : ""});
  }
  if (state.smt_active) {
    double busiest = 0;
    for (double fraction : state.busy_sibling_fractions) busiest = std::max(busiest, fraction);
    const bool busy = busiest >= 0.25;
    findings.push_back({"smt", busy ? "warn" : "note",
                        busy ? "an SMT sibling of our CPUs is " + percent(busiest) + " busy: it shares their cores"
                             : "SMT is on (siblings idle now)",
                        busy ? "pin the run to whole cores (taskset) and keep their siblings idle, or turn SMT off" : ""});
  }
  if (state.load_1min) {
    const double free_cores = std::max(0.0, state.available_cpus - *state.load_1min);
    if (state.threads > 1 && state.threads > free_cores + 0.5) {
      findings.push_back({"threads", "warn",
                          std::to_string(state.threads) + " threads for about " + format_fixed(free_cores, 1) +
                              " free CPUs: a parallel region waits a scheduler tick for each descheduled thread "
                              "(quantised samples)",
                          "--threads 1 on a shared machine"});
    }
  }
  if (state.memory_available_fraction && *state.memory_available_fraction < 0.1) {
    findings.push_back({"memory", "warn", "only " + percent(*state.memory_available_fraction) + " of memory available",
                        "stop memory-hungry jobs: page reclaim stalls the samples"});
  } else if (state.memory_pressure_avg10 && *state.memory_pressure_avg10 >= 5.0) {
    findings.push_back({"memory", "warn",
                        "memory pressure: tasks stalled " + format_fixed(*state.memory_pressure_avg10, 1) +
                            "% of the last 10 s",
                        "stop memory-hungry jobs"});
  }
  return findings;
}

std::vector<MachineFinding> check_gpu(const GpuState& state) {
  std::vector<MachineFinding> findings;
  const std::string gpu = state.name.empty() ? "the GPU" : state.name;
  if (state.other_processes) {
    const int others = *state.other_processes;
    findings.push_back({"gpu_processes", others > 0 ? "warn" : "ok",
                        std::to_string(others) + " other compute process(es) on " + gpu,
                        others > 0 ? "wait for them, or give each runner its own GPU (CUDA_VISIBLE_DEVICES)" : ""});
  }
  if (state.persistence_mode) {
    findings.push_back({"gpu_persistence", *state.persistence_mode ? "ok" : "warn",
                        std::string("persistence mode ") + (*state.persistence_mode ? "on" : "off") +
                            (*state.persistence_mode ? "" : ": the driver re-initialises the GPU for each process"),
                        *state.persistence_mode ? "" : "sudo nvidia-smi -pm 1"});
  }
  if (state.power_limit_watts && state.default_power_limit_watts) {
    const bool capped = *state.power_limit_watts < 0.99 * *state.default_power_limit_watts;
    findings.push_back({"gpu_power_limit", capped ? "warn" : "ok",
                        "power limit " + format_fixed(*state.power_limit_watts, 0) + " W (default " +
                            format_fixed(*state.default_power_limit_watts, 0) + " W)",
                        capped ? "sudo nvidia-smi -pl " + format_fixed(*state.default_power_limit_watts, 0) : ""});
  }
  if (state.ecc_enabled) {
    findings.push_back({"gpu_ecc", "note",
                        std::string("ECC ") + (*state.ecc_enabled ? "on" : "off") +
                            ": compare only with runs of the same setting (the device identity records it)",
                        ""});
  }
  std::vector<std::string> holding;
  for (const std::string& reason : state.throttle_reasons) {
    if (reason != "gpu_idle" && reason != "applications_clocks_setting") holding.push_back(reason);
  }
  if (!holding.empty()) {
    std::string list;
    for (const std::string& reason : holding) list += (list.empty() ? "" : ", ") + reason;
    findings.push_back({"gpu_throttle", "warn", "clocks held back now: " + list,
                        "let the GPU cool down, and check its power cap and cooling"});
  }
  if (state.sm_mhz && state.sm_max_mhz) {
    findings.push_back({"gpu_clocks", "note",
                        "SM clock " + std::to_string(*state.sm_mhz) + " of at most " +
                            std::to_string(*state.sm_max_mhz) + " MHz now",
                        "lock the clocks for steadier timings: sudo nvidia-smi --lock-gpu-clocks=<base MHz>"});
  }
  return findings;
}

std::vector<MachineFinding> check_machine(int threads, double window_seconds) {
  std::vector<MachineFinding> findings = check_host(read_host_state(threads, window_seconds));
  for (const std::string& device : BackendRegistry::instance().devices()) {
    Backend* backend = BackendRegistry::instance().get(device);
    if (!backend->availability().ok) continue;
    for (MachineFinding& finding : backend->machine_findings()) findings.push_back(std::move(finding));
  }
  return findings;
}

Json findings_json(const std::vector<MachineFinding>& findings) {
  Json list = Json::array();
  for (const MachineFinding& finding : findings) {
    list.push_back(
        {{"check", finding.check}, {"level", finding.level}, {"message", finding.message}, {"fix", finding.fix}});
  }
  return list;
}


}  // namespace attnbench
