// What the host can give a run (harness/host_info.hpp): the last-level cache
// from a sysfs tree (level, size, shared_cpu_list), the CPU limit of cgroup v1
// and v2 trees, on fake trees in a temporary directory; and on this machine,
// figures that agree with what the OS says.
#include "harness/host_info.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace attnbench {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, for a fake /sys or /sys/fs/cgroup tree.
class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    directory_ = fs::path(::testing::TempDir()) /
                 ("attnbench_host_" + std::string(test->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  // Writes `text` to root/relative, making its directories.
  void put(const std::string& relative, const std::string& text) const {
    const fs::path file = directory_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
  }
  void cache(const std::string& cpu, int index, int level, const std::string& type, const std::string& size,
             const std::string& shared) const {
    const std::string directory = cpu + "/cache/index" + std::to_string(index) + "/";
    put(directory + "level", std::to_string(level));
    put(directory + "type", type);
    put(directory + "size", size);
    put(directory + "shared_cpu_list", shared);
  }
  std::string root() const { return directory_.string(); }

  fs::path directory_;
};

TEST(CacheSize, SysfsSizeFieldsParse) {
  EXPECT_EQ(parse_cache_size("32768K"), 32ull << 20);
  EXPECT_EQ(parse_cache_size("48K\n"), 48ull << 10);
  EXPECT_EQ(parse_cache_size("2M"), 2ull << 20);
  EXPECT_EQ(parse_cache_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_cache_size("65536"), 65536u);
  EXPECT_FALSE(parse_cache_size(""));
  EXPECT_FALSE(parse_cache_size("32 MiB"));
  EXPECT_FALSE(parse_cache_size("-1K"));
}

using LastLevelCache = FakeTree;

TEST_F(LastLevelCache, IsTheLargestDataCacheOfTheHighestLevel) {
  // Two CPUs sharing one 32 MiB L3 (the figure sysconf reported as 256 MiB
  // on a VM), private L1 and L2; an instruction cache of a higher level must
  // not count.
  for (const std::string cpu : {"cpu0", "cpu1"}) {
    const std::string self = cpu.substr(3);
    cache(cpu, 0, 1, "Data", "48K", self);
    cache(cpu, 1, 1, "Instruction", "32K", self);
    cache(cpu, 2, 2, "Unified", "2048K", self);
    cache(cpu, 3, 3, "Unified", "32768K", "0-1");
    cache(cpu, 4, 4, "Instruction", "512M", self);
  }
  put("cpufreq/policy0/scaling_governor", "performance");  // not a cpuN directory
  const std::optional<CacheInfo> found = last_level_cache_from_sysfs(root());
  ASSERT_TRUE(found);
  EXPECT_EQ(found->bytes, 32ull << 20);
  EXPECT_EQ(found->level, 3);
  EXPECT_EQ(found->source, "sysfs");
}

TEST_F(LastLevelCache, TwoSocketsGiveOneInstanceNotTheirSum) {
  cache("cpu0", 0, 3, "Unified", "16M", "0-1");
  cache("cpu1", 0, 3, "Unified", "16M", "0-1");
  cache("cpu2", 0, 3, "Unified", "24M", "2-3");
  cache("cpu3", 0, 3, "Unified", "24M", "2-3");
  const std::optional<CacheInfo> found = last_level_cache_from_sysfs(root());
  ASSERT_TRUE(found);
  EXPECT_EQ(found->bytes, 24ull << 20);
}

TEST_F(LastLevelCache, NothingUsableMeansNoAnswer) {
  EXPECT_FALSE(last_level_cache_from_sysfs((directory_ / "missing").string()));
  put("cpu0/online", "1");  // a CPU without cache directories
  EXPECT_FALSE(last_level_cache_from_sysfs(root()));
  cache("cpu0", 0, 2, "Unified", "garbage", "0");
  EXPECT_FALSE(last_level_cache_from_sysfs(root()));
}

using CgroupCpuLimit = FakeTree;

TEST_F(CgroupCpuLimit, V2QuotaOfTheCgroupAndItsParentsRoundedDown) {
  put("cpu.max", "max 100000");
  put("jobs/cpu.max", "400000 100000");
  put("jobs/bench/cpu.max", "150000 100000");
  EXPECT_EQ(cgroup_cpu_limit(root(), "0::/jobs/bench\n"), 1);  // 1.5 CPUs: one thread is never throttled
  put("jobs/bench/cpu.max", "max 100000");
  EXPECT_EQ(cgroup_cpu_limit(root(), "0::/jobs/bench\n"), 4) << "the parent's limit";
  EXPECT_EQ(cgroup_cpu_limit(root(), "0::/\n"), std::nullopt) << "the root: no limit";
  put("jobs/cpu.max", "20000 100000");
  EXPECT_EQ(cgroup_cpu_limit(root(), "0::/jobs/bench\n"), 1) << "a fifth of a CPU is still one thread";
}

TEST_F(CgroupCpuLimit, V1QuotaAndPeriod) {
  put("cpu,cpuacct/slurm/job7/cpu.cfs_quota_us", "250000");
  put("cpu,cpuacct/slurm/job7/cpu.cfs_period_us", "100000");
  EXPECT_EQ(cgroup_cpu_limit(root(), "12:memory:/slurm/job7\n4:cpu,cpuacct:/slurm/job7\n"), 2);
  put("cpu,cpuacct/slurm/job7/cpu.cfs_quota_us", "-1");
  EXPECT_EQ(cgroup_cpu_limit(root(), "4:cpu,cpuacct:/slurm/job7\n"), std::nullopt);
  EXPECT_EQ(cgroup_cpu_limit(root(), "4:memory:/slurm/job7\n"), std::nullopt) << "not the cpu controller";
  EXPECT_EQ(cgroup_cpu_limit(root(), "not a cgroup line\n"), std::nullopt);
}

TEST(HostInfo, ThisMachinesFiguresAgreeWithTheOs) {
  const HostInfo host = read_host_info();
  EXPECT_GE(host.available_cpus.count, 1);
  EXPECT_LE(host.available_cpus.count, host.logical_cpus);
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  EXPECT_LE(host.available_cpus.count, CPU_COUNT(&allowed));
  EXPECT_GT(host.last_level_cache.bytes, 0u);
  if (last_level_cache_from_sysfs("/sys/devices/system/cpu")) {
    EXPECT_EQ(host.last_level_cache.source, "sysfs");
    EXPECT_EQ(host.last_level_cache.bytes, last_level_cache_from_sysfs("/sys/devices/system/cpu")->bytes);
  }
  const std::optional<std::array<double, 3>> loads = load_average();
  ASSERT_TRUE(loads) << "Linux reports load averages";
  for (double load : *loads) EXPECT_GE(load, 0.0);
}

TEST(HostInfo, AvailableCpusFollowTheAffinityMask) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
  if (CPU_COUNT(&original) < 2) GTEST_SKIP() << "needs two CPUs to narrow the mask";
  int first = 0;
  while (!CPU_ISSET(first, &original)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const CpuAvailability narrowed = available_cpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof original, &original), 0);
  EXPECT_EQ(narrowed.count, 1);
  EXPECT_EQ(narrowed.source, "cpu_affinity");
}

}  // namespace
}  // namespace attnbench
