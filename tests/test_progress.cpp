// What a run shows while it runs: the live progress line that never outgrows
// the terminal, with the phase and the time so far; without a terminal a
// status line at least every heartbeat, even while one call runs for long;
// notes above the line; and the estimate of a case's time before it starts.
#include "harness/run/progress.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "harness/run/case_estimate.hpp"

namespace attnbench {
namespace {

TEST(Progress, LineFitsTheTerminalShorteningTheLabel) {
  const std::string head = "[12/345] ";
  const std::string label = "quick#11 b2 h4/2 q100 k77 d64 fp16 fwd+bwd causal.br win.br[32,0] pad drop0.10 bhsd";
  const std::string tail = "  cpu.reference  ETA 1:23";
  for (std::size_t width : {40u, 60u, 80u, 200u}) {
    const std::string line = fit_progress_line(head, label, tail, width);
    EXPECT_LT(line.size(), width) << line;  // the last column stays free, so the terminal never wraps
    EXPECT_EQ(line.rfind(head, 0), 0u) << line;
    if (head.size() + 3 + tail.size() < width) {
      EXPECT_EQ(line.substr(line.size() - tail.size()), tail) << "the ETA and implementation stay: " << line;
    }
  }
  EXPECT_EQ(fit_progress_line(head, label, tail, 200), head + label + tail);
  EXPECT_NE(fit_progress_line(head, label, tail, 60).find("..."), std::string::npos);
  EXPECT_EQ(fit_progress_line(head, label, tail, 10).size(), 9u);
}

TEST(Progress, ClocksCountMinutesAndHours) {
  EXPECT_EQ(format_clock(42.9), "0:42");
  EXPECT_EQ(format_clock(3 * 3600 + 4 * 60 + 59), "3:04:59");
}

// What a Progress wrote to a temporary file, once it is destroyed.
template <typename Body>
std::string progress_output(bool interactive, ProgressTiming timing, Body body) {
  std::FILE* out = std::tmpfile();
  {
    Progress progress(2, interactive, 120, timing, out);
    body(progress);
  }
  std::string text(static_cast<std::size_t>(std::ftell(out)), '\0');
  std::rewind(out);
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  return text;
}

TEST(Progress, WithoutATerminalAStatusLineComesAtLeastEveryHeartbeatWhileOneCallRuns) {
  const std::string text = progress_output(false, {0.01, 0.1}, [](Progress& progress) {
    progress.start_case(1, "quick#0 b2 h4");
    progress.start_implementation("cpu.flash");
    progress.set_phase("sample 3 of at least 10");
    std::this_thread::sleep_for(std::chrono::milliseconds(450));  // one long call
    progress.finish_case("cpu.flash ok");
  });
  std::size_t status_lines = 0;
  for (std::size_t at = text.find("[1/2] quick#0 b2 h4  cpu.flash: sample 3 of at least 10, 0:00 elapsed\n");
       at != std::string::npos; at = text.find("cpu.flash: sample 3", at + 1)) {
    ++status_lines;
  }
  EXPECT_GE(status_lines, 3u) << text;
  EXPECT_LE(status_lines, 5u) << text;
  EXPECT_NE(text.find("[1/2] quick#0 b2 h4  cpu.flash ok\n"), std::string::npos) << text;
}

TEST(Progress, OnATerminalTheLineShowsThePhaseAndTheTimeSoFarAndNotesGoAboveIt) {
  const std::string text = progress_output(true, {0.01, 30}, [](Progress& progress) {
    progress.start_case(1, "quick#0 b2 h4");
    progress.start_implementation("cpu.flash");
    progress.set_phase("check");
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    progress.note("attnbench: note: a long case");
  });
  EXPECT_NE(text.find("\r\033[K[1/2] quick#0 b2 h4  cpu.flash: check, 0:00  ETA --"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\033[Kattnbench: note: a long case\n"), std::string::npos) << text;
}

TEST(CaseEstimate, TheBestEarlierRateElseTheHostsCalibratedRateForHostImplementations) {
  MeasureSettings settings;
  settings.warmup_min_iterations = 2;
  settings.min_samples = 10;
  EXPECT_EQ(minimum_calls(settings), 13);

  CaseTimeEstimator estimator(40e9);
  std::optional<CaseEstimate> first = estimator.estimate("cpu.flash", true, 1e12, 13);
  ASSERT_TRUE(first.has_value());
  EXPECT_DOUBLE_EQ(first->seconds, 13 * 1e12 / 40e9);
  EXPECT_NE(first->rate_source.find("calibrated fp32 GEMM rate"), std::string::npos);
  EXPECT_FALSE(estimator.estimate("cuda.flash", false, 1e12, 13).has_value()) << "no rate for a device before its first case";

  estimator.record("cpu.flash", 1e9, 0.5);  // 2 GFLOP/s
  estimator.record("cpu.flash", 1e9, 0.25);  // 4 GFLOP/s: the best is kept
  estimator.record("cpu.flash", 1e9, 1.0);
  const std::optional<CaseEstimate> later = estimator.estimate("cpu.flash", true, 1e12, 13);
  ASSERT_TRUE(later.has_value());
  EXPECT_DOUBLE_EQ(later->seconds, 13 * 1e12 / 4e9);
  EXPECT_EQ(later->rate_source, "its best rate on the earlier cases");
  EXPECT_EQ(long_case_note("bench#0", "cpu.flash", *later).rfind(
                "attnbench: note: bench#0 on cpu.flash will take at least 54 min: 13 calls of 1.00e+12 FLOP at "
                "4.000 GFLOP/s, its best rate on the earlier cases.",
                0),
            0u)
      << long_case_note("bench#0", "cpu.flash", *later);
  EXPECT_EQ(long_call_note("bench#0", "cpu.flash", 600, 12).rfind(
                "attnbench: note: bench#0 on cpu.flash: one call took 10 min; 12 more calls at least: about 2 h 0 min "
                "more.",
                0),
            0u);
}

}  // namespace
}  // namespace attnbench
