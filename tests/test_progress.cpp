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
std::string progress_output(bool interactive, ProgressTiming timing, Body body, std::size_t cases = 2) {
  std::FILE* out = std::tmpfile();
  {
    Progress progress(cases, interactive, 120, timing, out);
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

TEST(CaseEstimate, ItsOwnRateOnTheLargestCaseOfItsKindElseAtLeastTheHostsGemmRate) {
  MeasureSettings settings;
  settings.warmup_min_iterations = 2;
  settings.min_samples = 10;
  EXPECT_EQ(minimum_calls(settings), 13);

  CaseTimeEstimator estimator(40e9);
  std::optional<CaseEstimate> first = estimator.estimate("cpu.flash fwd", true, 1e12, 13);
  ASSERT_TRUE(first.has_value());
  EXPECT_DOUBLE_EQ(first->seconds, 13 * 1e12 / 40e9);
  EXPECT_TRUE(first->lower_bound);
  EXPECT_NE(first->rate_source.find("calibrated fp32 GEMM rate"), std::string::npos);
  EXPECT_NE(long_case_note("bench#0", "cpu.flash", *first).find(" will take at least 5 min: "), std::string::npos)
      << long_case_note("bench#0", "cpu.flash", *first);
  EXPECT_FALSE(estimator.estimate("cuda.flash fwd", false, 1e12, 13).has_value())
      << "no rate for a device before its first case";

  estimator.record("cpu.flash fwd", 1e9, 0.5);   // 2 GFLOP/s
  estimator.record("cpu.flash fwd", 1e9, 0.25);  // 4 GFLOP/s: the fastest of equal cases is kept
  estimator.record("cpu.flash fwd", 1e9, 1.0);
  estimator.record("cpu.flash fwd", 1e6, 1e-4);  // 10 GFLOP/s on a tiny case: the larger case is the likelier rate
  estimator.record("cpu.flash fwd+bwd", 1e9, 2.0);  // another kind
  const std::optional<CaseEstimate> later = estimator.estimate("cpu.flash fwd", true, 1e12, 13);
  ASSERT_TRUE(later.has_value());
  EXPECT_DOUBLE_EQ(later->seconds, 13 * 1e12 / 4e9);
  EXPECT_FALSE(later->lower_bound);
  EXPECT_EQ(later->rate_source, "its rate on an earlier case of the same kind");
  EXPECT_EQ(long_case_note("bench#0", "cpu.flash", *later).rfind(
                "attnbench: note: bench#0 on cpu.flash will take about 54 min: 13 calls of 1.00e+12 FLOP at "
                "4.000 GFLOP/s, its rate on an earlier case of the same kind.",
                0),
            0u)
      << long_case_note("bench#0", "cpu.flash", *later);
  EXPECT_DOUBLE_EQ(estimator.estimate("cpu.flash fwd+bwd", true, 1e12, 13)->flops_per_second, 0.5e9);
  EXPECT_EQ(long_call_note("bench#0", "cpu.flash", 600, 12).rfind(
                "attnbench: note: bench#0 on cpu.flash: one call took 10 min; 12 more calls at least: about 2 h 0 min "
                "more.",
                0),
            0u);
}

// The walk: attention at 1 GFLOP/s where the GEMM runs at 30: the GEMM
// rate said "at least 7 min" for a case of hours. A small case of the same kind
// measured first gives the implementation's own rate.
TEST(CaseEstimate, ASmallCaseOfTheSameKindGivesTheRateBeforeTheFirstLongCase) {
  CaseTimeEstimator estimator(30e9);
  const double flops = 1e12;
  EXPECT_TRUE(estimator.needs_small_case("cpu.flash fwd", flops, 13)) << "433 s at the GEMM rate";
  EXPECT_FALSE(estimator.needs_small_case("cpu.flash fwd", 1e9, 13)) << "0.4 s at the GEMM rate: never long";
  EXPECT_FALSE(CaseTimeEstimator(std::nullopt).needs_small_case("cpu.flash fwd", flops, 13))
      << "without a calibration nothing says the case may be long";
  estimator.record("cpu.flash fwd", 1e6, 1e-3);  // a tiny earlier case says little about a long one
  EXPECT_TRUE(estimator.needs_small_case("cpu.flash fwd", flops, 13));

  estimator.record("cpu.flash fwd", kSmallCaseFlops, kSmallCaseFlops / 1e9, "a small case of the same kind (b1 h1)");
  EXPECT_FALSE(estimator.needs_small_case("cpu.flash fwd", flops, 13));
  const std::optional<CaseEstimate> estimate = estimator.estimate("cpu.flash fwd", true, flops, 13);
  ASSERT_TRUE(estimate.has_value());
  EXPECT_NEAR(estimate->seconds, 13 * flops / 1e9, 1e-6) << "3.6 h, not at least 7 min";
  EXPECT_FALSE(estimate->lower_bound);
  EXPECT_EQ(estimate->rate_source, "its rate on a small case of the same kind (b1 h1)");
}

TEST(CaseEstimate, TheSmallCaseKeepsTheKindAndHasAtMostItsFlops) {
  Problem problem;
  problem.batch = 16;
  problem.heads = 16;
  problem.kv_heads = 4;
  problem.seqlen_q = 8192;
  problem.seqlen_k = 16384;
  problem.head_dim = 128;
  problem.direction = Direction::fwd_bwd;
  problem.mask.causal = true;
  const std::optional<Problem> small = small_case_of(problem);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->batch, 1);
  EXPECT_EQ(small->kv_heads, 4);
  EXPECT_EQ(small->heads, 16) << "the heads, which threads share, stay";
  EXPECT_EQ(small->head_dim, 128);
  EXPECT_EQ(small->direction, Direction::fwd_bwd);
  EXPECT_TRUE(small->mask.causal);
  EXPECT_NEAR(static_cast<double>(small->seqlen_k) / static_cast<double>(small->seqlen_q), 2.0, 0.01)
      << "both lengths scaled alike";
  EXPECT_LE(flop_count(*small).total, kSmallCaseFlops);
  EXPECT_GT(flop_count(*small).total, kSmallCaseFlops / 4);
  EXPECT_EQ(rate_kind("cpu.flash", problem), "cpu.flash fwd+bwd");

  Problem tiny = problem;
  tiny.seqlen_q = tiny.seqlen_k = 64;
  EXPECT_FALSE(small_case_of(tiny).has_value()) << "small already";
  Problem explicit_lengths = problem;
  explicit_lengths.lengths_q.assign(16, 8000);
  explicit_lengths.lengths_k.assign(16, 16000);
  EXPECT_FALSE(small_case_of(explicit_lengths).has_value()) << "explicit lengths fix the sizes";
}

TEST(Progress, ASingleLongCaseShowsAnEtaFromItsEstimate) {
  const std::string text = progress_output(true, {0.01, 30}, [](Progress& progress) {
    progress.start_case(1, "bench#0 b1 h8");
    progress.start_implementation("cpu.flash");
    progress.expect_remaining(100);
    progress.set_phase("check");
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }, 1);
  EXPECT_NE(text.find("cpu.flash: check, 0:00  ETA 1:39"), std::string::npos) << text;

  // With more cases to come and none finished, the ETA is a lower bound; without a terminal the status
  // line carries it.
  const std::string log = progress_output(false, {0.01, 0.05}, [](Progress& progress) {
    progress.start_case(1, "bench#0 b1 h8");
    progress.start_implementation("cpu.flash");
    progress.expect_remaining(100);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
  });
  EXPECT_NE(log.find("cpu.flash: set-up, 0:00 elapsed, ETA >1:3"), std::string::npos) << log;
}

}  // namespace
}  // namespace attnbench
