// Program counters of simulated kernels as source locations, for the
// sanitizer's reports: addr2line over the binary's debug information (the
// simulated translation units are built with -g and source-relative paths),
// with the chain of inlined calls, innermost first. Used only while a report
// is written, never while a kernel runs.
#pragma once

#include <string>
#include <vector>

namespace cudasim {

struct SourceFrame {
  std::string function;  // demangled
  std::string location;  // "kernels/cuda/flash_forward.cu:171"
  bool operator==(const SourceFrame&) const = default;
};

// The frames of the instruction just before return address `pc` (the call),
// innermost first; one frame with the raw address when no debug information is found.
std::vector<SourceFrame> source_frames(const void* pc);
// Whether two return addresses are calls from the same source: the same
// address, or the same chain of inlined source lines (the host compiler may
// duplicate a call, which a GPU compiler never does to a barrier).
bool same_source(const void* a, const void* b);
// The name of the function starting at `function` (a kernel), demangled.
std::string function_name(const void* function);

}  // namespace cudasim
