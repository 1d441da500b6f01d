// Every kind of mask the predicates of kernels/common/mask.hpp describe, in both
// alignments: none, causal, windows (two-sided, zero-width, one-sided), causal
// with a window. The geometry tests check tile and row bounds against
// is_visible() over all of them.
#pragma once

#include <vector>

#include "kernels/common/mask.hpp"

namespace attnbench {

inline std::vector<MaskSpec> every_mask_kind() {
  std::vector<MaskSpec> masks;
  for (bool bottom_right : {false, true}) {
    masks.push_back(MaskSpec{false, bottom_right, -1, -1});
    masks.push_back(MaskSpec{true, bottom_right, -1, -1});
    masks.push_back(MaskSpec{false, bottom_right, 37, 5});
    masks.push_back(MaskSpec{false, bottom_right, 0, 0});
    masks.push_back(MaskSpec{true, bottom_right, 64, -1});
    masks.push_back(MaskSpec{true, bottom_right, 0, -1});
    masks.push_back(MaskSpec{false, bottom_right, -1, 20});
    masks.push_back(MaskSpec{false, bottom_right, 100, -1});
    masks.push_back(MaskSpec{false, bottom_right, 3, 130});
  }
  return masks;
}

}  // namespace attnbench
