// The measurement flags every command that times cases shares: they override
// a scenario's "measure" settings (docs/scenarios.md) for one invocation, and
// the effective settings are what the results file records under
// scenarios[].measure.
//
//   --min-samples N   --max-samples N   --min-time S   --max-time S
//   --target-ci W     --warmup S        --warmup-iterations N   --hot | --cold
//   --timing METHOD[,METHOD...]   --graph-calls N   --clock-mark-share S
#pragma once

#include <CLI/CLI.hpp>

#include "harness/measure/protocol.hpp"

namespace attnbench {

// Registers the flags on `command`; each one given sets its field of `overrides`.
// Values are range-checked as the scenario schema checks the same keys.
void add_measurement_options(CLI::App& command, MeasurementOverrides& overrides);

}  // namespace attnbench
