#include "harness/measure/noise.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "harness/format.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// The spread of a level of tick-quantised samples, relative to its centre.
constexpr double kTightLevel = 0.02;

// A run of consecutive sorted samples with no jump wider than kNoiseLevelGap.
struct Level {
  std::size_t begin = 0, end = 0;  // indices into the sorted samples
  double centre = 0;               // their median
  std::size_t count() const { return end - begin; }
};

std::vector<Level> levels_of(const std::vector<double>& sorted) {
  std::vector<Level> levels;
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= sorted.size(); ++i) {
    if (i < sorted.size() && sorted[i] <= sorted[i - 1] * (1.0 + kNoiseLevelGap)) continue;
    const std::vector<double> members(sorted.begin() + static_cast<std::ptrdiff_t>(begin),
                                      sorted.begin() + static_cast<std::ptrdiff_t>(i));
    levels.push_back({begin, i, percentile_sorted(members, 0.5)});
    begin = i;
  }
  return levels;
}

std::size_t level_of(const std::vector<Level>& levels, std::size_t sorted_index) {
  for (std::size_t l = 0; l < levels.size(); ++l) {
    if (sorted_index < levels[l].end) return l;
  }
  return levels.size() - 1;
}

std::string percent_of(std::size_t part, std::size_t whole) {
  return format_fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 0) + "%";
}

// The largest step of which every centre is a whole multiple (within a tenth of
// the step), from the smallest spacing of the centres divided by 1 to 4; 0 when none fits.
double common_step(const std::vector<double>& centres) {
  double spacing = centres.back();
  for (std::size_t i = 1; i < centres.size(); ++i) spacing = std::min(spacing, centres[i] - centres[i - 1]);
  for (int divisor = 1; divisor <= 4; ++divisor) {
    const double guess = spacing / divisor;
    double weighted = 0, squares = 0;
    bool fits = true;
    for (double centre : centres) {
      const double multiple = std::round(centre / guess);
      if (multiple < 1 || std::abs(centre - multiple * guess) > 0.1 * guess) {
        fits = false;
        break;
      }
      weighted += multiple * centre;
      squares += multiple * multiple;
    }
    if (fits) return weighted / squares;  // the least-squares step of those multiples
  }
  return 0;
}

void assess_distribution(const std::vector<double>& samples, NoiseAssessment& noise) {
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const std::vector<Level> levels = levels_of(sorted);

  // Quantised: levels of at least two samples on multiples of one step: three
  // or more, or two that are each as tight as a tick's multiples are (within
  // kTightLevel of their centre).
  std::vector<double> repeated;
  bool tight = true;
  for (const Level& level : levels) {
    if (level.count() < 2) continue;
    repeated.push_back(level.centre);
    tight = tight && sorted[level.end - 1] - sorted[level.begin] <= kTightLevel * level.centre;
  }
  if (repeated.size() >= 3 || (repeated.size() == 2 && tight)) {
    if (const double step = common_step(repeated); step > 0) {
      std::vector<std::string> shown;
      for (double centre : repeated) shown.push_back(format_seconds(centre));
      noise.resolution_seconds = step;
      noise.findings.push_back(
          {"quantised", "quantised at ~" + format_seconds(step) + " (levels " + join(shown, ", ") + ")", true});
    }
  }

  // Levels: two or more holding a tenth of the samples each. They make the
  // median noisy when its own level holds less than kMedianLevelShare of the
  // samples: a few more samples on the other level would move it there.
  const std::size_t major_size = std::max<std::size_t>(2, (n + 9) / 10);
  std::vector<std::string> major;
  for (const Level& level : levels) {
    if (level.count() >= major_size) {
      major.push_back("~" + format_seconds(level.centre) + " (" + percent_of(level.count(), n) + ")");
    }
  }
  const Level& median_level = levels[level_of(levels, (n - 1) / 2)];
  const bool unsettled = static_cast<double>(median_level.count()) < kMedianLevelShare * static_cast<double>(n);
  if (noise.resolution_seconds == 0 && major.size() >= 2) {
    noise.findings.push_back({"levels",
                              std::to_string(major.size()) + " levels " + join(major, ", ") +
                                  (unsettled ? ": the median's level holds less than " +
                                                   format_fixed(100 * kMedianLevelShare, 0) + "% of the samples"
                                             : ""),
                              unsettled});
  }

  // Outliers: beyond three interquartile ranges of the quartiles, outside any major level.
  const double median = percentile_sorted(sorted, 0.5);
  const double p25 = percentile_sorted(sorted, 0.25), p75 = percentile_sorted(sorted, 0.75);
  const double spread = std::max(p75 - p25, 0.01 * median);
  std::size_t outside = 0;
  double farthest = median;
  for (std::size_t i = 0; i < n; ++i) {
    if (levels[level_of(levels, i)].count() >= major_size) continue;
    if (sorted[i] > p75 + 3 * spread || sorted[i] < p25 - 3 * spread) {
      ++outside;
      if (std::abs(sorted[i] - median) > std::abs(farthest - median)) farthest = sorted[i];
    }
  }
  if (outside > 0) {
    noise.findings.push_back({"outliers",
                              std::to_string(outside) + " of " + std::to_string(n) +
                                  " samples far outside the bulk (up to " + format_seconds(farthest) + ")",
                              false});
  }

  // Drifting: the last third's median away from the first third's, by more
  // than kNoiseLevelGap and by more than the thirds' own spread (their
  // interquartile ranges do not overlap).
  const std::size_t third = n / 3;
  const auto third_of = [&](std::size_t begin) {
    std::vector<double> part(samples.begin() + static_cast<std::ptrdiff_t>(begin),
                             samples.begin() + static_cast<std::ptrdiff_t>(begin + third));
    std::sort(part.begin(), part.end());
    return std::array<double, 3>{percentile_sorted(part, 0.25), percentile_sorted(part, 0.5),
                                 percentile_sorted(part, 0.75)};
  };
  const auto first = third_of(0), last = third_of(n - third);
  const bool apart = first[2] < last[0] || last[2] < first[0];
  if (first[1] > 0 && apart && std::abs(last[1] / first[1] - 1.0) > kNoiseLevelGap) {
    noise.findings.push_back({"drifting",
                              "drifting: " + std::string(last[1] > first[1] ? "+" : "") +
                                  format_fixed(100.0 * (last[1] / first[1] - 1.0), 0) +
                                  "% from the first third of the samples to the last",
                              true});
  }
}

