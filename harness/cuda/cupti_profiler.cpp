#include "harness/cuda/cupti_profiler.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <optional>

#include "harness/cuda/nvidia_driver.hpp"
#include "harness/cuda/nvml_clocks.hpp"
#include "harness/errors.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

// A CUPTI parameter struct: zeroed, with its structSize (pPriv stays NULL).
template <typename Params>
Params cupti_params(std::size_t struct_size) {
  Params params{};
  params.structSize = struct_size;
  return params;
}
#define ATTNBENCH_CUPTI_PARAMS(Type) cupti_params<Type>(Type##_STRUCT_SIZE)

}  // namespace

// ---- host side ---------------------------------------------------------------------

CuptiHostConfig::CuptiHostConfig(const CuptiLibrary& cupti, const std::string& chip,
                                 const std::vector<std::string>& metrics,
                                 const std::vector<std::uint8_t>& counter_availability)
    : cupti_(cupti), chip_(chip), metrics_(metrics), availability_(counter_availability) {
  for (const std::string& metric : metrics_) metric_names_.push_back(metric.c_str());
  auto initialize = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  initialize.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  initialize.pChipName = chip_.c_str();
  initialize.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  ATTNBENCH_CUPTI_CHECK(cupti_, cuptiProfilerHostInitialize, &initialize);
  host_ = initialize.pHostObject;
  try {
    auto add = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = host_;
    add.ppMetricNames = metric_names_.data();
    add.numMetrics = metric_names_.size();
    ATTNBENCH_CUPTI_CHECK(cupti_, cuptiProfilerHostConfigAddMetrics, &add);
    auto size = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    size.pHostObject = host_;
    ATTNBENCH_CUPTI_CHECK(cupti_, cuptiProfilerHostGetConfigImageSize, &size);
    config_image_.resize(size.configImageSize);
    auto image = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    image.pHostObject = host_;
    image.configImageSize = config_image_.size();
    image.pConfigImage = config_image_.data();
    ATTNBENCH_CUPTI_CHECK(cupti_, cuptiProfilerHostGetConfigImage, &image);
    auto passes = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    passes.configImageSize = config_image_.size();
    passes.pConfigImage = config_image_.data();
    ATTNBENCH_CUPTI_CHECK(cupti_, cuptiProfilerHostGetNumOfPasses, &passes);
    passes_ = passes.numOfPasses;
  } catch (...) {
    release();
    throw;
  }
}

CuptiHostConfig::~CuptiHostConfig() { release(); }

void CuptiHostConfig::release() {
  auto deinitialize = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  deinitialize.pHostObject = host_;
  cupti_.cuptiProfilerHostDeinitialize(&deinitialize);
}

std::vector<double> CuptiHostConfig::evaluate(const std::vector<std::uint8_t>& counter_data,
                                              std::size_t range_index) const {
  std::vector<double> values(metric_names_.size(), 0.0);
  auto evaluate = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  evaluate.pHostObject = host_;
  evaluate.pCounterDataImage = counter_data.data();
  evaluate.counterDataImageSize = counter_data.size();
  evaluate.rangeIndex = range_index;
  evaluate.ppMetricNames = const_cast<const char**>(metric_names_.data());
  evaluate.numMetrics = metric_names_.size();
  evaluate.pMetricValues = values.data();
  ATTNBENCH_CUPTI_CHECK(cupti_, cuptiProfilerHostEvaluateToGpuValues, &evaluate);
  return values;
}

CuptiFailure explain_cupti_failure(CUptiResult result) {
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return {"insufficient privileges to read GPU performance counters",
              "run as root or with CAP_SYS_ADMIN, or load the nvidia kernel module with "
              "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)"};
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return {"another profiler holds CUPTI in this process (ncu, nsys or compute-sanitizer attached?)",
              "run without the outside tool, or pass --no-profile when running under one"};
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return {"the GPU is virtualised (vGPU or passthrough without profiling support)",
              "enable profiling for the vGPU in the hypervisor, or use a bare-metal GPU"};
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
      return {"CUPTI does not profile NVIDIA CMP devices", ""};
    case CUPTI_ERROR_NOT_SUPPORTED:
      return {"the device or configuration does not support the Range Profiler", ""};
    default:
      return {"CUPTI failed", ""};
  }
}

