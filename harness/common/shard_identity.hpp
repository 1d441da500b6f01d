// Which part of a sharded sweep a run is (`run --shard K/N`, docs/design.md §10).
// It sits on the floor because the run stage picks a shard's cases by it
// (harness/run/shard.hpp) and the results stage records it in the results
// file (harness/results/document.hpp), and results/ may not include run/.
#pragma once

namespace attnbench {

struct Shard {
  int index = 1;  // 1-based, as Slurm array task ids usually are
  int count = 1;
};

}  // namespace attnbench
