#include "harness/cuda/nvml_clocks.hpp"

#include <dlfcn.h>

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
  const char* (*error_string)(int) = nullptr;
  std::string error;  // empty when loaded and initialised
};

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
    resolve(library, "nvmlErrorString", f.error_string);
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
  unsigned long long reasons = 0;
  json["throttle_reasons"] =
      f.clock_reasons && f.clock_reasons(handle_, &reasons) == 0 ? clock_event_reason_names(reasons) : Json();
  return json;
}

std::optional<bool> NvmlDevice::mig_enabled() const {
  const NvmlFunctions& f = nvml();
  if (!usable() || !f.mig_mode) return std::nullopt;
  unsigned int current = 0, pending = 0;
  if (f.mig_mode(handle_, &current, &pending) != 0) return std::nullopt;  // not MIG-capable
  return current == 1;
}

}  // namespace attnbench
