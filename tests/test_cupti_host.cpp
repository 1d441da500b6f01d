// The host side of CUPTI without a GPU: libcupti loads at run time, our metric
// set becomes a configuration image for chip "GH100" in one pass, unknown
// metrics are refused; and the probe's answer on a machine without a usable
// device (no target-side CUPTI call: it would crash without a driver).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "harness/cuda/cupti_library.hpp"
#include "harness/cuda/cupti_profiler.hpp"
#include "harness/errors.hpp"
#include "harness/common/device_profiler.hpp"

namespace attnbench {
namespace {

const CuptiLibrary& cupti_or_skip() {
  std::string error;
  const CuptiLibrary* cupti = load_cupti(&error);
  if (!cupti) throw std::runtime_error(error);
  return *cupti;
}

bool has_cuda_device() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return ok;
}

TEST(CuptiHost, LoadsAtRunTimeAndReportsItsVersion) {
  std::string error;
  const CuptiLibrary* cupti = load_cupti(&error);
  ASSERT_NE(cupti, nullptr) << error;
  EXPECT_FALSE(cupti->path.empty());
  EXPECT_GE(std::stoi(cupti->version), 130000) << "CUDA 13 headers need a CUDA 13 CUPTI";
}

TEST(CuptiHost, OurMetricSetIsOnePassOnGH100) {
  const CuptiHostConfig config(cupti_or_skip(), "GH100", profiler_metrics());
  EXPECT_EQ(config.chip(), "GH100");
  EXPECT_GT(config.config_image().size(), 0u);
  EXPECT_EQ(config.passes(), 1u);
}

TEST(CuptiHost, DramBytesAloneAreOnePassToo) {
  const CuptiHostConfig config(cupti_or_skip(), "GH100", {"dram__bytes_read.sum", "dram__bytes_write.sum"});
  EXPECT_EQ(config.passes(), 1u);
}

TEST(CuptiHost, AnUnknownMetricIsRefusedWithCuptisMessage) {
  try {
    const CuptiHostConfig config(cupti_or_skip(), "GH100", {"dram__bytes_read.sum", "no__such_metric.sum"});
    FAIL() << "an unknown metric was accepted";
  } catch (const CuptiError& error) {
    EXPECT_NE(std::string(error.what()).find("cuptiProfilerHostConfigAddMetrics"), std::string::npos) << error.what();
  }
}

TEST(CuptiHost, AnUnknownChipIsRefused) {
  EXPECT_THROW(CuptiHostConfig(cupti_or_skip(), "NO_SUCH_CHIP", profiler_metrics()), CuptiError);
}

TEST(CuptiProbe, PrivilegeAndSubscriberFailuresCarryAHint) {
  EXPECT_NE(
      explain_cupti_failure(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES).hint.find("NVreg_RestrictProfilingToAdminUsers=0"),
      std::string::npos);
  EXPECT_NE(explain_cupti_failure(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED).reason.find("another profiler"),
            std::string::npos);
  EXPECT_NE(explain_cupti_failure(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED).reason.find("virtualised"),
            std::string::npos);
}

TEST(CuptiProbe, WithoutADeviceItIsUnavailableAndProfilingSaysSo) {
  if (has_cuda_device()) GTEST_SKIP() << "this machine has a CUDA device; the no-device answer is not observable";
  const std::unique_ptr<DeviceProfiler> profiler = make_cupti_profiler(0, "");
  const ProfilerProbe& answer = profiler->probe();
  EXPECT_FALSE(answer.available);
  EXPECT_TRUE(answer.reason.find("no usable CUDA device") != std::string::npos ||
              answer.reason.find("no NVIDIA driver or GPU found") != std::string::npos)
      << answer.reason;
  EXPECT_EQ(&profiler->probe(), &answer) << "probed once";
  bool called = false;
  const ProfileResult result = profiler->profile([] {}, [&] { called = true; }, false);
  EXPECT_EQ(result.status, "unavailable");
  EXPECT_FALSE(called);
}

// A kernel's fault in the profiling pass is the case's failure (and, when it
// lost the context, the runner's cue to restart), never a "profiler failed"
// note; the profiler's own errors are.
TEST(CuptiProfilingStep, LetsADeviceErrorThroughAndRecordsTheProfilersOwnFailures) {
  EXPECT_THROW(run_profiling_step([]() -> ProfileResult { throw DeviceError("illegal address", true); }, "p"),
               DeviceError);
  const ProfileResult failed =
      run_profiling_step([]() -> ProfileResult { throw std::runtime_error("16 passes"); }, "cupti.range_profiler");
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.reason, "16 passes");
  EXPECT_EQ(failed.profiler, "cupti.range_profiler");
  ProfileResult collected;
  collected.profiler = "cupti.range_profiler";
  EXPECT_EQ(run_profiling_step([&] { return collected; }, "cupti.range_profiler").status, collected.status);
}

}  // namespace
}  // namespace attnbench
