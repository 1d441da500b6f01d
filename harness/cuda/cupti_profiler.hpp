// The profiling pass on a CUDA device: CUPTI's Range Profiler (target side)
// with its Host API (docs/io-models.md describes the pass; cupti_profiler.cpp
// has the call sequence).
//
// - The host side (metric names -> configuration image, pass count, metric
//   evaluation) needs no GPU when given a chip name ("GH100" for H100/H200):
//   CuptiHostConfig is tested that way.
// - The probe makes no target-side CUPTI call unless cudaGetDeviceCount finds a
//   usable device (without a driver cuptiDeviceGetChipName crashes). It then
//   tries, in order: loading libcupti, MIG (through NVML), cuptiProfilerInitialize,
//   cuptiProfilerDeviceSupported (vGPU, confidential computing, CMP, WSL, SLI),
//   the chip's counter availability and configuration image, and enabling the
//   range profiler on the context (insufficient privileges, another profiler
//   attached). Each failure is "unavailable" with the reason and a hint.
// - profile(): UserRange + UserReplay, one range around one call, the L2 flush
//   outside it; per kernel: AutoRange + KernelReplay, ranges "0", "1", …
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/cuda/cupti_library.hpp"
#include "harness/common/device_profiler.hpp"

namespace attnbench {

// A CUPTI host object with its configuration image for a metric set.
class CuptiHostConfig {
 public:
  // Throws CuptiError for an unknown chip or metric. An empty availability
  // image means offline (host only).
  CuptiHostConfig(const CuptiLibrary& cupti, const std::string& chip, const std::vector<std::string>& metrics,
                  const std::vector<std::uint8_t>& counter_availability = {});
  ~CuptiHostConfig();
  CuptiHostConfig(const CuptiHostConfig&) = delete;
  CuptiHostConfig& operator=(const CuptiHostConfig&) = delete;

  const std::string& chip() const { return chip_; }
  const std::vector<std::string>& metrics() const { return metrics_; }
  const std::vector<std::uint8_t>& config_image() const { return config_image_; }
  std::size_t passes() const { return passes_; }
  // The metrics' values for one range of a decoded counter-data image, in metrics() order.
  std::vector<double> evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range_index) const;

 private:
  void release();  // deinitializes the host object

  const CuptiLibrary& cupti_;
  std::string chip_;
  std::vector<std::string> metrics_;
  std::vector<const char*> metric_names_;
  std::vector<std::uint8_t> availability_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  std::vector<std::uint8_t> config_image_;
  std::size_t passes_ = 0;
};

// What a CUPTI error means for the probe: the reason's prefix and a hint.
struct CuptiFailure {
  std::string reason;
  std::string hint;
};
CuptiFailure explain_cupti_failure(CUptiResult result);

// Runs one step of the profiling pass. A CUPTI failure, or any other runtime
// error of the profiler's own, becomes a "failed" result naming `profiler`
// with the reason (and the run goes on without measured bytes); a DeviceError
// (a kernel's fault, which may have lost the CUDA context) passes through, so
// the case is recorded as failed and the runner restarts when it must.
ProfileResult run_profiling_step(const std::function<ProfileResult()>& step, const std::string& profiler);

// The profiler of CUDA device `ordinal` (its PCI bus id finds it in NVML).
std::unique_ptr<DeviceProfiler> make_cupti_profiler(int ordinal, std::string pci_bus_id);

}  // namespace attnbench