namespace {

// ---- target side -------------------------------------------------------------------

std::string support_level_problem(const char* feature, CUpti_Profiler_Support_Level level) {
  if (level == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return {};
  return std::string(feature) + (level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? " (profiling disabled)" : "");
}

// The range profiler on one context: enabled for the object's life.
class RangeProfilerScope {
 public:
  RangeProfilerScope(const CuptiLibrary& cupti, CUcontext context) : cupti_(cupti) {
    auto enable = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
    enable.ctx = context;
    ATTNBENCH_CUPTI_CHECK(cupti_, cuptiRangeProfilerEnable, &enable);
    object_ = enable.pRangeProfilerObject;
  }
  ~RangeProfilerScope() {
    auto disable = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
    disable.pRangeProfilerObject = object_;
    cupti_.cuptiRangeProfilerDisable(&disable);
  }
  RangeProfilerScope(const RangeProfilerScope&) = delete;
  RangeProfilerScope& operator=(const RangeProfilerScope&) = delete;
  CUpti_RangeProfiler_Object* object() const { return object_; }

 private:
  const CuptiLibrary& cupti_;
  CUpti_RangeProfiler_Object* object_ = nullptr;
};

class CuptiProfiler final : public DeviceProfiler {
 public:
  CuptiProfiler(int ordinal, std::string pci_bus_id) : ordinal_(ordinal), pci_bus_id_(std::move(pci_bus_id)) {}

  const ProfilerProbe& probe() override {
    if (!probe_) probe_ = run_probe();
    return *probe_;
  }

  ProfileResult profile(const std::function<void()>& prepare, const std::function<void()>& call,
                        bool per_kernel) override {
    const ProfilerProbe& answer = probe();
    if (!answer.available) return ProfileResult::not_collected("unavailable", answer.reason, answer.hint);
    return run_profiling_step(
        [&] {
          ProfileResult result;
          result.profiler = "cupti.range_profiler";
          result.per_kernel_requested = per_kernel;
          result.ranges = collect(false, prepare, call, result.passes);
          if (per_kernel) {
            std::size_t kernel_passes = 0;
            result.kernels = collect(true, prepare, call, kernel_passes);
          }
          return result;
        },
        "cupti.range_profiler");
  }

 private:
  static constexpr std::size_t kMaxKernelRanges = 64;
  static constexpr std::size_t kMaxPasses = 16;

  ProfilerProbe unavailable(std::string reason, std::string hint = {}) {
    ProfilerProbe answer;
    answer.reason = std::move(reason);
    answer.hint = std::move(hint);
    answer.details = details_;
    return answer;
  }

  ProfilerProbe run_probe() {
    details_ = Json{{"profiler", "cupti.range_profiler"}};
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count <= ordinal_) {
      (void)cudaGetLastError();
      return unavailable(status != cudaSuccess ? cuda_unavailable_reason(cudaGetErrorName(status),
                                                                         cudaGetErrorString(status), probe_nvidia_driver())
                                               : "no usable CUDA device (" + std::to_string(count) +
                                                     " found; device " + std::to_string(ordinal_) + " asked for)");
    }
    std::string load_error;
    cupti_ = load_cupti(&load_error);
    if (!cupti_) return unavailable(load_error, "install the CUDA toolkit's CUPTI or add its lib64 to LD_LIBRARY_PATH");
    details_["library"] = cupti_->path;
    details_["cupti_version"] = cupti_->version;
    const NvmlDevice nvml(pci_bus_id_);
    if (nvml.mig_enabled().value_or(false)) {
      return unavailable(
          "the GPU is in MIG mode; the Range Profiler's device-level counters are not available on a MIG slice",
          "profile on a GPU with MIG disabled (nvidia-smi -mig 0)");
    }
    try {
      return probe_target();
    } catch (const DeviceError&) {
      throw;
    } catch (const CuptiError& error) {
      const CuptiFailure failure = explain_cupti_failure(error.result());
      return unavailable(failure.reason + ": " + error.what(), failure.hint);
    } catch (const std::runtime_error& error) {
      return unavailable(error.what());
    }
  }

  ProfilerProbe probe_target() {
    if (cudaSetDevice(ordinal_) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
      (void)cudaGetLastError();
      return unavailable("cannot create a CUDA context on device " + std::to_string(ordinal_));
    }
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &function, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || !function) {
      (void)cudaGetLastError();
      return unavailable("the CUDA driver does not export cuCtxGetCurrent");
    }
    if (reinterpret_cast<CUresult (*)(CUcontext*)>(function)(&context_) != CUDA_SUCCESS || !context_) {
      return unavailable("no current CUDA context");
    }
    auto initialize = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    ATTNBENCH_CUPTI_CHECK(*cupti_, cuptiProfilerInitialize, &initialize);

    auto supported = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
    supported.cuDevice = ordinal_;
    supported.api = CUPTI_PROFILER_RANGE_PROFILING;
    ATTNBENCH_CUPTI_CHECK(*cupti_, cuptiProfilerDeviceSupported, &supported);
    if (supported.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
      std::string problems;
      for (const std::string& problem :
           {support_level_problem("architecture (compute capability below 7.0)", supported.architecture),
            support_level_problem("SLI", supported.sli), support_level_problem("vGPU", supported.vGpu),
            support_level_problem("confidential computing", supported.confidentialCompute),
            support_level_problem("CMP device", supported.cmp), support_level_problem("WSL", supported.wsl)}) {
        if (!problem.empty()) problems += (problems.empty() ? "" : ", ") + problem;
      }
      return unavailable("CUPTI does not support profiling this device: " + (problems.empty() ? "unknown" : problems),
                         supported.vGpu == CUPTI_PROFILER_CONFIGURATION_DISABLED
                             ? "enable profiling for the vGPU in the hypervisor"
                             : "");
    }

    auto chip = ATTNBENCH_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
    chip.deviceIndex = static_cast<std::size_t>(ordinal_);
    ATTNBENCH_CUPTI_CHECK(*cupti_, cuptiDeviceGetChipName, &chip);
    details_["chip"] = chip.pChipName;

    auto availability = ATTNBENCH_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
    availability.ctx = context_;
    ATTNBENCH_CUPTI_CHECK(*cupti_, cuptiProfilerGetCounterAvailability, &availability);
    std::vector<std::uint8_t> image(availability.counterAvailabilityImageSize);
    availability.pCounterAvailabilityImage = image.data();
    ATTNBENCH_CUPTI_CHECK(*cupti_, cuptiProfilerGetCounterAvailability, &availability);

    host_ = std::make_unique<CuptiHostConfig>(*cupti_, chip.pChipName, profiler_metrics(), image);
    details_["passes"] = host_->passes();
    { const RangeProfilerScope scope(*cupti_, context_); }  // privileges, another profiler attached
    ProfilerProbe answer;
    answer.available = true;
    answer.details = details_;
    return answer;
  }

