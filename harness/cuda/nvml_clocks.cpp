#include "harness/cuda/nvml_clocks.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

// The few NVML entry points used, declared here (nvml.h is not part of the
// toolkit everywhere); the types follow nvml.h: nvmlReturn_t is an int
// (0 = NVML_SUCCESS), nvmlDevice_t a pointer, nvmlClockType_t an int
// (1 = NVML_CLOCK_SM, 2 = NVML_CLOCK_MEM).
using NvmlDeviceHandle = void*;
struct NvmlFunctions {
  int (*init)() = nullptr;
  int (*handle_by_pci_bus_id)(const char*, NvmlDeviceHandle*) = nullptr;
  int (*clock_info)(NvmlDeviceHandle, int, unsigned int*) = nullptr;
  int (*max_clock_info)(NvmlDeviceHandle, int, unsigned int*) = nullptr;
  int (*clock_reasons)(NvmlDeviceHandle, unsigned long long*) = nullptr;
  int (*mig_mode)(NvmlDeviceHandle, unsigned int*, unsigned int*) = nullptr;
  int (*compute_processes)(NvmlDeviceHandle, unsigned int*, void*) = nullptr;
  int (*persistence_mode)(NvmlDeviceHandle, int*) = nullptr;
  int (*power_limit)(NvmlDeviceHandle, unsigned int*) = nullptr;          // milliwatts
  int (*default_power_limit)(NvmlDeviceHandle, unsigned int*) = nullptr;  // milliwatts
  int (*ecc_mode)(NvmlDeviceHandle, int*, int*) = nullptr;
  int (*name)(NvmlDeviceHandle, char*, unsigned int) = nullptr;
  int (*default_application_clock)(NvmlDeviceHandle, int, unsigned int*) = nullptr;
  int (*set_locked_clocks)(NvmlDeviceHandle, unsigned int, unsigned int) = nullptr;
  int (*reset_locked_clocks)(NvmlDeviceHandle) = nullptr;
  const char* (*error_string)(int) = nullptr;
  std::string error;  // empty when loaded and initialised
};

// nvmlProcessInfo_t of the _v3 entry points.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
// NVML_ERROR_INSUFFICIENT_SIZE: the list holds more processes than the buffer.
constexpr int kInsufficientSize = 7;

constexpr int kClockSm = 1;
constexpr int kClockMemory = 2;

template <typename Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
}

const NvmlFunctions& nvml() {
  static const NvmlFunctions functions = [] {
    NvmlFunctions f;
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      f.error = std::string("NVML not loaded (") + dlerror() + ")";
      return f;
    }
    resolve(library, "nvmlInit_v2", f.init);
    resolve(library, "nvmlDeviceGetHandleByPciBusId_v2", f.handle_by_pci_bus_id);
    resolve(library, "nvmlDeviceGetClockInfo", f.clock_info);
    resolve(library, "nvmlDeviceGetMaxClockInfo", f.max_clock_info);
    resolve(library, "nvmlDeviceGetCurrentClocksEventReasons", f.clock_reasons);
    if (!f.clock_reasons) resolve(library, "nvmlDeviceGetCurrentClocksThrottleReasons", f.clock_reasons);
    resolve(library, "nvmlDeviceGetMigMode", f.mig_mode);
    resolve(library, "nvmlDeviceGetComputeRunningProcesses_v3", f.compute_processes);
    resolve(library, "nvmlDeviceGetPersistenceMode", f.persistence_mode);
    resolve(library, "nvmlDeviceGetEnforcedPowerLimit", f.power_limit);
    resolve(library, "nvmlDeviceGetPowerManagementDefaultLimit", f.default_power_limit);
    resolve(library, "nvmlDeviceGetEccMode", f.ecc_mode);
    resolve(library, "nvmlDeviceGetName", f.name);
    resolve(library, "nvmlErrorString", f.error_string);
    resolve(library, "nvmlDeviceGetDefaultApplicationsClock", f.default_application_clock);
    resolve(library, "nvmlDeviceSetGpuLockedClocks", f.set_locked_clocks);
    resolve(library, "nvmlDeviceResetGpuLockedClocks", f.reset_locked_clocks);
    if (!f.init || !f.handle_by_pci_bus_id || !f.clock_info) {
      f.error = "NVML lacks the clock entry points";
      return f;
    }
    if (const int status = f.init(); status != 0) {
      f.error = "nvmlInit failed (" + std::string(f.error_string ? f.error_string(status) : "error") + ")";
    }
    return f;
  }();
  return functions;
}

}  // namespace

Json clock_event_reason_names(unsigned long long mask) {
  static const std::pair<unsigned long long, const char*> names[] = {{0x1, "gpu_idle"},
                                                                     {0x2, "applications_clocks_setting"},
                                                                     {0x4, "sw_power_cap"},
                                                                     {0x8, "hw_slowdown"},
                                                                     {0x10, "sync_boost"},
                                                                     {0x20, "sw_thermal_slowdown"},
                                                                     {0x40, "hw_thermal_slowdown"},
                                                                     {0x80, "hw_power_brake_slowdown"},
                                                                     {0x100, "display_clock_setting"}};
  Json list = Json::array();
  for (const auto& [bit, name] : names) {
    if (mask & bit) list.push_back(name);
  }
  return list;
}

