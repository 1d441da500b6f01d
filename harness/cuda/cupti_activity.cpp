#include "harness/cuda/cupti_activity.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "harness/common/kernel_activity.hpp"
#include "harness/cuda/cupti_library.hpp"

namespace attnbench {
namespace {

constexpr CUpti_ExternalCorrelationKind kSampleKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr std::size_t kBufferBytes = std::size_t{8} << 20;
constexpr std::size_t kBufferAlignment = 8;

// The activity kinds the timer enables: the kernels, the external
// correlations, and the API records those correlations are made for.
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                         CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

// What CUPTI's completed buffers held since the last take(); CUPTI hands
// buffers to the callbacks below, from its own thread or within a flush.
struct Collected {
  std::vector<KernelActivity> kernels;
  std::vector<SampleCorrelation> correlations;
};
std::mutex collected_mutex;
Collected collected;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  const CuptiLibrary* cupti = load_cupti();
  Collected found;
  CUpti_Activity* record = nullptr;
  while (cupti && cupti->cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      found.kernels.push_back({kernel->start, kernel->end, kernel->correlationId});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* correlation = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (correlation->externalKind == kSampleKind) {
        found.correlations.push_back({correlation->correlationId, correlation->externalId});
      }
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> guard(collected_mutex);
  collected.kernels.insert(collected.kernels.end(), found.kernels.begin(), found.kernels.end());
  collected.correlations.insert(collected.correlations.end(), found.correlations.begin(), found.correlations.end());
}

Collected take_collected() {
  std::lock_guard<std::mutex> guard(collected_mutex);
  Collected taken = std::move(collected);
  collected = {};
  return taken;
}

const CuptiLibrary& cupti_or_throw() {
  std::string error;
  const CuptiLibrary* cupti = load_cupti(&error);
  if (!cupti) throw std::runtime_error("CUPTI: " + error);
  return *cupti;
}

// Sample ids are unique in the process, so a late record of one timer's
// sample can never be taken for another's.
std::atomic<std::uint64_t> next_sample_id{1};

class CuptiKernelTimer final : public SampleTimer {
 public:
  explicit CuptiKernelTimer(std::unique_ptr<SampleTimer> events) : cupti_(cupti_or_throw()), events_(std::move(events)) {
    static std::once_flag registered;
    std::call_once(registered, [&] {
      ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityRegisterCallbacks, buffer_requested, buffer_completed);
    });
    for (CUpti_ActivityKind kind : kKinds) ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityEnable, kind);
    ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityFlushAll, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    take_collected();  // whatever earlier work left
  }
  ~CuptiKernelTimer() override {
    for (CUpti_ActivityKind kind : kKinds) cupti_.cuptiActivityDisable(kind);
    cupti_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    take_collected();
  }
  CuptiKernelTimer(const CuptiKernelTimer&) = delete;
  CuptiKernelTimer& operator=(const CuptiKernelTimer&) = delete;

  void start() override {
    sample_ = next_sample_id++;
    ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityPushExternalCorrelationId, kSampleKind, sample_);
    events_->start();
  }
  double stop() override {
    // The call's launches are all made: the end event and the wait for it
    // (whose polling makes API records too) belong to no sample.
    ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityPopExternalCorrelationId, kSampleKind, nullptr);
    last_events_ = events_->stop();
    // Outside the timed region: the call's work is finished.
    ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityFlushAll, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::size_t dropped = 0;
    ATTNBENCH_CUPTI_CALL(cupti_, cuptiActivityGetNumDroppedRecords, nullptr, 0, &dropped);
    if (dropped > 0) {
      throw std::runtime_error("CUPTI dropped " + std::to_string(dropped) + " activity records of a sample");
    }
    const Collected found = take_collected();
    const auto times = kernel_time_by_sample(found.kernels, found.correlations);
    const auto mine = times.find(sample_);
    if (mine == times.end()) {
      throw std::runtime_error("CUPTI recorded no kernel of the sampled call (" + std::to_string(found.kernels.size()) +
                               " kernel records, none correlated to it)");
    }
    return mine->second.seconds;
  }
  std::optional<double> last_events_seconds() const override { return last_events_; }

 private:
  const CuptiLibrary& cupti_;
  std::unique_ptr<SampleTimer> events_;
  std::uint64_t sample_ = 0;
  std::optional<double> last_events_;
};

}  // namespace

std::string cupti_activity_unavailable() {
  std::string error;
  return load_cupti(&error) ? std::string() : error;
}

std::unique_ptr<SampleTimer> make_cupti_kernel_timer(std::unique_ptr<SampleTimer> events) {
  return std::make_unique<CuptiKernelTimer>(std::move(events));
}

nlohmann::ordered_json measure_cupti_cost(const std::function<std::unique_ptr<SampleTimer>()>& make_events_timer,
                                          const std::function<void()>& launch, int launches, int repeats) {
  const auto rounds = [&](SampleTimer& timer, bool events_of_kernel_timer) {
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
      timer.start();
      for (int i = 0; i < launches; ++i) launch();
      const double stopped = timer.stop();
      seconds.push_back(events_of_kernel_timer ? *timer.last_events_seconds() : stopped);
    }
    std::nth_element(seconds.begin(), seconds.begin() + repeats / 2, seconds.end());
    return seconds[static_cast<std::size_t>(repeats / 2)] / launches;
  };
  const std::unique_ptr<SampleTimer> plain = make_events_timer();
  const double without = rounds(*plain, false);
  const std::unique_ptr<SampleTimer> kernel_timer = make_cupti_kernel_timer(make_events_timer());
  const double with = rounds(*kernel_timer, true);
  return nlohmann::ordered_json{{"launches", launches},
                                {"launch_seconds_without", without},
                                {"launch_seconds_with", with},
                                {"added_seconds_per_launch", with - without}};
}

}  // namespace attnbench
