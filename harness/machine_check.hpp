// What makes this machine unfit for benchmarking right now, and how to fix it
// (`attnbench doctor`, `run --check-machine`; docs/ci-gate.md): the load and
// steal time, the CPU frequency governor and turbo, busy SMT siblings, the
// thread count against the free cores, memory pressure; on a GPU (the CUDA
// backend's own checks), other processes on the device, clocks, persistence
// mode, power limit, ECC and throttle reasons. Every run records the findings
// in its identity (the results file's "machine"), and the gate's summary
// repeats those that can change a verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

struct MachineFinding {
  std::string check;    // "load", "steal", "governor", "turbo", "smt", "threads", "memory", "gpu_…"
  std::string level;    // "ok", "note" (worth knowing) or "warn" (can change a verdict)
  std::string message;  // what was found
  std::string fix;      // how to fix it; empty when nothing is to be done
};

// The host's state as the checks read it; the inputs of check_host, so that
// the rules are tested on made-up machines.
struct HostState {
  int available_cpus = 1;
  int threads = 1;                       // the run's host threads
  std::optional<double> load_1min;
  std::optional<double> steal_fraction;  // over a short window
  std::vector<std::string> governors;    // scaling_governor of each CPU that has one
  std::optional<bool> turbo_enabled;
  bool smt_active = false;
  std::vector<double> busy_sibling_fractions;  // utilisation of SMT siblings of the CPUs this process may use
  std::optional<double> memory_available_fraction;
  std::optional<double> memory_pressure_avg10;  // /proc/pressure/memory "some avg10", percent
};

// A GPU's state as the device checks read it (harness/cuda/nvml_clocks.hpp);
// nullopt where the driver does not say.
struct GpuState {
  std::string name;
  std::optional<int> other_processes;  // compute processes on the device besides this one
  std::optional<bool> persistence_mode;
  std::optional<double> power_limit_watts, default_power_limit_watts;
  std::optional<bool> ecc_enabled;
  std::optional<unsigned> sm_mhz, sm_max_mhz;
  std::vector<std::string> throttle_reasons;  // active now, as clock_event_reason_names names them
};

std::vector<MachineFinding> check_gpu(const GpuState& state);

// Reads the host's state (takes about `window_seconds` to measure steal time and
// sibling utilisation).
HostState read_host_state(int threads, double window_seconds = 0.2);

std::vector<MachineFinding> check_host(const HostState& state);

// Findings of the host and of every available device backend, the host's
// activity measured over `window_seconds` (doctor: 0.2 s; run: less, as every run
// pays it).
std::vector<MachineFinding> check_machine(int threads, double window_seconds = 0.2);
inline constexpr double kRunMachineCheckSeconds = 0.05;

nlohmann::ordered_json findings_json(const std::vector<MachineFinding>& findings);

// "warn: load average 6.2 … (fix: …)" lines of findings_json's output, all or
// only the warnings (inline: compare reads them without the checks).
inline std::vector<std::string> findings_lines(const nlohmann::ordered_json& findings, bool warnings_only) {
  std::vector<std::string> lines;
  for (const nlohmann::ordered_json& finding : findings) {
    const std::string level = finding["level"];
    if (warnings_only && level != "warn") continue;
    std::string line = level + ": " + finding["message"].get<std::string>();
    if (!finding["fix"].get<std::string>().empty()) line += " (fix: " + finding["fix"].get<std::string>() + ")";
    lines.push_back(line);
  }
  return lines;
}

}  // namespace attnbench
