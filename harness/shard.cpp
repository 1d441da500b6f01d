#include "shard.hpp"

#include <algorithm>
#include <numeric>
#include <regex>

#include "errors.hpp"

namespace attnbench {

Shard parse_shard(const std::string& text) {
  static const std::regex form("^([0-9]{1,6})/([0-9]{1,6})$");
  std::smatch match;
  if (std::regex_match(text, match, form)) {
    const Shard shard{std::stoi(match[1]), std::stoi(match[2])};
    if (shard.count >= 1 && shard.index >= 1 && shard.index <= shard.count) return shard;
  }
  throw InputError("--shard \"" + text + "\": expected K/N with 1 <= K <= N, e.g. 2/8");
}

std::vector<int> assign_to_shards(const std::vector<double>& costs, int shard_count) {
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  // Heaviest first; equal costs keep their order, so the result is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(static_cast<std::size_t>(shard_count), 0.0);
  std::vector<int> shard_of(costs.size(), 0);
  for (std::size_t item : order) {
    const auto lightest = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard_of[item] = static_cast<int>(lightest);
    load[lightest] += costs[item];
  }
  return shard_of;
}

}  // namespace attnbench
