#pragma once

#include <string>

namespace attnbench {

// Whether something can be done and, if not, a sentence saying why (it ends up in
// the results as the reason for a skip).
struct Verdict {
  bool ok = true;
  std::string reason;
  static Verdict yes() { return {}; }
  static Verdict no(std::string why) { return Verdict{false, std::move(why)}; }
};

}  // namespace attnbench
