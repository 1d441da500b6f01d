// The problem as it appears in results files and in `attnbench list --json`:
// every resolved field, with the same key names as scenario files where they exist.
#pragma once

#include <nlohmann/json.hpp>

#include "harness/scenario/problem.hpp"

namespace attnbench {

nlohmann::ordered_json problem_to_json(const Problem& problem);
nlohmann::ordered_json flops_to_json(const Problem& problem);

}  // namespace attnbench
