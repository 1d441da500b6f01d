// How input tensors are filled (docs/design.md §2.2: seeded, never zeros), as a pure
// function of (seed, tensor, element) so the host and a GPU can generate the
// same data independently and in parallel.
//
// Element e of tensor t (its index in the logical [batch, seq, heads, dim]
// order, whatever the storage layout) takes Philox4x32-10 block
//   counter = {(e / 4) low word, (e / 4) high word, t, kInputStream}, key = seed
// and word (e mod 4). Normal values come from Box-Muller over the word pairs
// (0, 1) and (2, 3) of the block; uniform values from the element's own word.
#pragma once

#include <cmath>
#include <cstdint>

#include "host_device.hpp"
#include "philox.hpp"

namespace attnbench {

enum class InputTensor : std::uint32_t { q = 1, k = 2, v = 3, d_out = 4 };

inline constexpr std::uint32_t kInputStream = 0x494e5055u;  // "INPU"

ATTNBENCH_HD PhiloxBlock input_block(std::uint64_t seed, InputTensor tensor, std::uint64_t element) {
  const std::uint64_t block = element / 4;
  return philox4x32_10(PhiloxBlock{{static_cast<std::uint32_t>(block),
                                    static_cast<std::uint32_t>(block >> 32),
                                    static_cast<std::uint32_t>(tensor), kInputStream}},
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// Uniform in (0, 1]: never 0, so log() in Box-Muller is finite.
ATTNBENCH_HD double word_to_open_unit(std::uint32_t word) {
  return (static_cast<double>(word) + 1.0) * (1.0 / 4294967296.0);
}

ATTNBENCH_HD double input_normal(std::uint64_t seed, InputTensor tensor, std::uint64_t element,
                                 double mean, double stddev) {
  const PhiloxBlock block = input_block(seed, tensor, element);
  const unsigned pair = static_cast<unsigned>(element % 4) / 2;
  const double radius = sqrt(-2.0 * log(word_to_open_unit(block.word[2 * pair])));
  const double angle = 6.283185307179586 * word_to_open_unit(block.word[2 * pair + 1]);
  const double standard = (element % 2 == 0) ? radius * cos(angle) : radius * sin(angle);
  return mean + stddev * standard;
}

ATTNBENCH_HD double input_uniform(std::uint64_t seed, InputTensor tensor, std::uint64_t element,
                                  double low, double high) {
  const PhiloxBlock block = input_block(seed, tensor, element);
  const double unit = (static_cast<double>(block.word[element % 4]) + 0.5) * (1.0 / 4294967296.0);
  return low + (high - low) * unit;
}

}  // namespace attnbench