NvmlDevice::NvmlDevice(const std::string& pci_bus_id) {
  const NvmlFunctions& f = nvml();
  if (!f.error.empty()) {
    error_ = f.error;
    return;
  }
  NvmlDeviceHandle handle = nullptr;
  if (const int status = f.handle_by_pci_bus_id(pci_bus_id.c_str(), &handle); status != 0) {
    error_ = "NVML has no device at PCI " + pci_bus_id + " (" +
             std::string(f.error_string ? f.error_string(status) : "error") + ")";
    return;
  }
  handle_ = handle;
}

Json NvmlDevice::clocks() const {
  if (!usable()) return Json{{"source", "unavailable"}, {"reason", error_}};
  const NvmlFunctions& f = nvml();
  Json json{{"source", "nvml"}};
  const auto read = [&](int (*function)(NvmlDeviceHandle, int, unsigned int*), int type, const char* key) {
    unsigned int mhz = 0;
    json[key] = function && function(handle_, type, &mhz) == 0 ? Json(mhz) : Json();
  };
  read(f.clock_info, kClockSm, "sm_mhz");
  read(f.clock_info, kClockMemory, "memory_mhz");
  read(f.max_clock_info, kClockSm, "sm_max_mhz");
  read(f.max_clock_info, kClockMemory, "memory_max_mhz");
  unsigned int milliwatts = 0;
  json["power_limit_watts"] =
      f.power_limit && f.power_limit(handle_, &milliwatts) == 0 ? Json(milliwatts / 1000.0) : Json();
  unsigned long long reasons = 0;
  json["throttle_reasons"] =
      f.clock_reasons && f.clock_reasons(handle_, &reasons) == 0 ? clock_event_reason_names(reasons) : Json();
  return json;
}

std::optional<double> NvmlDevice::sm_clock_mhz() const {
  unsigned int mhz = 0;
  if (!usable() || nvml().clock_info(handle_, kClockSm, &mhz) != 0) return std::nullopt;
  return mhz;
}

std::string NvmlDevice::lock_sm_clock(unsigned& mhz) const {
  if (!usable()) return error_;
  const NvmlFunctions& f = nvml();
  if (!f.default_application_clock || !f.set_locked_clocks || !f.reset_locked_clocks) {
    return "this NVML has no locked-clock entry points";
  }
  const auto text = [&](int status) { return std::string(f.error_string ? f.error_string(status) : "error"); };
  if (const int status = f.default_application_clock(handle_, kClockSm, &mhz); status != 0) {
    return "nvmlDeviceGetDefaultApplicationsClock: " + text(status);
  }
  if (const int status = f.set_locked_clocks(handle_, mhz, mhz); status != 0) {
    return "nvmlDeviceSetGpuLockedClocks: " + text(status) + " (it needs root and a GPU that supports it)";
  }
  return "";
}

void NvmlDevice::reset_locked_clocks() const {
  if (usable() && nvml().reset_locked_clocks) nvml().reset_locked_clocks(handle_);
}

std::optional<bool> NvmlDevice::mig_enabled() const {
  const NvmlFunctions& f = nvml();
  if (!usable() || !f.mig_mode) return std::nullopt;
  unsigned int current = 0, pending = 0;
  if (f.mig_mode(handle_, &current, &pending) != 0) return std::nullopt;  // not MIG-capable
  return current == 1;
}

GpuState NvmlDevice::state() const {
  GpuState state;
  if (!usable()) return state;
  const NvmlFunctions& f = nvml();
  char name[96] = {};
  if (f.name && f.name(handle_, name, sizeof name) == 0) state.name = name;
  if (f.compute_processes) {
    std::vector<NvmlProcessInfo> processes(64);
    auto count = static_cast<unsigned int>(processes.size());
    const int status = f.compute_processes(handle_, &count, processes.data());
    if (status == 0 || status == kInsufficientSize) {
      int others = 0;
      for (unsigned int i = 0; i < count; ++i) {
        if (i >= processes.size() || processes[i].pid != static_cast<unsigned int>(getpid())) ++others;
      }
      state.other_processes = others;
    }
  }
  if (int mode = 0; f.persistence_mode && f.persistence_mode(handle_, &mode) == 0) state.persistence_mode = mode == 1;
  if (unsigned int milliwatts = 0; f.power_limit && f.power_limit(handle_, &milliwatts) == 0) {
    state.power_limit_watts = milliwatts / 1000.0;
  }
  if (unsigned int milliwatts = 0; f.default_power_limit && f.default_power_limit(handle_, &milliwatts) == 0) {
    state.default_power_limit_watts = milliwatts / 1000.0;
  }
  if (int current = 0, pending = 0; f.ecc_mode && f.ecc_mode(handle_, &current, &pending) == 0) {
    state.ecc_enabled = current == 1;
  }
  const Json now = clocks();
  if (now["sm_mhz"].is_number() && now["sm_max_mhz"].is_number()) {
    state.sm_mhz = now["sm_mhz"].get<unsigned>();
    state.sm_max_mhz = now["sm_max_mhz"].get<unsigned>();
  }
  if (now["throttle_reasons"].is_array()) state.throttle_reasons = now["throttle_reasons"].get<std::vector<std::string>>();
  return state;
}

}  // namespace attnbench
