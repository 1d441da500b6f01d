#include "harness/cli/measurement_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>

namespace attnbench {
namespace {

// 1000000000 rather than 1e+09 in the range of a flag's help and error.
std::string bound_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value == std::floor(value) && value < 1e15 ? "%.0f" : "%g", value);
  return text;
}

// A finite number in [low, high] (or (low, high] when `above_low`), as the
// scenario schema's measure keys allow; NaN and infinities are refused.
CLI::Validator number_in(double low, double high, bool above_low = false) {
  const std::string range = (above_low ? "(" : "[") + bound_text(low) + ", " + bound_text(high) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value > high ||
            (above_low ? value <= low : value < low)) {
          return "expected a number in " + range + ", got " + text;
        }
        return {};
      },
      range);
}

}  // namespace

void add_measurement_options(CLI::App& command, MeasurementOverrides& overrides) {
  const std::string group = "Measurement (override the scenario's \"measure\" settings)";
  // Each flag given sets its (optional) field.
  const auto add = [&](const std::string& name, auto& field, const std::string& help, const CLI::Validator& check) {
    using Value = typename std::decay_t<decltype(field)>::value_type;
    command.add_option_function<Value>(name, [&field](const Value& value) { field = value; }, help)
        ->check(check)
        ->group(group);
  };
  add("--min-samples", overrides.min_samples, "Samples to take at least (measure.min_samples)",
      number_in(1, 1e9));
  add("--max-samples", overrides.max_samples, "Samples to take at most (measure.max_samples)", number_in(1, 1e9));
  add("--min-time", overrides.min_seconds,
      "Seconds of sampled time before convergence may stop the sampling (measure.min_seconds)", number_in(0, 1e6));
  add("--max-time", overrides.max_seconds,
      "Wall-clock seconds the sampling of one record may take once --min-samples are taken (measure.max_seconds)",
      number_in(0, 1e6, true));
  add("--target-ci", overrides.target_ci_width,
      "Stop once the median's 95% CI is this narrow, relative to the median (measure.target_ci_width)",
      number_in(0, 1000, true));
  add("--warmup", overrides.warmup_min_seconds, "Seconds of warm-up at least (measure.warmup_min_seconds)",
      number_in(0, 1e6));
  add("--warmup-iterations", overrides.warmup_min_iterations,
      "Warm-up calls at least (measure.warmup_min_iterations)", number_in(0, 1e9));
  add("--warmup-window", overrides.warmup_window,
      "After the minimum warm-up, warm up until the medians of the last two windows of this many calls agree "
      "within 5%; 0 turns it off "
      "(measure.warmup_window)",
      number_in(0, 1000));
  add("--warmup-max", overrides.warmup_max_seconds,
      "Seconds the warm-up may take to find a stable window (measure.warmup_max_seconds)", number_in(0, 1e6));
  add("--graph-calls", overrides.graph_calls, "Calls captured into one CUDA graph with --timing graph (measure.graph_calls)",
      number_in(1, 1000));
  add("--clock-mark-share", overrides.clock_mark_share,
      "Mark a sample whose SM clock is below this share of the run's highest (measure.clock_mark_share)",
      number_in(0, 1, true));
  command
      .add_option_function<std::string>(
          "--timing",
          [&overrides](const std::string& text) {
            std::vector<TimingMethod> methods;
            std::size_t begin = 0;
            for (;;) {
              const std::size_t comma = text.find(',', begin);
              const std::string name = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
              const std::optional<TimingMethod> method = parse_timing_method(name);
              if (!method) {
                throw CLI::ValidationError("--timing", "\"" + name + "\" is no timing method (" + kTimingMethodNames + ")");
              }
              if (std::find(methods.begin(), methods.end(), *method) != methods.end()) {
                throw CLI::ValidationError("--timing", "names " + name + " twice");
              }
              methods.push_back(*method);
              if (comma == std::string::npos) break;
              begin = comma + 1;
            }
            overrides.timing = methods;
          },
          "What a sample's time is: events, cupti or graph (docs/design.md §4); a comma-separated list "
          "(cupti,graph,events) is an order to fall back through where the device or build cannot give a method "
          "(measure.timing)")
      ->type_name("METHOD[,METHOD...]")
      ->group(group);
  // One or the other, checked here rather than with CLI11's excludes(), which
  // prints "Excludes: --cold" into the flag's name column of --help.
  const auto set_cache = [&overrides](bool cold) {
    if (overrides.cold_cache && *overrides.cold_cache != cold) {
      throw CLI::ValidationError("--hot and --cold", "give one of them, not both");
    }
    overrides.cold_cache = cold;
  };
  command.add_flag_callback("--hot", [set_cache] { set_cache(false); }, "Hot cache: back-to-back samples (measure.cache)")
      ->group(group);
  command
      .add_flag_callback("--cold", [set_cache] { set_cache(true); },
                         "Cold cache: flush the last-level cache before every sample (measure.cache)")
      ->group(group);
}

}  // namespace attnbench