  // One profiling session: a user range around `call` (per pass), or one range
  // per kernel. Returns the ranges with their metric values.
  std::vector<ProfiledRange> collect(bool per_kernel, const std::function<void()>& prepare,
                                     const std::function<void()>& call, std::size_t& passes) {
    const CuptiLibrary& cupti = *cupti_;
    const RangeProfilerScope scope(cupti, context_);
    const std::vector<std::string>& metrics = host_->metrics();
    std::vector<const char*> names;
    for (const std::string& metric : metrics) names.push_back(metric.c_str());
    const std::size_t max_ranges = per_kernel ? kMaxKernelRanges : 1;

    auto size = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
    size.pRangeProfilerObject = scope.object();
    size.pMetricNames = names.data();
    size.numMetrics = names.size();
    size.maxNumOfRanges = max_ranges;
    size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_ranges);
    ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerGetCounterDataSize, &size);
    std::vector<std::uint8_t> counter_data(size.counterDataSize);
    auto initialize = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
    initialize.pRangeProfilerObject = scope.object();
    initialize.counterDataSize = counter_data.size();
    initialize.pCounterData = counter_data.data();
    ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerCounterDataImageInitialize, &initialize);

    auto config = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
    config.pRangeProfilerObject = scope.object();
    config.configSize = host_->config_image().size();
    config.pConfig = host_->config_image().data();
    config.counterDataImageSize = counter_data.size();
    config.pCounterDataImage = counter_data.data();
    config.range = per_kernel ? CUPTI_AutoRange : CUPTI_UserRange;
    config.replayMode = per_kernel ? CUPTI_KernelReplay : CUPTI_UserReplay;
    config.maxRangesPerPass = max_ranges;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerSetConfig, &config);

    passes = 0;
    for (bool submitted = false; !submitted;) {
      if (++passes > kMaxPasses) throw std::runtime_error("CUPTI asked for more than 16 passes");
      prepare();  // the L2 flush, finished before the range opens
      auto start = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
      start.pRangeProfilerObject = scope.object();
      ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerStart, &start);
      if (!per_kernel) {
        auto push = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params);
        push.pRangeProfilerObject = scope.object();
        push.pRangeName = "call";
        ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerPushRange, &push);
      }
      call();  // waits for its work
      if (!per_kernel) {
        auto pop = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params);
        pop.pRangeProfilerObject = scope.object();
        ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerPopRange, &pop);
      }
      auto stop = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
      stop.pRangeProfilerObject = scope.object();
      ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerStop, &stop);
      submitted = stop.isAllPassSubmitted != 0;
    }

    auto decode = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
    decode.pRangeProfilerObject = scope.object();
    ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerDecodeData, &decode);
    if (decode.numOfRangeDropped > 0) {
      throw std::runtime_error(std::to_string(decode.numOfRangeDropped) + " profiling range(s) dropped (more than " +
                               std::to_string(max_ranges) + " kernels in one call?)");
    }
    auto info = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
    info.pCounterDataImage = counter_data.data();
    info.counterDataImageSize = counter_data.size();
    ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerGetCounterDataInfo, &info);
    std::vector<ProfiledRange> ranges;
    for (std::size_t index = 0; index < info.numTotalRanges; ++index) {
      auto range = ATTNBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
      range.pCounterDataImage = counter_data.data();
      range.counterDataImageSize = counter_data.size();
      range.rangeIndex = index;
      range.rangeDelimiter = "/";
      ATTNBENCH_CUPTI_CHECK(cupti, cuptiRangeProfilerCounterDataGetRangeInfo, &range);
      ranges.push_back(ProfiledRange{range.rangeName ? range.rangeName : std::to_string(index),
                                     host_->evaluate(counter_data, index)});
    }
    return ranges;
  }

  int ordinal_;
  std::string pci_bus_id_;
  std::optional<ProfilerProbe> probe_;
  Json details_ = Json::object();
  const CuptiLibrary* cupti_ = nullptr;
  CUcontext context_ = nullptr;
  std::unique_ptr<CuptiHostConfig> host_;
};

}  // namespace

ProfileResult run_profiling_step(const std::function<ProfileResult()>& step, const std::string& profiler) {
  try {
    return step();
  } catch (const DeviceError&) {
    throw;
  } catch (const CuptiError& error) {
    const CuptiFailure failure = explain_cupti_failure(error.result());
    ProfileResult failed = ProfileResult::not_collected("failed", failure.reason + ": " + error.what(), failure.hint);
    failed.profiler = profiler;
    return failed;
  } catch (const std::runtime_error& error) {
    ProfileResult failed = ProfileResult::not_collected("failed", error.what());
    failed.profiler = profiler;
    return failed;
  }
}

std::unique_ptr<DeviceProfiler> make_cupti_profiler(int ordinal, std::string pci_bus_id) {
  return std::make_unique<CuptiProfiler>(ordinal, std::move(pci_bus_id));
}

}  // namespace attnbench
