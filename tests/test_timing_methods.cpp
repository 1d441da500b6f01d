// The timing methods of docs/design.md §4 on the CPU, with fakes: the kernel
// time of a sample from activity records (intervals merged, the harness's own
// kernels excluded because no sample's correlation reaches them), the flush
// subtraction of graph timing, the refusal of a cold mode that cannot evict,
// the clock marks and the throttling verdict they give; and, through a fake
// device, how a session picks a method from a fallback order, records what it
// passed over, and times a graph less its flushes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "harness/common/kernel_activity.hpp"
#include "harness/measure/session.hpp"
#include "harness/measure/timing_methods.hpp"
#include "harness/run/summary.hpp"

namespace attnbench {
namespace {

using Interval = std::pair<std::uint64_t, std::uint64_t>;

TEST(KernelIntervals, OverlappingAndNestedKernelsCountOnceAndGapsNotAtAll) {
  EXPECT_EQ(merged_length_ns({}), 0u);
  EXPECT_EQ(merged_length_ns({{100, 200}}), 100u);
  EXPECT_EQ(merged_length_ns({{100, 200}, {150, 260}}), 160u) << "overlap counted once";
  EXPECT_EQ(merged_length_ns({{100, 400}, {150, 200}, {250, 300}}), 300u) << "nested kernels add nothing";
  EXPECT_EQ(merged_length_ns({{300, 400}, {100, 200}}), 200u) << "the gap between them is no kernel time";
  EXPECT_EQ(merged_length_ns({{100, 200}, {200, 300}}), 200u) << "back to back";
  EXPECT_EQ(merged_length_ns({{100, 100}, {50, 40}, {10, 20}}), 10u) << "empty and inverted records add nothing";
  EXPECT_EQ(merged_length_ns({{0, 50}, {10, 20}, {40, 90}, {95, 100}, {60, 70}}), 95u);
}

TEST(KernelIntervals, EachSampleGetsTheKernelsOfItsOwnCallsOnly) {
  // Sample 7 made API calls 11 and 12, sample 8 call 20; calls 10 and 19 (the
  // flush before each sample, the poisoning) were made outside every sample.
  const std::vector<SampleCorrelation> correlations = {{11, 7}, {12, 7}, {20, 8}};
  const std::vector<KernelActivity> kernels = {
      {1000, 5000, 10},   // the flush before sample 7: excluded whatever it overlaps
      {5000, 8000, 11},   // sample 7's first kernel
      {7000, 9000, 12},   // its second, overlapping the first
      {20000, 21000, 19}, // harness work between the samples
      {30000, 34000, 20}, // sample 8
      {36000, 37000, 20}, // sample 8 again, after a gap
  };
  const auto times = kernel_time_by_sample(kernels, correlations);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_DOUBLE_EQ(times.at(7).seconds, 4000e-9);
  EXPECT_EQ(times.at(7).kernels, 2);
  EXPECT_DOUBLE_EQ(times.at(7).span_seconds, 4000e-9);
  EXPECT_DOUBLE_EQ(times.at(8).seconds, 5000e-9);
  EXPECT_EQ(times.at(8).kernels, 2);
  EXPECT_DOUBLE_EQ(times.at(8).span_seconds, 7000e-9) << "the span includes the gap, the kernel time does not";
  EXPECT_TRUE(kernel_time_by_sample(kernels, {}).empty()) << "without correlations no kernel is a sample's";
}

TEST(GraphTiming, TheFlushGraphsTimeIsSubtractedBeforeDividingByTheCalls) {
  EXPECT_EQ(per_call_seconds({10e-3, 12e-3}, 2e-3, 4), (std::vector<double>{2e-3, 2.5e-3}));
  EXPECT_EQ(per_call_seconds({10e-3}, 0, 10), (std::vector<double>{1e-3})) << "hot: nothing to subtract";
  EXPECT_EQ(per_call_seconds({1e-3}, 2e-3, 4), (std::vector<double>{0})) << "never negative";
}

TEST(ColdCache, AFlushOrRotationBelowTwiceTheCacheIsRefused) {
  constexpr std::uint64_t l2 = 50u << 20;
  const std::string rotation = eviction_refusal("a rotation of 3 input sets", 75u << 20, l2);
  EXPECT_NE(rotation.find("a rotation of 3 input sets writes 75.00 MiB between calls, less than twice the 50.00 MiB"),
            std::string::npos)
      << rotation;
  EXPECT_NE(rotation.find("would not be cold"), std::string::npos) << rotation;
  EXPECT_EQ(eviction_refusal("the cache flush", 100u << 20, l2), "") << "twice the cache evicts it";
  EXPECT_NE(eviction_refusal("the cache flush", (100u << 20) - 1, l2), "");
  EXPECT_EQ(eviction_refusal("the cache flush", 0, 0), "") << "no cache modelled, nothing to evict";
}

TEST(ClockMarks, SamplesBelowTheShareOfTheRunsHighestClockAreMarkedAndThrottleTheRecord) {
  const std::vector<std::optional<double>> clocks = {1980, 1965, std::nullopt, 1500, 1700};
  const ClockMarks marks = mark_clocks(clocks, 0, 0.85);
  EXPECT_EQ(marks.read, 4u);
  EXPECT_DOUBLE_EQ(marks.highest_mhz, 1980);
  EXPECT_DOUBLE_EQ(marks.threshold_mhz, 0.85 * 1980);
  EXPECT_EQ(marks.marked, (std::vector<std::size_t>{3})) << "1500 < 1683; 1700 is not, the unread one is not judged";
  ThrottleVerdict verdict;
  verdict.throttled = false;
  add_clock_marks(verdict, marks, clocks);
  EXPECT_EQ(verdict.throttled, true);
  ASSERT_EQ(verdict.warnings.size(), 1u);
  EXPECT_EQ(verdict.warnings[0],
            "1 of 4 samples ran below 1683 MHz (the run's highest SM clock 1980 MHz); the lowest at 1500 MHz: throttled");
  EXPECT_EQ(marks.to_json(0.85)["marked"], nlohmann::ordered_json::array({3}));

  // The run's highest so far counts: an earlier record's boost makes these samples slow.
  const ClockMarks later = mark_clocks({1600, 1620}, 1980, 0.85);
  EXPECT_EQ(later.marked, (std::vector<std::size_t>{0, 1}));
  const ClockMarks steady = mark_clocks({1600, 1620}, 0, 0.85);
  EXPECT_TRUE(steady.marked.empty());
  ThrottleVerdict unmonitored;  // the snapshots said nothing; the per-sample clocks do
  unmonitored.throttled = nullptr;
  add_clock_marks(unmonitored, steady, {1600, 1620});
  EXPECT_EQ(unmonitored.throttled, false);
  ThrottleVerdict host;
  host.throttled = nullptr;
  add_clock_marks(host, mark_clocks({std::nullopt}, 0, 0.85), {std::nullopt});
  EXPECT_TRUE(host.throttled.is_null()) << "no clock read: no verdict";
  EXPECT_TRUE(mark_clocks({}, 0, 0.85).to_json(0.85).is_null());
}

TEST(LaunchOverhead, IsTheMedianOfEventsMinusKernelTime) {
  EXPECT_DOUBLE_EQ(*launch_overhead_seconds({10e-6, 12e-6, 30e-6}, {4e-6, 5e-6, 6e-6}), 7e-6);
  EXPECT_FALSE(launch_overhead_seconds({}, {}));
  EXPECT_FALSE(launch_overhead_seconds({1e-6}, {1e-6, 2e-6})) << "the same samples or none";
}

TEST(TimingSummary, TheSummaryNamesWhatEachMethodAddsTheUnlockedClockAndCuptisCost) {
  using Json = nlohmann::ordered_json;
  EXPECT_EQ(timing_method_line(Json{{"method", "events"}}), "");
  EXPECT_EQ(timing_method_line(nullptr), "");
  const Json cupti = {{"method", "cupti"},
                      {"statistics", {{"p50", 20e-6}}},
                      {"cupti", {{"events_p50", 26e-6}, {"launch_overhead_seconds", 6e-6}}}};
  EXPECT_EQ(timing_method_line(cupti), "timing cupti: kernels 20.00 us, events 26.00 us, launch overhead 6.000 us");
  const Json graph = {{"method", "graph"},
                      {"graph", {{"calls_per_graph", 10}, {"flush_graph_seconds", {1e-3}}, {"flush_seconds_per_call", 1e-4}}},
                      {"methods_passed_over", {"cupti: no CUPTI"}}};
  EXPECT_EQ(timing_method_line(graph),
            "timing graph: 10 calls per launch, the flush's 100.0 us per call subtracted (fell back past cupti: no CUPTI)");
  EXPECT_EQ(timing_method_line(Json{{"method", "events"}, {"methods_passed_over", {"graph: the call synchronises"}}}),
            "timing events (fell back past graph: the call synchronises)");

  EXPECT_NE(clock_policy_line(Json{{"name", "H100"}, {"clock_policy", "default"}}).find("H100 ran with unlocked clocks"),
            std::string::npos);
  EXPECT_EQ(clock_policy_line(Json{{"name", "H100"}, {"clock_policy", {{"sm_mhz", 1755}}}}),
            "clocks: H100 locked at {\"sm_mhz\":1755}, restored at the end.");
  EXPECT_EQ(clock_policy_line(Json{{"name", "a CPU"}}), "") << "a device that records no policy";
  const Json cost = {{"name", "H100"},
                     {"kernel_timer_cost",
                      {{"launches", 100}, {"launch_seconds_without", 2e-6}, {"launch_seconds_with", 3e-6},
                       {"added_seconds_per_launch", 1e-6}}}};
  EXPECT_EQ(kernel_timer_cost_line(cost).rfind("cupti: CUPTI's activity records add 1.000 us to a launch on H100", 0), 0u)
      << kernel_timer_cost_line(cost);
  EXPECT_EQ(kernel_timer_cost_line(Json{{"name", "H100"}}), "");
}

// ---- a session on a fake device ----

// A virtual clock the fake device's work advances: a call takes 1 ms, a flush 0.25 ms.
double fake_now = 0;
constexpr double kCallSeconds = 1e-3, kFlushSeconds = 0.25e-3;

class FakeTimer final : public SampleTimer {
 public:
  void start() override { started_ = fake_now; }
  double stop() override { return fake_now - started_; }

