// `attnbench compare BASE NEW`, the regression gate (docs/compare.md): matches the
// records of two results files by (scenario, case_key, implementation), checks
// that both ran on the same devices with the same run settings (threads,
// measure settings, cache mode), and gives every matched cell a verdict
// from its status, time (harness/compare/statistics.hpp, with Holm's correction over
// all cells), HBM bytes, peak memory and accuracy, each with its own tolerance.
// An unfinished file on either side, or a cell ok in BASE that NEW lacks, makes
// the comparison incomplete: not a pass unless the user allows it.
// docs/compare.md states every rule; harness/compare/outputs.hpp renders the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/regex.hpp"

namespace attnbench {

inline constexpr const char* kCompareSchemaId = "attnbench.compare/1";

// Fewer timing samples than this on either side make the time verdict inconclusive.
inline constexpr std::size_t kMinimumTimeSamples = 5;

// The JSON Schema of compare configuration files (embedded at build time).
const nlohmann::ordered_json& compare_config_schema();

// What may differ between BASE and NEW before a cell regresses; per cell.
struct Tolerances {
  double time_threshold = 0.05;   // relative slowdown of the time ratio's interval
  double min_effect = 0.10;       // relative slowdown of the effect across rounds (docs/compare.md)
  double hbm_tolerance = 0.01;    // relative change of HBM bytes
  std::uint64_t memory_slack = 0; // bytes of peak memory growth
  double accuracy_factor = 2.0;   // new max abs error <= factor x base + floor
};

// Tolerances for the cells whose "<scenario>/<case_key>/<implementation>"
// contains a match of `match` (ECMAScript syntax, harness/scenario/regex.hpp); fields not given
// keep their value.
struct ToleranceOverride {
  std::string match;
  std::optional<Regex> pattern;  // `match`, compiled
  std::optional<double> time_threshold, min_effect, hbm_tolerance, accuracy_factor;
  std::optional<std::uint64_t> memory_slack;
};

struct CompareSettings {
  Tolerances defaults;
  double alpha = 0.05;  // family-wise error rate of the time verdicts (Holm)
  bool allow_different_devices = false;
  bool allow_different_settings = false;
  // Judge noisy cells and rounds (timing.noise) instead of calling them inconclusive.
  bool allow_noisy = false;
  // Admit an unfinished file and cells missing from NEW (--allow-missing; a
  // command-line flag only, so a configuration file cannot make a gate lenient).
  bool allow_missing = false;
  std::vector<ToleranceOverride> overrides;  // later matches win
  std::string config_path;                   // empty without --config

