// The roofline's ceilings of a device: its compute rate and its memory
// bandwidth. For the host, what the run's calibration measured
// (host.calibration: an fp32 GEMM rate and a copy bandwidth at the run's
// thread count); for a GPU, the published dense fp16/bf16 tensor-core rate and
// HBM bandwidth of its model (NVIDIA's datasheets), found by its name; none
// for the simulator, whose time is no device's.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace attnbench {

struct Ceilings {
  double flops_per_second = 0;
  double bytes_per_second = 0;
  std::string source;  // "host calibration (fp32 GEMM, copy)" or "NVIDIA H100 SXM datasheet (dense fp16, HBM3)"
  // The arithmetic intensity (FLOP per byte) where the two meet.
  double ridge() const { return flops_per_second / bytes_per_second; }
  // The attainable rate at `intensity` FLOP per byte.
  double roof(double intensity) const;
};

// The ceilings of `device` (a results file's devices entry) for records of a
// results file with host record `host`; nullopt when none are known.
std::optional<Ceilings> device_ceilings(const nlohmann::ordered_json& device, const nlohmann::ordered_json& host);

}  // namespace attnbench
