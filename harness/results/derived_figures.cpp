#include "harness/results/derived_figures.hpp"

#include <cmath>
#include <vector>

#include "harness/measure/noise.hpp"
#include "harness/message_text.hpp"
#include "harness/measure/statistics.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

bool has_timing(const Json& record) {
  return record.contains("timing") && record["timing"].is_object() && record["timing"].contains("samples_seconds") &&
         record["timing"].contains("statistics") && !record["timing"]["samples_seconds"].empty();
}

// Numbers agree to the last bits a JSON round trip could leave; everything else exactly.
bool agrees(const Json& stored, const Json& recomputed) {
  if (stored.is_number() && recomputed.is_number()) {
    const double a = stored.get<double>(), b = recomputed.get<double>();
    return a == b || std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
  }
  if (stored.is_object() && recomputed.is_object()) {
    if (stored.size() != recomputed.size()) return false;
    for (const auto& [key, value] : recomputed.items()) {
      if (!stored.contains(key) || !agrees(stored[key], value)) return false;
    }
    return true;
  }
  if (stored.is_array() && recomputed.is_array()) {
    if (stored.size() != recomputed.size()) return false;
    for (std::size_t i = 0; i < stored.size(); ++i) {
      if (!agrees(stored[i], recomputed[i])) return false;
    }
    return true;
  }
  return stored == recomputed;
}

// A figure as a message quotes it: its JSON, cut short.
std::string shown(const Json& value) { return shorten(value.dump(), 60); }

}  // namespace

Json recomputed_timing_figures(const Json& record) {
  if (!has_timing(record)) return Json::object();
  const Json& timing = record["timing"];
  const auto samples = timing["samples_seconds"].get<std::vector<double>>();
  const Json& stored = timing["statistics"];
  const double confidence =
      stored.contains("median_ci_confidence") ? stored["median_ci_confidence"].get<double>() : 0.95;
  const bool joined_rounds = timing.contains("rounds");
  Json figures = Json::object();
  const bool noise_recomputable =
      !joined_rounds && timing.contains("host_activity") && timing["host_activity"].contains("available_cpus");
  const NoiseAssessment noise = noise_recomputable
                                    ? assess_noise(samples, host_activity_from_json(timing["host_activity"]))
                                    : assess_noise(samples);
  // A joined record's resolution is its rounds' largest (none: null), which only the round files show.
  const Json stated_resolution = joined_rounds && timing.contains("noise") ? timing["noise"]["resolution_seconds"]
                                                                           : Json();
  const double resolution = !joined_rounds                  ? noise.resolution_seconds
                            : stated_resolution.is_number() ? stated_resolution.get<double>()
                                                            : 0.0;
  SampleStatistics statistics = summarize(samples, confidence);
  widen_to_resolution(statistics, resolution);
  figures["statistics"] = statistics_json(statistics);
  const double median = statistics.p50;
  if (record.contains("flops") && record["flops"].contains("total")) {
    figures["tflops"] = median > 0 ? record["flops"]["total"].get<double>() / median / 1e12 : 0.0;
  }
  if (record.contains("traffic") && record["traffic"].contains("compulsory")) {
    const Json& compulsory = record["traffic"]["compulsory"];
    const double bytes = compulsory["read_bytes"].get<double>() + compulsory["write_bytes"].get<double>();
    figures["compulsory_bandwidth_gb_per_s"] = median > 0 ? bytes / median / 1e9 : 0.0;
  }
  if (noise_recomputable) figures["noise"] = noise.to_json();
  return figures;
}

void refresh_timing_figures(Json& record) {
  const Json figures = recomputed_timing_figures(record);
  for (const auto& [key, value] : figures.items()) record["timing"][key] = value;
}

std::string derived_figure_contradiction(const Json& record) {
  const Json figures = recomputed_timing_figures(record);
  for (const auto& [key, recomputed] : figures.items()) {
    const Json& stored = record["timing"].contains(key) ? record["timing"][key] : Json("(absent)");
    if (agrees(stored, recomputed)) continue;
    if (stored.is_object() && recomputed.is_object()) {
      for (const auto& [field, value] : recomputed.items()) {
        const Json& held = stored.contains(field) ? stored[field] : Json("(absent)");
        if (!agrees(held, value)) {
          return "timing." + key + "." + field + " is " + shown(held) + " but its samples give " + shown(value);
        }
      }
    }
    return "timing." + key + " is " + shown(stored) + " but its own data give " + shown(recomputed);
  }
  return "";
}

}  // namespace attnbench
