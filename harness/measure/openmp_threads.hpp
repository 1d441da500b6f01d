// The OpenMP runtime keeps the workers of its last team alive after a parallel
// region, and depending on the wait policy (OMP_WAIT_POLICY, GOMP_SPINCOUNT)
// they spin for milliseconds or minutes. A worker left by one team (say,
// input generation or the oracle) spinning beside a timed call of another size
// (say, --threads 1) steals a CPU from the sample. Every parallel region of
// the harness uses the run's thread count, and the measurement releases any
// idle workers before it warms up and after its last sample, so the only
// OpenMP threads alive while a host sample is timed are those of the timed
// call's own team, whatever the wait policy.
#pragma once

#include <functional>
#include <thread>

namespace attnbench {

// Ends the OpenMP runtime's idle worker threads (omp_pause_resource_all, in
// libgomp since GCC 10 and libomp since LLVM 8); the next parallel region
// starts new ones.
void release_idle_openmp_threads();

// The OS threads of this process now (/proc/self/task); 0 where not known.
int process_thread_count();

// A thread running `function`, named `name` (at most 15 characters) from its
// first instant: a new thread inherits its creator's name, so the creator
// takes the name while it creates it. Tools and tests that count OpenMP
// workers tell the harness's own sleeping threads apart by their names.
std::thread start_named_thread(const char* name, std::function<void()> function);

}  // namespace attnbench
