// The order in which the simulator starts the CTAs of a launch: the grid's
// linear order by default; with a seed, a permutation of it drawn from the
// seed (the same seed, the same order). An accumulation whose order follows
// the CTAs' (red.global.add, atomics, bulk reductions) then adds in another
// order, and a kernel that claims a deterministic result must still give the
// same bits. ATTNBENCH_CUDASIM_CTA_ORDER=<seed> (a decimal number; 0 or unset:
// grid order) sets it for a run, and tests may set it (cudasim::CtaOrder).
#pragma once

#include <cstdint>
#include <vector>

namespace cudasim {

std::uint64_t cta_order_seed();
void set_cta_order_seed(std::uint64_t seed);

// The linear CTA indices 0 .. blocks - 1 in the order `seed` draws (a
// Fisher-Yates shuffle on a 64-bit SplitMix sequence, the same on every
// platform); seed 0: in order.
std::vector<std::int64_t> cta_order(std::int64_t blocks, std::uint64_t seed);

// The CTA order of a seed for a scope (a test's), back to grid order after it.
class CtaOrder {
 public:
  explicit CtaOrder(std::uint64_t seed) { set_cta_order_seed(seed); }
  ~CtaOrder() { set_cta_order_seed(0); }
  CtaOrder(const CtaOrder&) = delete;
  CtaOrder& operator=(const CtaOrder&) = delete;
};

}  // namespace cudasim
