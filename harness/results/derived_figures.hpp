// The figures of a record that follow from its own data, recomputed rather
// than trusted: `--resume` and `merge` refuse a record whose stored figures
// differ from their recomputation (it was changed after it was measured), and
// `merge --rounds` sets them on the record it joins. What cannot be recomputed
// (the samples themselves, accuracy, memory, traffic counts) is not protected
// this way; docs/results.md ("What the checks protect") says so.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace attnbench {

// timing.statistics (summarize() of samples_seconds at the confidence the
// record states, the median's interval widened by the samples' resolution),
// timing.tflops and timing.compulsory_bandwidth_gb_per_s (flops.total and
// traffic.compulsory over the median) and timing.noise (assess_noise() of the
// samples and timing.host_activity), as the run computes them. A record of
// `merge --rounds` keeps its noise (its rounds' verdicts live in the round
// files) and its resolution. Only the keys the record can give: an older
// record without host_activity gets no noise.
nlohmann::ordered_json recomputed_timing_figures(const nlohmann::ordered_json& record);

// Writes recomputed_timing_figures() into record["timing"].
void refresh_timing_figures(nlohmann::ordered_json& record);

// The first stored figure that differs from its recomputation, as
// "timing.statistics.p90 is 0.0012 but the samples give 0.0024"; "" when every
// figure agrees or the record has no timing.
std::string derived_figure_contradiction(const nlohmann::ordered_json& record);

}  // namespace attnbench
