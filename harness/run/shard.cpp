#include "harness/run/shard.hpp"

#include <algorithm>
#include <numeric>

#include "harness/errors.hpp"
#include "harness/message_text.hpp"

namespace attnbench {

namespace {

// A number of 1 to 6 decimal digits, else -1.
int parse_count(std::string_view digits) {
  if (digits.empty() || digits.size() > 6) return -1;
  int value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  if (slash != std::string::npos) {
    const Shard shard{parse_count(std::string_view(text).substr(0, slash)),
                      parse_count(std::string_view(text).substr(slash + 1))};
    if (shard.count >= 1 && shard.index >= 1 && shard.index <= shard.count) return shard;
  }
  throw InputError("--shard " + quote(text) + ": expected K/N with 1 <= K <= N, e.g. 2/8");
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
