#include "harness/report/ceilings.hpp"

#include <algorithm>

namespace attnbench {
namespace {

// Dense fp16/bf16 tensor-core rates (fp32 accumulation) and HBM bandwidths,
// from NVIDIA's datasheets; the first whose name fragment the device's name
// holds applies.
struct GpuPeak {
  const char* name_fragment;
  double flops_per_second;
  double bytes_per_second;
  const char* source;
};
constexpr GpuPeak kGpuPeaks[] = {
    {"H200", 989e12, 4.8e12, "NVIDIA H200 datasheet (dense fp16 989 TFLOP/s, HBM3e 4.8 TB/s)"},
    {"H100 PCIe", 756e12, 2.0e12, "NVIDIA H100 PCIe datasheet (dense fp16 756 TFLOP/s, HBM2e 2.0 TB/s)"},
    {"H100", 989e12, 3.35e12, "NVIDIA H100 SXM datasheet (dense fp16 989 TFLOP/s, HBM3 3.35 TB/s)"},
    {"A100-SXM4-80GB", 312e12, 2.039e12, "NVIDIA A100 80GB SXM datasheet (dense fp16 312 TFLOP/s, HBM2e 2.0 TB/s)"},
    {"A100 80GB", 312e12, 1.935e12, "NVIDIA A100 80GB PCIe datasheet (dense fp16 312 TFLOP/s, HBM2e 1.9 TB/s)"},
    {"A100", 312e12, 1.555e12, "NVIDIA A100 40GB datasheet (dense fp16 312 TFLOP/s, HBM2 1.6 TB/s)"},
};

}  // namespace

double Ceilings::roof(double intensity) const { return std::min(flops_per_second, bytes_per_second * intensity); }

std::optional<Ceilings> device_ceilings(const nlohmann::ordered_json& device, const nlohmann::ordered_json& host) {
  const std::string kind = device.value("kind", "");
  if (kind == "cpu") {
    const nlohmann::ordered_json calibration = host.value("calibration", nlohmann::ordered_json());
    if (!calibration.is_object()) return std::nullopt;
    return Ceilings{calibration["gemm"]["flops_per_second"].get<double>(),
                    calibration["copy"]["bytes_per_second"].get<double>(),
                    "host calibration at " + calibration["threads"].dump() + " thread(s): fp32 GEMM rate, copy bandwidth"};
  }
  if (kind == "cuda") {
    const std::string name = device.value("name", "");
    for (const GpuPeak& peak : kGpuPeaks) {
      if (name.find(peak.name_fragment) != std::string::npos) {
        return Ceilings{peak.flops_per_second, peak.bytes_per_second, peak.source};
      }
    }
  }
  return std::nullopt;
}

}  // namespace attnbench
