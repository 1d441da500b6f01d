// The tensor copies of the simulator (tensor_copy.cpp): TMA loads and stores
// through tensor maps, and the hooks mbarrier.cpp and the CTA use to complete them.
#pragma once

#include <cstdint>

#include "harness/cudasim/happens_before.hpp"
#include "harness/cudasim/mbarrier.hpp"

namespace cudasim {

class Cta;
struct SimThread;

// A TMA load lands: its bytes are written to shared memory by `epoch`.
void land_tma_load(Cta& cta, TmaLoadInFlight& load, Epoch epoch);

// mbarrier.cpp: the live mbarrier a TMA load issued by `thread` completes on
// (checked: initialised, and the initialisation fenced for the async proxy),
// and the load's registration on it.
Mbarrier& mbarrier_for_tma(SimThread& thread, std::uint32_t address, const void* pc);
void add_tma_load(Mbarrier& barrier, TmaLoadInFlight load);

}  // namespace cudasim
