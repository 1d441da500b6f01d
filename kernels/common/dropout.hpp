// The dropout RNG contract of docs/design.md §2.3, shared by every implementation.
//
// The probability element (b, h, i, j) — h the query head, i and j positions in
// the padded [0, Nq) x [0, Nk) grid — draws Philox4x32-10 with
//   counter = {j / 4, i, b * H + h, offset},  key = {seed low word, seed high word}
// and uses output word (j mod 4). It is dropped iff that word < threshold, with
// threshold = min(floor(p * 2^32), 2^32 - 1). Kept elements are scaled by 1/(1-p).
// One Philox call therefore serves four consecutive keys of one row.
#pragma once

#include <cstdint>

#include "host_device.hpp"
#include "philox.hpp"

namespace attnbench {

struct DropoutRng {
  std::uint32_t key0 = 0;       // seed & 0xffffffff
  std::uint32_t key1 = 0;       // seed >> 32
  std::uint32_t offset = 0;     // fourth counter word
  std::uint32_t threshold = 0;  // drop iff word < threshold
  std::uint32_t heads = 1;      // H, the number of query heads
  float keep_scale = 1.0f;      // 1 / (1 - p)
  bool enabled = false;         // p > 0; p = 0 means no RNG work at all
};

// threshold = min(floor(p * 2^32), 2^32 - 1).
ATTNBENCH_HD std::uint32_t dropout_threshold(double probability) {
  const double scaled = probability * 4294967296.0;
  if (scaled >= 4294967295.0) return 0xffffffffu;
  if (scaled <= 0.0) return 0u;
  return static_cast<std::uint32_t>(scaled);  // truncation is floor for positive values
}

inline DropoutRng make_dropout_rng(double probability, std::uint64_t seed, std::uint32_t offset,
                                   std::uint32_t heads) {
  DropoutRng rng;
  rng.key0 = static_cast<std::uint32_t>(seed & 0xffffffffu);
  rng.key1 = static_cast<std::uint32_t>(seed >> 32);
  rng.offset = offset;
  rng.threshold = dropout_threshold(probability);
  rng.heads = heads;
  rng.enabled = probability > 0.0;
  rng.keep_scale = rng.enabled ? static_cast<float>(1.0 / (1.0 - probability)) : 1.0f;
  return rng;
}

// The four words for keys 4*key_group .. 4*key_group+3 of query row `row`.
ATTNBENCH_HD PhiloxBlock dropout_words(const DropoutRng& rng, std::uint32_t batch,
                                       std::uint32_t head, std::uint32_t row,
                                       std::uint32_t key_group) {
  const PhiloxBlock counter{{key_group, row, batch * rng.heads + head, rng.offset}};
  return philox4x32_10(counter, rng.key0, rng.key1);
}

// Word `index` (0..3) of a Philox block, by selects: an indexed read would put
// the block in local memory on the GPU.
ATTNBENCH_HD std::uint32_t philox_word(const PhiloxBlock& block, int index) {
  const std::uint32_t low = (index & 1) ? block.word[1] : block.word[0];
  const std::uint32_t high = (index & 1) ? block.word[3] : block.word[2];
  return (index & 2) ? high : low;
}

ATTNBENCH_HD bool dropout_word_keeps(const DropoutRng& rng, std::uint32_t word) {
  return word >= rng.threshold;
}

// True when element (batch, head, row, key) survives dropout.
ATTNBENCH_HD bool dropout_keeps(const DropoutRng& rng, std::uint32_t batch, std::uint32_t head,
                                std::uint32_t row, std::uint32_t key) {
  if (!rng.enabled) return true;
  const PhiloxBlock words = dropout_words(rng, batch, head, row, key / 4u);
  return dropout_word_keeps(rng, words.word[key % 4u]);
}

}  // namespace attnbench
