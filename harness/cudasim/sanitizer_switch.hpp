// Whether the simulator's sanitizer tracks shared-memory state (races, reads of
// unwritten or in-flight bytes). On by default; ATTNBENCH_CUDASIM_SANITIZER=0
// (or "off") turns it off for a run, and tests may set it. Bounds and
// alignment are checked either way.
#pragma once

namespace cudasim {

bool sanitizer_enabled();
void set_sanitizer_enabled(bool enabled);

}  // namespace cudasim