void assess_host(const HostActivity& host, std::size_t samples, NoiseAssessment& noise) {
  if (host.load_before && host.load_after && *host.load_after - *host.load_before >= 1.0 &&
      *host.load_after >= host.available_cpus) {
    noise.findings.push_back({"load_rose",
                              "load average rose from " + format_fixed(*host.load_before, 1) + " to " +
                                  format_fixed(*host.load_after, 1) + " on " +
                                  count_of(static_cast<std::size_t>(host.available_cpus), "CPU") +
                                  " during the samples",
                              false});
  }
  if (host.steal_fraction && *host.steal_fraction >= 0.05) {
    noise.findings.push_back(
        {"steal", "steal time " + format_fixed(100.0 * *host.steal_fraction, 0) + "% of the host's CPU time", false});
  }
  if (host.involuntary_switches && *host.involuntary_switches >= 5 &&
      static_cast<std::size_t>(*host.involuntary_switches) * 4 >= samples) {
    noise.findings.push_back({"preempted",
                              "preempted " + std::to_string(*host.involuntary_switches) + " times during " +
                                  count_of(samples, "sample"),
                              false});
  }
}

}  // namespace

bool NoiseAssessment::noisy() const {
  return std::any_of(findings.begin(), findings.end(), [](const NoiseFinding& f) { return f.affects_median; });
}

std::string NoiseAssessment::verdict() const {
  std::vector<std::string> affecting, notes;
  for (const NoiseFinding& finding : findings) (finding.affects_median ? affecting : notes).push_back(finding.summary);
  std::string text = noisy() ? "noisy: " + join(affecting, "; ") : judged ? "ok" : "not judged (too few samples)";
  if (!notes.empty()) text += (noisy() ? "; notes: " : " (notes: ") + join(notes, "; ") + (noisy() ? "" : ")");
  return text;
}

Json NoiseAssessment::to_json() const {
  Json list = Json::array();
  for (const NoiseFinding& finding : findings) {
    list.push_back({{"kind", finding.kind}, {"summary", finding.summary}, {"affects_median", finding.affects_median}});
  }
  return Json{{"verdict", verdict()},
              {"noisy", noisy()},
              {"judged", judged},
              {"resolution_seconds", resolution_seconds > 0 ? Json(resolution_seconds) : Json(nullptr)},
              {"findings", std::move(list)}};
}

namespace {

template <typename Value>
nlohmann::ordered_json optional_json(const std::optional<Value>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

template <typename Value>
std::optional<Value> optional_from(const nlohmann::ordered_json& json, const char* key) {
  if (!json.contains(key) || json[key].is_null()) return std::nullopt;
  return json[key].get<Value>();
}

}  // namespace

nlohmann::ordered_json host_activity_json(const HostActivity& activity) {
  return nlohmann::ordered_json{{"load_before", optional_json(activity.load_before)},
                                {"load_after", optional_json(activity.load_after)},
                                {"steal_fraction", optional_json(activity.steal_fraction)},
                                {"involuntary_switches", optional_json(activity.involuntary_switches)},
                                {"available_cpus", activity.available_cpus}};
}

HostActivity host_activity_from_json(const nlohmann::ordered_json& json) {
  HostActivity activity;
  activity.load_before = optional_from<double>(json, "load_before");
  activity.load_after = optional_from<double>(json, "load_after");
  activity.steal_fraction = optional_from<double>(json, "steal_fraction");
  activity.involuntary_switches = optional_from<long>(json, "involuntary_switches");
  if (json.contains("available_cpus")) activity.available_cpus = json["available_cpus"].get<int>();
  return activity;
}

NoiseAssessment assess_noise(const std::vector<double>& samples, const HostActivity& host) {
  NoiseAssessment noise;
  noise.judged = samples.size() >= kNoiseMinimumSamples;
  if (noise.judged) assess_distribution(samples, noise);
  assess_host(host, samples.size(), noise);
  return noise;
}

void widen_to_resolution(SampleStatistics& stats, double resolution_seconds) {
  if (!(resolution_seconds > 0)) return;
  stats.median_ci_low = std::min(stats.median_ci_low, stats.p50 - 0.5 * resolution_seconds);
  stats.median_ci_high = std::max(stats.median_ci_high, stats.p50 + 0.5 * resolution_seconds);
}

}  // namespace attnbench
