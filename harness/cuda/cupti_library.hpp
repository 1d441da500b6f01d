// libcupti, loaded at run time with dlopen: the binary has no link-time
// dependency on it, so it starts and runs (profiling "unavailable", with the
// reason) where CUPTI is missing, e.g. a machine with only the driver and the
// runtime. The headers give every entry point's exact type; the table below is
// the only list of the functions the harness uses. Every call goes through
// ATTNBENCH_CUPTI_CHECK, which throws a CuptiError carrying the file, line,
// call and CUPTI's own message.
#pragma once

#include <cupti_activity.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_version.h>

#include <stdexcept>
#include <string>

#define ATTNBENCH_CUPTI_FUNCTIONS(X)            \
  X(cuptiGetResultString)                       \
  X(cuptiGetVersion)                            \
  X(cuptiProfilerInitialize)                    \
  X(cuptiProfilerDeInitialize)                  \
  X(cuptiProfilerDeviceSupported)               \
  X(cuptiProfilerGetCounterAvailability)        \
  X(cuptiDeviceGetChipName)                     \
  X(cuptiProfilerHostInitialize)                \
  X(cuptiProfilerHostDeinitialize)              \
  X(cuptiProfilerHostGetMetricProperties)       \
  X(cuptiProfilerHostConfigAddMetrics)          \
  X(cuptiProfilerHostGetConfigImageSize)        \
  X(cuptiProfilerHostGetConfigImage)            \
  X(cuptiProfilerHostGetNumOfPasses)            \
  X(cuptiProfilerHostEvaluateToGpuValues)       \
  X(cuptiRangeProfilerEnable)                   \
  X(cuptiRangeProfilerDisable)                  \
  X(cuptiRangeProfilerGetCounterDataSize)       \
  X(cuptiRangeProfilerCounterDataImageInitialize) \
  X(cuptiRangeProfilerSetConfig)                \
  X(cuptiRangeProfilerStart)                    \
  X(cuptiRangeProfilerStop)                     \
  X(cuptiRangeProfilerPushRange)                \
  X(cuptiRangeProfilerPopRange)                 \
  X(cuptiRangeProfilerDecodeData)               \
  X(cuptiRangeProfilerGetCounterDataInfo)       \
  X(cuptiRangeProfilerCounterDataGetRangeInfo)   \
  X(cuptiActivityEnable)                        \
  X(cuptiActivityDisable)                       \
  X(cuptiActivityRegisterCallbacks)             \
  X(cuptiActivityFlushAll)                      \
  X(cuptiActivityGetNextRecord)                 \
  X(cuptiActivityGetNumDroppedRecords)          \
  X(cuptiActivityPushExternalCorrelationId)     \
  X(cuptiActivityPopExternalCorrelationId)

namespace attnbench {

struct CuptiLibrary {
#define ATTNBENCH_CUPTI_POINTER(name) decltype(&::name) name = nullptr;
  ATTNBENCH_CUPTI_FUNCTIONS(ATTNBENCH_CUPTI_POINTER)
#undef ATTNBENCH_CUPTI_POINTER
  std::string path;     // the file dlopen found
  std::string version;  // cuptiGetVersion, e.g. "130001"

  // CUPTI's name and description of a result code.
  std::string result_text(CUptiResult result) const;
};

// The library, loaded on first use (libcupti.so.13, libcupti.so, then the
// toolkit's directories known at build time); nullptr, with `error` saying
// what was tried, when it cannot be loaded or lacks an entry point.
const CuptiLibrary* load_cupti(std::string* error = nullptr);

class CuptiError : public std::runtime_error {
 public:
  CuptiError(CUptiResult result, const std::string& message) : std::runtime_error(message), result_(result) {}
  CUptiResult result() const { return result_; }

 private:
  CUptiResult result_;
};

[[noreturn]] void throw_cupti_error(const CuptiLibrary& cupti, CUptiResult result, const char* call, const char* file,
                                    int line);

}  // namespace attnbench

// ATTNBENCH_CUPTI_CHECK(cupti, cuptiProfilerHostInitialize, &params);
// ATTNBENCH_CUPTI_CALL(cupti, cuptiActivityEnable, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) for any arguments
#define ATTNBENCH_CUPTI_CALL(library, function, ...)                                                  \
  do {                                                                                               \
    const CUptiResult attnbench_cupti_status = (library).function(__VA_ARGS__);                      \
    if (attnbench_cupti_status != CUPTI_SUCCESS) {                                                   \
      ::attnbench::throw_cupti_error((library), attnbench_cupti_status, #function, __FILE__, __LINE__); \
    }                                                                                                \
  } while (0)

#define ATTNBENCH_CUPTI_CHECK(library, function, params)                                              \
  do {                                                                                               \
    const CUptiResult attnbench_cupti_status = (library).function(params);                           \
    if (attnbench_cupti_status != CUPTI_SUCCESS) {                                                   \
      ::attnbench::throw_cupti_error((library), attnbench_cupti_status, #function, __FILE__, __LINE__); \
    }                                                                                                \
  } while (0)
