// What a run prints when it ends: the summary table of its records (one block
// per case, one row per implementation), the legend of its marks, and a
// warning when other work competed for the CPUs. The short case label is
// `list`'s and `report`'s too.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/host_info.hpp"
#include "harness/results/document.hpp"

namespace attnbench {

// Short label of a case for terminal output, from its results-file form
// (problem_to_json): "b2 h4/2 q100 k77 d64 fp16 fwd causal.br drop0.10".
std::string short_case_label(const nlohmann::ordered_json& problem);

// The summary table: one block per case, one row per implementation, fitting
// 80 columns for names of up to 17 characters (cuda.flash.simple). A record
// that is not ok shows its status where the median would be, and its reason
// on wrapped lines of its own. A --memory-only run has no timing columns, and
// a planned record's reason is shown where it differs from the implementation's
// last one.
void print_summary(const ResultsDocument& results);

// The line under a record's row naming what its timing method adds: cupti's
// kernel and events medians and the launch overhead, graph's calls per launch
// and the flush subtracted, and the methods a fallback order passed over; ""
// for a record timed by events without a fallback.
std::string timing_method_line(const nlohmann::ordered_json& timing);

// The line naming a GPU's clock policy: unlocked ("default") or the locked
// clocks; "" for a device that records none.
std::string clock_policy_line(const nlohmann::ordered_json& device);

// The line saying what CUPTI's activity records cost a launch on a device
// (devices[].kernel_timer_cost, measured once per run); "" where not measured.
std::string kernel_timer_cost_line(const nlohmann::ordered_json& device);

// A line saying that other work competed for the CPUs during the run, or "":
// when the 1-minute load average at the start plus this run's threads, or the
// load at the end (which includes this run), exceeds the CPUs available by
// more than half a CPU.
std::string load_warning(const nlohmann::ordered_json& load_average, int threads, const CpuAvailability& cpus);

}  // namespace attnbench
