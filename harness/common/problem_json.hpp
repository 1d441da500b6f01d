// The problem as it appears in results files and in `attnbench list --json`:
// every resolved field, with the same key names as scenario files where they exist.
#pragma once

#include <nlohmann/json.hpp>

#include "harness/common/problem.hpp"

namespace attnbench {

nlohmann::ordered_json problem_to_json(const Problem& problem);
nlohmann::ordered_json flops_to_json(const Problem& problem);

// Whether a problem (its JSON form) is one that `where` selects: every key's
// value equal to the problem's field, "seqlen" naming both lengths and a
// number for "dropout" its probability. Published values select their cases
// with it (scenario files' "published").
bool problem_matches(const nlohmann::ordered_json& where, const nlohmann::ordered_json& problem);

}  // namespace attnbench
