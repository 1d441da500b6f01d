// Sharded sweeps: parsing --shard, and a deterministic, balanced assignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "harness/errors.hpp"
#include "harness/run/shard.hpp"

namespace attnbench {
namespace {

TEST(Shard, ParsesKOverN) {
  const Shard shard = parse_shard("3/8");
  EXPECT_EQ(shard.index, 3);
  EXPECT_EQ(shard.count, 8);
  for (const char* bad : {"0/4", "5/4", "1/0", "2", "a/b", "1/2/3", "-1/4", " 1/4", "1/9999999"}) {
    EXPECT_THROW(parse_shard(bad), InputError) << bad;
  }
}

TEST(Shard, EveryItemGoesToExactlyOneShardAndTheSplitIsDeterministic) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> cost(1, 1000);
  std::vector<double> costs(57);
  for (auto& c : costs) c = cost(rng);
  const std::vector<int> first = assign_to_shards(costs, 5);
  EXPECT_EQ(first, assign_to_shards(costs, 5));
  for (int shard : first) {
    EXPECT_GE(shard, 0);
    EXPECT_LT(shard, 5);
  }
}

TEST(Shard, LoadsDifferByAtMostTheLargestItem) {
  // Greedy heaviest-first: no shard exceeds another by more than one item.
  std::mt19937 rng(9);
  std::lognormal_distribution<double> cost(0, 2);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> costs(40);
    for (auto& c : costs) c = cost(rng);
    const int count = 1 + trial % 7;
    const std::vector<int> shard_of = assign_to_shards(costs, count);
    std::vector<double> load(static_cast<std::size_t>(count), 0);
    for (std::size_t i = 0; i < costs.size(); ++i) load[static_cast<std::size_t>(shard_of[i])] += costs[i];
    const double largest = *std::max_element(costs.begin(), costs.end());
    EXPECT_LE(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()),
              largest + 1e-9);
  }
}

TEST(Shard, EqualCostsSpreadRoundRobin) {
  const std::vector<int> shard_of = assign_to_shards(std::vector<double>(6, 1.0), 3);
  EXPECT_EQ(shard_of, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

}  // namespace
}  // namespace attnbench
