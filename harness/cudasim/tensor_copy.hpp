// The tensor copies of the simulator (tensor_copy.cpp): TMA loads and stores
// through tensor maps; mbarrier.cpp lands a load when its phase completes.
#pragma once

#include "harness/cudasim/async_state.hpp"
#include "harness/cudasim/happens_before.hpp"
#include "harness/cudasim/mbarrier.hpp"

namespace cudasim {

class Cta;
struct SimThread;

// A TMA load lands: its bytes are written to shared memory by `epoch`.
void land_tma_load(Cta& cta, TmaLoadInFlight& load, Epoch epoch);
// A bulk copy of `thread` to global memory completes: a TMA store writes its
// bytes, a cp.reduce.async.bulk adds its elements.
void complete_bulk_store(SimThread& thread, const BulkStore& store);

}  // namespace cudasim
