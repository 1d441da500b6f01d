// Sharded sweeps (docs/design.md §10): `run --shard K/N` runs the K-th of N parts of the
// expanded cases. The split is deterministic (every shard computes the same
// assignment from the same scenarios) and balanced by estimated cost: cases go,
// heaviest first, to the shard with the least work so far.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/common/shard_identity.hpp"

namespace attnbench {

// Parses "K/N" with 1 <= K <= N; throws InputError naming --shard otherwise.
Shard parse_shard(const std::string& text);

// The shard (0-based) each item goes to, given each item's estimated cost.
std::vector<int> assign_to_shards(const std::vector<double>& costs, int shard_count);

}  // namespace attnbench