 private:
  double started_ = 0;
};

// Timing "cupti" on the fake device: the kernels take 80% of the events time.
class FakeKernelTimer final : public SampleTimer {
 public:
  void start() override { events_.start(); }
  double stop() override {
    last_events_ = events_.stop();
    return 0.8 * *last_events_;
  }
  std::optional<double> last_events_seconds() const override { return last_events_; }

 private:
  FakeTimer events_;
  std::optional<double> last_events_;
};

struct FakeCapture final : CapturedCalls {
  std::function<void()> calls;
  void launch() override { calls(); }
};

class FakeDevice final : public HostMemoryBackend {
 public:
  static FakeDevice& get() { return static_cast<FakeDevice&>(*BackendRegistry::instance().get("fakegpu")); }
  bool has_cupti = false;
  std::string capture_refusal;
  std::vector<std::optional<double>> clocks;  // read in turn after each sample
  int flushes = 0;

  std::string_view device() const override { return "fakegpu"; }
  BackendKind kind() const override { return BackendKind::accelerator; }
  Verdict availability() const override { return Verdict::yes(); }
  std::uint64_t available_memory() const override { return 1u << 30; }
  void* allocate(std::size_t bytes) override { return std::calloc(1, bytes); }
  void release(void* pointer) override { std::free(pointer); }
  std::unique_ptr<SampleTimer> make_timer() override { return std::make_unique<FakeTimer>(); }
  Verdict timing_method(TimingMethod method) const override {
    if (method == TimingMethod::cupti && !has_cupti) return Verdict::no("no CUPTI here");
    return Verdict::yes();
  }
  std::unique_ptr<SampleTimer> make_kernel_timer() override { return std::make_unique<FakeKernelTimer>(); }
  std::unique_ptr<CapturedCalls> capture(const std::function<void()>& calls) override {
    if (!capture_refusal.empty()) throw CaptureRefused(capture_refusal);
    auto captured = std::make_unique<FakeCapture>();
    captured->calls = calls;
    return captured;
  }
  std::optional<double> sm_clock_mhz() override {
    if (clocks.empty()) return std::nullopt;
    const std::optional<double> now = clocks.front();
    clocks.erase(clocks.begin());
    return now;
  }
  void flush_cache() override {
    fake_now += kFlushSeconds;
    ++flushes;
  }
  std::uint64_t cache_flush_bytes() const override { return 2u << 20; }
  std::uint64_t last_level_cache_bytes() const override { return 1u << 20; }
  nlohmann::ordered_json describe() const override { return {{"kind", "fakegpu"}, {"name", "fake"}}; }
};

const BackendRegistration kFakeDevice{"fakegpu", [] { return std::make_unique<FakeDevice>(); }};

class FakeCall final : public Implementation {
 public:
  int calls = 0;
  std::string_view name() const override { return "fakegpu.call"; }
  std::string_view device() const override { return "fakegpu"; }
  std::string_view summary() const override { return "1 ms of virtual time per call (test only)"; }
  Verdict supports(const Problem&) const override { return Verdict::yes(); }
  ElementType output_type(const Problem&) const override { return ElementType::f32; }
  std::size_t workspace_bytes(const Problem&, const ExecutionContext&) const override { return 0; }
  void forward(const Problem&, const AttentionBuffers&, ExecutionContext&) override {
    fake_now += kCallSeconds;
    ++calls;
  }
  void backward(const Problem&, const AttentionBuffers&, ExecutionContext&) override {}
};

class FakeSession : public ::testing::Test {
 protected:
  FakeSession() : data_(problem(), AccuracySettings{}, 1) {
    FakeDevice& device = FakeDevice::get();
    device.has_cupti = false;
    device.capture_refusal.clear();
    device.clocks.clear();
    device.flushes = 0;
    std::string reason;
    session_ = ImplementationSession::open(call_, data_, 1, reason);
  }
  static Problem problem() {
    Problem p;
    p.batch = p.heads = p.kv_heads = 1;
    p.seqlen_q = p.seqlen_k = 8;
    p.head_dim = 8;
    return p;
  }
  static MeasureSettings settings(std::vector<TimingMethod> timing, bool cold) {
    MeasureSettings s;
    s.warmup_min_iterations = 0;
    s.warmup_min_seconds = 0;
    s.warmup_window = 0;
    s.min_samples = s.max_samples = 4;
    s.min_seconds = 0;
    s.cold_cache = cold;
    s.timing = std::move(timing);
    s.graph_calls = 5;
    return s;
  }
  FakeCall call_;
  CaseData data_;
  std::unique_ptr<ImplementationSession> session_;
};

TEST_F(FakeSession, GraphTimingSubtractsTheFlushOnlyGraphAndDividesByTheCalls) {
  ASSERT_TRUE(session_);
  const Measurement m = session_->measure(settings({TimingMethod::graph}, true));
  EXPECT_EQ(m.method, TimingMethod::graph);
  EXPECT_TRUE(m.passed_over.empty());
  ASSERT_EQ(m.samples_seconds.size(), 4u);
  for (double seconds : m.samples_seconds) EXPECT_NEAR(seconds, kCallSeconds, 1e-12) << "the flushes are subtracted";
  const auto& graph = m.method_details["graph"];
  EXPECT_EQ(graph["calls_per_graph"], 5);
  EXPECT_NEAR(graph["graph_seconds"][0].get<double>(), 5 * (kCallSeconds + kFlushSeconds), 1e-12);
  EXPECT_EQ(graph["flush_graph_seconds"].size(), 4u);
  EXPECT_NEAR(graph["flush_seconds_per_call"].get<double>(), kFlushSeconds, 1e-12);
  EXPECT_EQ(call_.calls, 4 * 5) << "four launches of five calls: the calls in the graph, not one call per sample";

  const Measurement hot = session_->measure(settings({TimingMethod::graph}, false));
  for (double seconds : hot.samples_seconds) EXPECT_NEAR(seconds, kCallSeconds, 1e-12);
  EXPECT_TRUE(hot.method_details["graph"]["flush_graph_seconds"].empty()) << "hot: no flush graph";
}

TEST_F(FakeSession, ACallThatCannotBeCapturedFallsBackOnlyWhereTheOrderSays) {
  ASSERT_TRUE(session_);
  FakeDevice::get().capture_refusal = "the call synchronises";
  EXPECT_THROW(session_->measure(settings({TimingMethod::graph}, true)), CaptureRefused);
  const Measurement m = session_->measure(settings({TimingMethod::cupti, TimingMethod::graph, TimingMethod::events}, true));
  EXPECT_EQ(m.method, TimingMethod::events);
  EXPECT_EQ(m.passed_over, (std::vector<std::string>{"cupti: no CUPTI here", "graph: the call synchronises"}));
  for (double seconds : m.samples_seconds) EXPECT_NEAR(seconds, kCallSeconds, 1e-12) << "the flush is outside the sample";
}

TEST_F(FakeSession, CuptiSamplesAreKernelTimeWithTheEventsTimeOfTheSameCallsKept) {
  ASSERT_TRUE(session_);
  FakeDevice::get().has_cupti = true;
  FakeDevice::get().clocks = {1980, 1500, std::nullopt, 1975};
  const Measurement m = session_->measure(settings({TimingMethod::cupti, TimingMethod::events}, true));
  EXPECT_EQ(m.method, TimingMethod::cupti);
  ASSERT_EQ(m.samples_seconds.size(), 4u);
  ASSERT_EQ(m.events_seconds.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(m.events_seconds[i], kCallSeconds, 1e-12);
    EXPECT_NEAR(m.samples_seconds[i], 0.8 * kCallSeconds, 1e-12);
  }
  EXPECT_NEAR(*launch_overhead_seconds(m.events_seconds, m.samples_seconds), 0.2 * kCallSeconds, 1e-12);
  EXPECT_EQ(m.sm_mhz, (std::vector<std::optional<double>>{1980, 1500, std::nullopt, 1975})) << "one clock per sample";
}

}  // namespace
}  // namespace attnbench