  // The defaults, then every matching override in order.
  Tolerances for_cell(const std::string& scenario, const std::string& case_key,
                      const std::string& implementation) const;
};

// Reads a configuration file: JSON with comments, validated against
// scenarios/compare.schema.json. Throws InputError naming the file and the key.
CompareSettings load_compare_config(const std::string& path);

// The same from a parsed document; `file` names it in diagnostics.
CompareSettings parse_compare_config(const nlohmann::ordered_json& document, const std::string& file);

// Command-line flags, given as an object with the configuration's keys
// ({"time_threshold": 0.1}), checked by the same schema and applied over the
// defaults (overrides still apply per cell); diagnostics name the flag.
void apply_command_line_settings(CompareSettings& settings, const nlohmann::ordered_json& flags);

// Ordered by severity: a cell's verdict is the worst of its metrics'.
enum class CompareVerdict { pass, improvement, inconclusive, regression };
const char* to_string(CompareVerdict verdict);

// One metric of one cell: "status", "time", "hbm_bytes", "peak_memory", "accuracy".
struct MetricComparison {
  std::string metric;
  CompareVerdict verdict = CompareVerdict::pass;
  std::string summary;             // one line, e.g. "time +12.3% [+10.1%, +14.6%] > +5.0%"
  nlohmann::ordered_json details;  // the numbers behind it (finite or null)
};

// One round of a cell measured on both sides (merge --rounds; a plain run is
// one round): the medians of its samples.
struct RoundMedians {
  int round = 1;
  double base_p50 = 0, new_p50 = 0;
};

// One cell's timing samples (seconds) of the rounds that were clean on both
// sides, those rounds' medians, and its tolerances.
struct TimeSamples {
  std::vector<double> base_seconds, new_seconds;
  double time_threshold = 0.05;
  double min_effect = 0.10;
  std::vector<RoundMedians> rounds;
};

// The time verdicts of a family of cells, Holm-corrected at `alpha` over every
// cell that can be judged: at least kMinimumTimeSamples positive samples on
// each side (the others are inconclusive and not in the family). Regression:
// the whole interval of NEW/BASE lies above 1 + threshold, and the effect
// holds in every round: each round's ratio of medians is above 1 + min_effect
// (one round: the pooled estimate is). Improvement: the mirror image. A
// difference the interval shows but the rounds do not back is a pass when the
// median of the rounds' ratios is within min_effect, and inconclusive when it
// is not but some round disagrees in direction or falls short of min_effect.
// Inconclusive too when the sample sizes give no interval at the cell's level.
std::vector<MetricComparison> compare_times(const std::vector<TimeSamples>& cells, double alpha);

struct CellComparison {
  std::string scenario, case_key, implementation;
  Tolerances tolerances;
  CompareVerdict verdict = CompareVerdict::pass;
  std::vector<MetricComparison> metrics;  // time first when it was judged
  const MetricComparison* metric(const std::string& name) const;
};

struct UnmatchedCell {
  std::string scenario, case_key, implementation;
  std::string status;  // of its record
};

// A cell that ran (status ok) in BASE and that NEW lacks: no record of it in
// NEW ("absent": a case or implementation that vanished, or an unfinished run)
// or a skipped one ("skipped", with NEW's reason). Not compared, never a pass.
struct MissingCell {
  std::string scenario, case_key, implementation;
  std::string in_new;  // "absent" or "skipped"
  std::string reason;  // NEW's reason when skipped
};

// A device identity field that differs: "cpu name: \"X\" (BASE) vs \"Y\" (NEW)".
struct DeviceDifference {
  std::string kind, field, base, next;
  std::string format() const;
};

// A run setting that differs: "threads: 2 (BASE) vs 1 (NEW)",
// "quick measure.min_samples: 10 (BASE) vs 20 (NEW)".
struct SettingDifference {
  std::string setting, base, next;
  std::string format() const;
};

// One of the two results files, as the outputs name it.
struct CompareInput {
  std::string path;
  std::string git_revision;  // of the attnbench that wrote it
  std::string started_at;
  std::size_t records = 0;
  bool complete = true;  // false: a checkpoint of an interrupted or running run
  // The machine while it ran: the highest 1-minute load average its file (or
  // its merged inputs) recorded, the available CPUs, how many records are
  // noisy (timing.noise), and the machine check's warnings (the findings that
  // can change a verdict).
  std::optional<double> highest_load;
  int available_cpus = 0;
  std::size_t noisy_records = 0;
  std::vector<std::string> machine_warnings;
  std::string machine_text() const;  // "" when there is nothing to say
  // The file's "plugins": each library's path, SHA-256 and implementations
  // with their versions (a build of a plug-in is part of what is compared).
  nlohmann::ordered_json plugins = nlohmann::ordered_json::array();
};

struct CompareReport {
  CompareInput base, next;
  CompareSettings settings;
  std::vector<DeviceDifference> device_differences;
  std::vector<SettingDifference> setting_differences;
  // Devices or settings differ and that was not allowed: nothing compared.
  bool refused = false;
  std::vector<CellComparison> cells;  // in BASE's record order
  // Every record only in one file; those only in BASE with status ok are also
  // in `missing`.
  std::vector<UnmatchedCell> only_in_base, only_in_new;
  std::vector<MissingCell> missing;  // in BASE's record order
  // The sides ("BASE", "NEW") whose file is unfinished (complete: false).
  std::vector<std::string> unfinished() const;
  // An unfinished file or a missing cell: not a pass unless allow_missing.
  bool incomplete() const { return !missing.empty() || !unfinished().empty(); }
  std::size_t count(CompareVerdict verdict) const;
  // The geometric mean of NEW/BASE over the cells whose time ratio was
  // estimated (Google Benchmark's compare.py prints the same), and how many.
  struct TimeSummary {
    std::size_t cells = 0;
    std::optional<double> geometric_mean_ratio;
  };
  TimeSummary time_summary() const;
  // Whether any cell had something measured on both sides (not every cell
  // skipped in both files): a gate that measured nothing cannot pass.
  bool measured_anything() const;
  // docs/design.md §8: 1 on any regression; else 3 when incomplete (and not
  // allowed), inconclusive, or nothing was compared; else 0.
  int exit_code = 0;
};

// Compares two results documents (already schema-checked; paths name them).
// Throws InputError when one holds two records of the same cell.
CompareReport compare_results(const nlohmann::ordered_json& base, const nlohmann::ordered_json& next,
                              const CompareSettings& settings, const std::string& base_path,
                              const std::string& new_path);

}  // namespace attnbench
