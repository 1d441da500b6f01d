// The harness's own OpenMP threads around a host measurement (harness/measure/session.hpp,
// harness/measure/openmp_threads.hpp): input generation uses the run's thread count, and
// while samples are timed the only threads of the process are the timed call's
// own team, whatever teams earlier work left behind; the BLAS's threads are
// among them. Thread counts, not wall
// time, so a loaded machine cannot change the verdict.
#include "harness/measure/session.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "harness/blas.hpp"
#include "harness/measure/openmp_threads.hpp"

namespace attnbench {
namespace {

// Counts the process's threads inside every call: the timed call's team is
// context.thread_count() threads.
class ThreadProbe final : public Implementation {
 public:
  static std::vector<int>& observed() {
    static std::vector<int> counts;
    return counts;
  }
  std::string_view name() const override { return "cpu.thread_probe"; }
  std::string_view device() const override { return "cpu"; }
  std::string_view summary() const override { return "counts threads (test only)"; }
  Verdict supports(const Problem&) const override { return Verdict::yes(); }
  ElementType output_type(const Problem&) const override { return ElementType::f32; }
  std::size_t workspace_bytes(const Problem&, const ExecutionContext&) const override { return 0; }
  void forward(const Problem&, const AttentionBuffers&, ExecutionContext& context) override {
    int largest = 0;
#pragma omp parallel num_threads(context.thread_count())
    {
      const int now = process_thread_count();
#pragma omp critical
      largest = std::max(largest, now);
    }
    observed().push_back(largest);
  }
  void backward(const Problem&, const AttentionBuffers&, ExecutionContext&) override {}
};

const ImplementationRegistration kProbe{[] { return std::make_unique<ThreadProbe>(); }};

Problem small_problem() {
  Problem p;
  p.batch = 2;
  p.heads = 4;
  p.kv_heads = 4;
  p.seqlen_q = p.seqlen_k = 256;
  p.head_dim = 32;
  resolve_lengths(p);
  return p;
}

// Released workers leave asynchronously (they are detached threads): the
// warm-up outlasts their exit, which is all a sample must not see.
MeasureSettings a_few_samples() {
  MeasureSettings settings;
  settings.warmup_min_iterations = 2;
  settings.warmup_min_seconds = 0.2;
  settings.min_samples = settings.max_samples = 8;
  settings.min_seconds = 0;
  settings.cold_cache = false;
  return settings;
}

// Leaves a team of `size` OpenMP threads behind, as other work would.
void leave_a_team_of(int size) {
  std::vector<int> members(static_cast<std::size_t>(size));
#pragma omp parallel num_threads(size)
  members[static_cast<std::size_t>(omp_get_thread_num())] = 1;
  ASSERT_EQ(std::count(members.begin(), members.end(), 1), size);
}

// Whether the process is down to `count` threads within two seconds.
bool threads_become(int count) {
  for (int wait = 0; wait < 200 && process_thread_count() != count; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return process_thread_count() == count;
}

class HarnessThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    if (omp_get_num_procs() < 2) GTEST_SKIP() << "one CPU: no team to leave behind";
    release_idle_openmp_threads();
    ASSERT_TRUE(threads_become(1));
    ThreadProbe::observed().clear();
  }
  Implementation& probe() const { return *ImplementationRegistry::instance().find("cpu.thread_probe"); }
};

TEST_F(HarnessThreads, InputsAreGeneratedWithTheRunsThreadCount) {
  CaseData data(small_problem(), AccuracySettings{}, 1);
  data.inputs();
  EXPECT_EQ(process_thread_count(), 1) << "a one-thread run generates its inputs on one thread";
}

TEST_F(HarnessThreads, OnlyTheTimedCallsTeamRunsWhileSamplesAreTimed) {
  for (const int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    CaseData data(small_problem(), AccuracySettings{}, threads);
    std::string skip_reason;
    const std::unique_ptr<ImplementationSession> session =
        ImplementationSession::open(probe(), data, threads, skip_reason);
    ASSERT_TRUE(session) << skip_reason;
    session->checked_call();
    leave_a_team_of(threads + 2);  // the oracle or another implementation ran with more threads
    ASSERT_GE(process_thread_count(), threads + 2);
    ThreadProbe::observed().clear();
    const Measurement measurement = session->measure(a_few_samples());
    ASSERT_EQ(measurement.samples_seconds.size(), 8u);
    const std::vector<int>& observed = ThreadProbe::observed();
    ASSERT_EQ(observed.size(), static_cast<std::size_t>(measurement.warmup_iterations) + 8);
    for (std::size_t sample = observed.size() - 8; sample < observed.size(); ++sample) {
      EXPECT_EQ(observed[sample], threads) << "sample " << sample;
    }
    EXPECT_TRUE(threads_become(1)) << "no idle workers are left to spin after the measurement";
  }
}

// The BLAS's threads are the OpenMP runtime's (harness/blas.hpp): a call from
// a one-thread team starts no thread of its own, and a team's calls run on its
// threads, which the release of idle workers ends.
class BlasThreads : public HarnessThreads {
 protected:
  // Large enough that the library would split it over threads if it could.
  static constexpr std::int64_t kSize = 256;
  std::vector<float> a = std::vector<float>(kSize * kSize, 0.5f);
  std::vector<float> b = std::vector<float>(kSize * kSize, 0.25f);
  std::vector<float> c = std::vector<float>(kSize * kSize);
};

TEST_F(BlasThreads, ACallFromAOneThreadTeamRunsOnThatThread) {
  int during = 0;
#pragma omp parallel num_threads(1)
  {
    blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
                c.data(), kSize);
    during = process_thread_count();
  }
  EXPECT_EQ(during, 1);
  EXPECT_EQ(process_thread_count(), 1);
  EXPECT_FLOAT_EQ(c[0], 0.5f * 0.25f * kSize);
}

TEST_F(BlasThreads, CallsFromATeamRunOnItsThreadsOnly) {
  int during = 0;
#pragma omp parallel num_threads(2)
  {
    blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
                c.data(), kSize);
#pragma omp barrier
#pragma omp single
    during = process_thread_count();
  }
  EXPECT_EQ(during, 2);
}

TEST_F(BlasThreads, TheReleaseEndsATeamsThreads) {
#pragma omp parallel num_threads(2)
  blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
              c.data(), kSize);
  EXPECT_EQ(process_thread_count(), 2) << "the team's worker stays until released";
  release_idle_openmp_threads();
  EXPECT_TRUE(threads_become(1));
  // And a one-thread team's call starts none again.
#pragma omp parallel num_threads(1)
  blas::sgemm(blas::Op::none, blas::Op::none, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f,
              c.data(), kSize);
  EXPECT_EQ(process_thread_count(), 1);
}

}  // namespace
}  // namespace attnbench
