// SM and memory clocks, throttle reasons, MIG mode and the machine check's
// state (processes, persistence, power limit, ECC) of one GPU, read through
// NVML loaded at run time (dlopen "libnvidia-ml.so.1", shipped with the
// driver): no link-time dependency, and where it is missing every reading says
// so instead of failing. The GPU is found by its PCI bus id, so the CUDA
// ordinal maps to the right NVML device under CUDA_VISIBLE_DEVICES.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harness/machine_check.hpp"

namespace attnbench {

class NvmlDevice {
 public:
  // pci_bus_id as cudaDeviceGetPCIBusId writes it ("0000:3B:00.0").
  explicit NvmlDevice(const std::string& pci_bus_id);
  bool usable() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }  // why not usable

  // {"source": "nvml", "sm_mhz", "memory_mhz", "sm_max_mhz", "memory_max_mhz",
  //  "throttle_reasons": [...]}, or {"source": "unavailable", "reason"}.
  nlohmann::ordered_json clocks() const;
  // The SM clock now (one NVML call, cheap enough after every sample); nullopt where it cannot be read.
  std::optional<double> sm_clock_mhz() const;
  // Locks the SM clock at its default application clock (the base clock the
  // GPU sustains under load); "" with `mhz` set when locked, else NVML's reason.
  std::string lock_sm_clock(unsigned& mhz) const;
  void reset_locked_clocks() const;
  // True or false when NVML can tell, nullopt otherwise.
  std::optional<bool> mig_enabled() const;
  // What the machine check reads (harness/machine_check.hpp): other compute
  // processes, persistence mode, power limits, ECC, clocks and throttle
  // reasons; fields NVML cannot read stay empty.
  GpuState state() const;

 private:
  void* handle_ = nullptr;  // nvmlDevice_t
  std::string error_;
};

// Names of the bits of nvmlDeviceGetCurrentClocksEventReasons, for tests and docs.
nlohmann::ordered_json clock_event_reason_names(unsigned long long mask);

}  // namespace attnbench
