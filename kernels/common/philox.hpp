// Philox4x32-10 counter-based generator (Salmon et al., SC'11, as defined by
// Random123): ten rounds of a multiply-xor bijection over a 128-bit counter,
// keyed by a 64-bit key that is bumped by the Weyl constants between rounds.
// Stateless: the same (counter, key) always gives the same four words, on the
// host and on the GPU, which is what lets every implementation regenerate the
// same dropout mask and the same input data independently.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace attnbench {

struct PhiloxBlock {
  std::uint32_t word[4];
};

namespace philox_detail {

inline constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
inline constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
inline constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

ATTNBENCH_HD void multiply_high_low(std::uint32_t a, std::uint32_t b, std::uint32_t& high,
                                    std::uint32_t& low) {
#if defined(__CUDA_ARCH__)
  high = __umulhi(a, b);
  low = a * b;
#else
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  high = static_cast<std::uint32_t>(product >> 32);
  low = static_cast<std::uint32_t>(product);
#endif
}

}  // namespace philox_detail

// Philox4x32 with 10 rounds. `counter` is the 128-bit input block; key0/key1 the
// two key words.
ATTNBENCH_HD PhiloxBlock philox4x32_10(PhiloxBlock counter, std::uint32_t key0,
                                       std::uint32_t key1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
    std::uint32_t high0, low0, high1, low1;
    multiply_high_low(kMultiplier0, counter.word[0], high0, low0);
    multiply_high_low(kMultiplier1, counter.word[2], high1, low1);
    counter = PhiloxBlock{{high1 ^ counter.word[1] ^ key0, low1, high0 ^ counter.word[3] ^ key1,
                           low0}};
  }
  return counter;
}

}  // namespace attnbench
