#pragma once

namespace attnbench {

// The JSON Schema documents of scenarios/, compiled in by cmake/embed_schemas.cmake
// (listed in ATTNBENCH_SCHEMAS in harness/CMakeLists.txt) so the binary
// validates files without looking for its source tree.
const char* embedded_scenario_schema();
const char* embedded_results_schema();
const char* embedded_compare_schema();

}  // namespace attnbench
