// Choosing what a command runs, for `run`, `bench`, `list` and the Google
// Benchmark front end alike: the implementations a scenario names (or the
// default set) and the --filter pattern that picks cases.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/implementation.hpp"
#include "harness/scenario/regex.hpp"

namespace attnbench {

// The implementations a scenario names: `requested` (from --impl or the
// scenario) or the default set (every available implementation on an
// accelerator when one is available, else every CPU implementation), whether
// or not this machine can run them. Throws InputError for an unknown name.
std::vector<Implementation*> resolve_implementations(const std::vector<std::string>& requested,
                                                     const std::string& requested_by);
// The same, for running them: also throws EnvironmentError for one this
// machine cannot run.
std::vector<Implementation*> select_implementations(const std::vector<std::string>& requested,
                                                    const std::string& requested_by);

// The --filter pattern, compiled; nullopt when it is empty. Throws InputError
// naming the flag when the pattern is malformed or one RE2 cannot express.
std::optional<Regex> case_filter(const std::string& pattern);

}  // namespace attnbench
