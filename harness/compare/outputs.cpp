// Renders a CompareReport as a terminal table, Markdown, JUnit XML and JSON (see
// harness/compare/outputs.hpp and docs/compare.md).
#include "harness/compare/outputs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "harness/compare/statistics.hpp"
#include "harness/format.hpp"
#include "harness/message_text.hpp"
#include "harness/version.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

const CompareVerdict kBySeverity[] = {CompareVerdict::regression, CompareVerdict::inconclusive,
                                      CompareVerdict::improvement, CompareVerdict::pass};

std::string capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

// A line of text wrapped at 80 columns, continuation lines indented.
std::string wrapped(const std::string& text) {
  std::string lines;
  for (const std::string& line : wrap_words(text, 78, "")) lines += (lines.empty() ? "" : "  ") + line + "\n";
  return lines;
}

std::string percent(double fraction) { return format_fixed(100.0 * fraction, fraction < 0.001 ? 2 : 1) + "%"; }

// The time column: the estimate and interval, or why time was not judged.
std::string time_text(const CellComparison& cell) {
  const MetricComparison* time = cell.metric("time");
  if (!time) return "-";
  for (const std::string prefix : {"time: ", "time "}) {
    if (time->summary.rfind(prefix, 0) == 0) return time->summary.substr(prefix.size());
  }
  return time->summary;
}

// The verdict of one metric of a cell, or "-" when it was not compared.
std::string metric_verdict_text(const CellComparison& cell, const std::string& name) {
  const MetricComparison* metric = cell.metric(name);
  return metric ? to_string(metric->verdict) : "-";
}

// The peak-memory column: NEW's growth over BASE ("+1.00 KiB", "-256 B"), or "-".
std::string peak_memory_text(const CellComparison& cell) {
  const MetricComparison* memory = cell.metric("peak_memory");
  if (!memory) return "-";
  const double growth = memory->details["growth_bytes"].get<double>();
  return (growth >= 0 ? "+" : "-") + format_bytes(std::abs(growth));
}

// The status transition, and every other metric but time and peak memory
// (which have their own columns) whose verdict is not "pass".
std::string changes_text(const CellComparison& cell, const std::string& separator) {
  std::string text;
  for (const MetricComparison& metric : cell.metrics) {
    const bool own_column = metric.metric == "time" || metric.metric == "peak_memory";
    const bool shown = metric.metric == "status" || (!own_column && metric.verdict != CompareVerdict::pass);
    if (!shown) continue;
    text += (text.empty() ? "" : separator) + metric.summary;
  }
  return text;
}

// "3 regressions", "1 inconclusive", "2 passes".
std::string verdict_count(const CompareReport& report, CompareVerdict verdict) {
  const std::string name = to_string(verdict);
  const std::size_t count = report.count(verdict);
  if (verdict == CompareVerdict::inconclusive) return std::to_string(count) + " " + name;
  return count_of(count, name, verdict == CompareVerdict::pass ? "passes" : "");
}

// Records only in BASE that are not missing cells (they did not run in BASE either).
std::vector<const UnmatchedCell*> others_only_in_base(const CompareReport& report) {
  std::vector<const UnmatchedCell*> cells;
  for (const UnmatchedCell& cell : report.only_in_base) {
    if (cell.status != "ok") cells.push_back(&cell);
  }
  return cells;
}

// "; 18 missing from NEW, 2 more only in BASE, 0 only in NEW", or without
// missing cells "; 2 only in BASE, 0 only in NEW".
std::string unmatched_counts_text(const CompareReport& report) {
  const std::size_t others = others_only_in_base(report).size();
  const std::string only_in_new = std::to_string(report.only_in_new.size()) + " only in NEW";
  if (report.missing.empty()) return "; " + std::to_string(others) + " only in BASE, " + only_in_new;
  return "; " + std::to_string(report.missing.size()) + " missing from NEW, " + std::to_string(others) +
         " more only in BASE, " + only_in_new;
}

std::string counts_text(const CompareReport& report) {
  std::string text = count_of(report.cells.size(), "cell") + " compared: ";
  for (CompareVerdict verdict : kBySeverity) {
    text += verdict_count(report, verdict) + (verdict == CompareVerdict::pass ? "" : ", ");
  }
  return text + unmatched_counts_text(report);
}

// What makes the comparison incomplete, e.g. "NEW is an unfinished run and 18
// cells that ran in BASE are missing from NEW (16 absent, 2 skipped)"; "" when
// nothing does.
std::string incompleteness_text(const CompareReport& report) {
  std::vector<std::string> parts;
  const std::vector<std::string> sides = report.unfinished();
  if (!sides.empty()) {
    parts.push_back(sides.size() == 2 ? "BASE and NEW are unfinished runs" : sides[0] + " is an unfinished run");
  }
  if (!report.missing.empty()) {
    const auto absent = static_cast<std::size_t>(std::count_if(
        report.missing.begin(), report.missing.end(), [](const MissingCell& cell) { return cell.in_new == "absent"; }));
    parts.push_back(count_of(report.missing.size(), "cell") + " that ran in BASE " +
                    (report.missing.size() == 1 ? "is" : "are") + " missing from NEW (" + std::to_string(absent) +
                    " absent, " + std::to_string(report.missing.size() - absent) + " skipped)");
  }
  return parts.empty() ? "" : parts.size() == 1 ? parts[0] : parts[0] + " and " + parts[1];
}

std::string missing_line(const MissingCell& cell) {
  return cell.scenario + "/" + cell.case_key + " " + cell.implementation + " (" +
         (cell.in_new == "absent" ? std::string("absent") : "skipped: " + cell.reason) + ")";
}

// The path of each unfinished side, for advice: "NEW (new.json)".
std::string unfinished_files_text(const CompareReport& report) {
  std::string text;
  for (const std::string& side : report.unfinished()) {
    text += (text.empty() ? "" : " and ") + side + " (" + (side == "BASE" ? report.base.path : report.next.path) + ")";
  }
  return text;
}

// "-1.2% over 24 cells (NEW/BASE 0.988)", or "" when no time ratio was estimated.
std::string geometric_mean_text(const CompareReport& report) {
  const CompareReport::TimeSummary summary = report.time_summary();
  if (!summary.geometric_mean_ratio) return "";
  const double ratio = *summary.geometric_mean_ratio;
  return "time NEW/BASE geometric mean over " + count_of(summary.cells, "cell") + ": " +
         (ratio >= 1 ? "+" : "") + format_fixed(100.0 * (ratio - 1.0), 1) + "% (ratio " + format_fixed(ratio, 4) + ")";
}

std::string what_differs(const CompareReport& report) {
  const bool devices = !report.device_differences.empty() && !report.settings.allow_different_devices;
  const bool settings = !report.setting_differences.empty() && !report.settings.allow_different_settings;
  if (devices && settings) return "the devices and the run settings differ";
  return devices ? "the devices differ" : "the run settings differ";
}

std::string outcome_text(const CompareReport& report) {
  if (report.refused) return "not comparable: " + what_differs(report) + " (exit 3)";
  const std::string incomplete = incompleteness_text(report);
  const bool allowed = report.settings.allow_missing;
  const std::string also = incomplete.empty() ? "" : "; " + incomplete + (allowed ? " (allowed by --allow-missing)" : "");
  const std::string nothing = report.cells.empty()                ? "nothing compared: no cell is in both files"
                              : !report.measured_anything() ? "nothing compared: every common cell was skipped in both files"
                                                            : "";
  if (report.exit_code == 1) return "regression (exit 1)" + also;
  if (!incomplete.empty() && !allowed) {
    return "not comparable: " + incomplete + (nothing.empty() ? "" : "; " + nothing) + " (exit 3)";
  }
  if (!nothing.empty()) return nothing + " (exit 3)" + also;
  if (report.exit_code == 3) return "inconclusive (exit 3)" + also;
  return "pass (exit 0)" + also;
}

std::string settings_text(const CompareReport& report) {
  const CompareSettings& settings = report.settings;
  const Tolerances& defaults = settings.defaults;
  std::string text = "time threshold +" + percent(defaults.time_threshold) + " (Holm, family-wise alpha " +
                     format_fixed(settings.alpha, 3) + "), minimum effect +" + percent(defaults.min_effect) +
                     " across rounds, HBM bytes +/-" + percent(defaults.hbm_tolerance) +
                     ", peak memory slack " + format_bytes(static_cast<double>(defaults.memory_slack)) + ", accuracy " +
                     format_fixed(defaults.accuracy_factor, 1) + " x BASE + floor";
  if (!settings.overrides.empty()) {
    text += "; " + std::to_string(settings.overrides.size()) + " per-cell override(s) from " + settings.config_path;
  }
  return text;
}

std::string cell_name(const std::string& scenario, const std::string& case_key) { return scenario + "/" + case_key; }

// Unmatched cells with the side they are on ("BASE" or "NEW").
// Cells only in BASE that are missing cells are listed as those instead.
std::vector<std::pair<const char*, const UnmatchedCell*>> unmatched_cells(const CompareReport& report) {
  std::vector<std::pair<const char*, const UnmatchedCell*>> cells;
  for (const UnmatchedCell* cell : others_only_in_base(report)) cells.emplace_back("BASE", cell);
  for (const UnmatchedCell& cell : report.only_in_new) cells.emplace_back("NEW", &cell);
  return cells;
}

std::string unmatched_line(const char* side, const UnmatchedCell& cell) {
  return std::string("only in ") + side + ": " + cell_name(cell.scenario, cell.case_key) + " " + cell.implementation +
         " (" + cell.status + ")";
}

// Cells in the order the outputs list them: by severity, then as in BASE.
std::vector<const CellComparison*> by_severity(const CompareReport& report) {
  std::vector<const CellComparison*> cells;
  for (const CellComparison& cell : report.cells) cells.push_back(&cell);
  std::stable_sort(cells.begin(), cells.end(),
                   [](const CellComparison* a, const CellComparison* b) { return a->verdict > b->verdict; });
  return cells;
}

// ---- terminal ----

// The missing cells a terminal names; the Markdown names more, the JSON all.
constexpr std::size_t kMissingCellsInTerminal = 10;
constexpr std::size_t kMissingCellsInMarkdown = 100;

// Why the comparison is incomplete and what to do, with the first `shown`
// missing cells, for the terminal.
std::string completeness_text(const CompareReport& report, std::size_t shown) {
  std::string text;
  if (!report.unfinished().empty()) {
    text += wrapped(unfinished_files_text(report) +
                    (report.unfinished().size() == 2 ? " are unfinished runs" : " is an unfinished run") +
                    " (complete: false): interrupted, or still running; finish it with "
                    "`attnbench run ... --resume -o FILE`.");
  }
  if (!report.missing.empty()) {
    text += wrapped(capitalized(count_of(report.missing.size(), "cell")) + " that ran in BASE " +
                    (report.missing.size() == 1 ? "is" : "are") + " missing from NEW:");
    for (std::size_t i = 0; i < report.missing.size() && i < shown; ++i) {
      text += "  " + missing_line(report.missing[i]) + "\n";
    }
    if (report.missing.size() > shown) {
      text += "  and " + std::to_string(report.missing.size() - shown) + " more (--json FILE lists every one)\n";
    }
  }
  text += wrapped(report.settings.allow_missing
                      ? "Allowed by --allow-missing: only the cells in both files were judged."
                      : "Not a pass: compare finished runs of the same cases, or pass --allow-missing to judge only "
                        "the cells in both files.");
  return text;
}

std::string padded(const std::string& text, std::size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

// ---- Markdown ----

// Text in a table cell: Markdown punctuation and the cell separator escaped.
std::string markdown_text(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '\n' || c == '\r') c = ' ';
    if (std::string_view("\\`*_[]<>|#~").find(c) != std::string_view::npos) escaped += '\\';
    escaped += c;
  }
  return escaped;
}

// A name in a code span (a table cell still needs its '|' escaped).
std::string markdown_code(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '\n' || c == '\r') c = ' ';
    if (c == '|') escaped += '\\';
    escaped += c;
  }
  const std::string fence = text.find('`') == std::string::npos ? "`" : "`` ";
  return fence + escaped + (fence == "`" ? "`" : " ``");
}

// ---- JUnit XML ----

// The length of the UTF-8 sequence at text[i] and its code point; {1, -1} for
// a byte that does not start a well-formed sequence.
std::pair<std::size_t, long> utf8_at(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || i + length > text.size()) return {1, -1};
  long code = length == 1 ? lead : lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return {1, -1};
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  return {length, code};
}

// Whether XML 1.0 allows the character at all (escaped or not).
bool xml_character(long code) {
  return code == 0x9 || code == 0xa || code == 0xd || (code >= 0x20 && code <= 0xd7ff) ||
         (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff);
}

// Text for an attribute value (in_attribute) or element content; characters
// XML cannot carry become '?'.
std::string xml_escape(const std::string& text, bool in_attribute) {
  std::string escaped;
  for (std::size_t i = 0; i < text.size();) {
    const auto [length, code] = utf8_at(text, i);
    switch (code) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += in_attribute ? "&quot;" : "\""; break;
      case '\'': escaped += in_attribute ? "&apos;" : "'"; break;
      case '\n': escaped += in_attribute ? "&#10;" : "\n"; break;
      case '\r': escaped += "&#13;"; break;
      case '\t': escaped += in_attribute ? "&#9;" : "\t"; break;
      default:
        if (xml_character(code)) escaped.append(text, i, length);
        else escaped += '?';
    }
    i += length;
  }
  return escaped;
}

std::string xml_attribute(const std::string& text) { return xml_escape(text, true); }
std::string xml_text(const std::string& text) { return xml_escape(text, false); }

std::string joined_summaries(const CellComparison& cell, CompareVerdict verdict) {
  std::string text;
  for (const MetricComparison& metric : cell.metrics) {
    if (metric.verdict == verdict) text += (text.empty() ? "" : "; ") + metric.summary;
  }
  return text;
}

Json unmatched_json(const std::vector<UnmatchedCell>& cells) {
  Json list = Json::array();
  for (const UnmatchedCell& cell : cells) {
    list.push_back({{"scenario", cell.scenario}, {"case_key", cell.case_key}, {"implementation", cell.implementation},
                    {"status", cell.status}});
  }
  return list;
}

Json tolerances_json(const Tolerances& tolerances) {
  return {{"time_threshold", tolerances.time_threshold},
          {"min_effect", tolerances.min_effect},
          {"hbm_tolerance", tolerances.hbm_tolerance},
          {"memory_slack", tolerances.memory_slack},
          {"accuracy_factor", tolerances.accuracy_factor}};
}

Json input_json(const CompareInput& input) {
  return {{"path", escape_invalid_utf8(input.path)}, {"git_revision", input.git_revision}, {"started_at", input.started_at},
          {"records", input.records}, {"complete", input.complete},
          {"highest_load_average", input.highest_load ? Json(*input.highest_load) : Json(nullptr)},
          {"noisy_records", input.noisy_records}, {"machine_warnings", input.machine_warnings},
          {"plugins", input.plugins}};
}

// One plug-in implementation's build on one side: "version 1.0.0, SHA-256 0123456789ab…".
std::map<std::string, std::string> plugin_builds(const CompareInput& input) {
  std::map<std::string, std::string> builds;
  for (const Json& plugin : input.plugins) {
    const std::string sha256 = plugin["sha256"].get<std::string>();
    for (const Json& implementation : plugin["implementations"]) {
      builds[implementation["name"].get<std::string>()] =
          "version " + implementation["version"].get<std::string>() + ", SHA-256 " + sha256.substr(0, 12) + "…";
    }
  }
  return builds;
}

// One line per plug-in implementation of either file: which build each side
// measured, so that a comparison of two builds says so.
std::vector<std::string> plugin_lines(const CompareReport& report) {
  const std::map<std::string, std::string> base = plugin_builds(report.base), next = plugin_builds(report.next);
  std::set<std::string> names;
  for (const auto& [name, build] : base) names.insert(name);
  for (const auto& [name, build] : next) names.insert(name);
  std::vector<std::string> lines;
  for (const std::string& name : names) {
    const auto in_base = base.find(name), in_new = next.find(name);
    if (in_base == base.end() || in_new == next.end()) {
      const auto& only = in_base == base.end() ? *in_new : *in_base;
      lines.push_back("plug-in " + name + ": " + only.second + " (" + (in_base == base.end() ? "NEW" : "BASE") +
                      " only)");
    } else if (in_base->second == in_new->second) {
      lines.push_back("plug-in " + name + ": the same build in both (" + in_base->second + ")");
    } else {
      lines.push_back("plug-in " + name + ": two builds, " + in_base->second + " (BASE) and " + in_new->second +
                      " (NEW)");
    }
  }
  return lines;
}

Json missing_json(const std::vector<MissingCell>& cells) {
  Json list = Json::array();
  for (const MissingCell& cell : cells) {
    list.push_back({{"scenario", cell.scenario}, {"case_key", cell.case_key}, {"implementation", cell.implementation},
                    {"in_new", cell.in_new}, {"reason", cell.reason}});
  }
  return list;
}

}  // namespace

std::string render_compare_refusal(const CompareReport& report) {
  std::string text;
  const auto refused_for = [&](const auto& differences, bool allowed, const std::string& what,
                               const std::string& advice) {
    if (differences.empty()) return;
    if (allowed) {
      for (const auto& difference : differences) text += what + " differ (allowed): " + difference.format() + "\n";
      return;
    }
    text += "attnbench compare: not comparable: the " + what + " of " + report.base.path + " (BASE) and " +
            report.next.path + " (NEW) differ:\n";
    for (const auto& difference : differences) text += "  " + difference.format() + "\n";
    text += advice + "\n";
  };
  refused_for(report.device_differences, report.settings.allow_different_devices, "devices",
              "Compare runs from one machine, or pass --allow-different-devices to compare anyway (exit 3).");
  refused_for(report.setting_differences, report.settings.allow_different_settings, "run settings",
              "Compare runs made with the same --threads and measurement settings, or pass "
              "--allow-different-settings to compare anyway (exit 3).");
  return text;
}

std::string render_compare_terminal(const CompareReport& report) {
  std::ostringstream out;
  out << "attnbench compare: BASE " << report.base.path << " (git " << report.base.git_revision << "), NEW "
      << report.next.path << " (git " << report.next.git_revision << ")\n"
      << wrapped(settings_text(report));
  for (const std::string& line : plugin_lines(report)) out << wrapped(line);
  for (const auto& [side, input] : {std::pair{"BASE", &report.base}, std::pair{"NEW", &report.next}}) {
    if (const std::string machine = input->machine_text(); !machine.empty()) {
      out << wrapped(std::string("machine of ") + side + ": " + machine);
    }
  }
  for (const DeviceDifference& difference : report.device_differences) {
    out << "devices differ (allowed): " << difference.format() << "\n";
  }
  for (const SettingDifference& difference : report.setting_differences) {
    out << "run settings differ (allowed): " << difference.format() << "\n";
  }
  // One row of verdicts per cell, within 80 columns; under it, indented, the
  // cell (case keys run past 80 columns alone) and one line per other change.
  const std::vector<const CellComparison*> cells = by_severity(report);
  std::size_t time_width = 13, memory_width = 6;
  for (const CellComparison* cell : cells) {
    time_width = std::max(time_width, time_text(*cell).size());
    memory_width = std::max(memory_width, metric_verdict_text(*cell, "peak_memory").size());
  }
  if (!cells.empty()) {
    out << "\n" << padded("verdict", 13) << padded("time", 13) << padded("time NEW/BASE", time_width + 2)
        << padded("memory", memory_width + 2) << "peak memory\n"
        << "  cell (scenario/case key implementation), what else changed\n";
  }
  for (const CellComparison* cell : cells) {
    out << padded(to_string(cell->verdict), 13) << padded(metric_verdict_text(*cell, "time"), 13)
        << padded(time_text(*cell), time_width + 2) << padded(metric_verdict_text(*cell, "peak_memory"), memory_width + 2)
        << peak_memory_text(*cell) << "\n"
        << "  " << cell_name(cell->scenario, cell->case_key) << " " << cell->implementation << "\n";
    if (const std::string changes = changes_text(*cell, "\n  "); !changes.empty()) out << "  " << changes << "\n";
  }
  for (const auto& [side, cell] : unmatched_cells(report)) out << unmatched_line(side, *cell) << "\n";
  if (report.incomplete()) out << "\n" << completeness_text(report, kMissingCellsInTerminal);
  out << "\n" << wrapped(counts_text(report));
  if (const std::string geometric_mean = geometric_mean_text(report); !geometric_mean.empty()) {
    out << geometric_mean << "\n";
  }
  out << wrapped("result: " + outcome_text(report));
  return out.str();
}

std::string render_compare_markdown(const CompareReport& report) {
  std::ostringstream out;
  out << "## attnbench compare: " << outcome_text(report) << "\n\n"
      << "**" << verdict_count(report, CompareVerdict::regression) << "**, "
      << verdict_count(report, CompareVerdict::inconclusive) << ", "
      << verdict_count(report, CompareVerdict::improvement) << ", " << verdict_count(report, CompareVerdict::pass)
      << " (" << count_of(report.cells.size(), "cell") << " compared" << unmatched_counts_text(report) << ")\n\n"
      << "BASE " << markdown_code(report.base.path) << " (git " << markdown_code(report.base.git_revision) << "), NEW "
      << markdown_code(report.next.path) << " (git " << markdown_code(report.next.git_revision) << "). "
      << markdown_text(capitalized(settings_text(report))) << ".\n";
  if (const std::string geometric_mean = geometric_mean_text(report); !geometric_mean.empty()) {
    out << "\n" << markdown_text(capitalized(geometric_mean)) << ".\n";
  }
  for (const std::string& line : plugin_lines(report)) out << "\n" << markdown_text(capitalized(line)) << ".\n";
  for (const auto& [side, input] : {std::pair{"BASE", &report.base}, std::pair{"NEW", &report.next}}) {
    if (const std::string machine = input->machine_text(); !machine.empty()) {
      out << "\nMachine of " << side << ": " << markdown_text(machine) << ".\n";
    }
  }
  for (const DeviceDifference& difference : report.device_differences) {
    out << "\nDevices differ (allowed): " << markdown_text(difference.format()) << "\n";
  }
  for (const SettingDifference& difference : report.setting_differences) {
    out << "\nRun settings differ (allowed): " << markdown_text(difference.format()) << "\n";
  }
  if (report.incomplete()) {
    out << "\n### " << (report.settings.allow_missing ? "Incomplete (allowed by --allow-missing)" : "Not comparable: incomplete")
        << "\n\n" << markdown_text(capitalized(incompleteness_text(report))) << ".";
    if (!report.unfinished().empty()) {
      out << " Unfinished (complete: false): " << markdown_text(unfinished_files_text(report)) << ".";
    }
    out << "\n";
    if (!report.missing.empty()) {
      out << "\n| cell | implementation | in NEW |\n|---|---|---|\n";
      for (std::size_t i = 0; i < report.missing.size() && i < kMissingCellsInMarkdown; ++i) {
        const MissingCell& cell = report.missing[i];
        out << "| " << markdown_code(cell_name(cell.scenario, cell.case_key)) << " | "
            << markdown_code(cell.implementation) << " | "
            << markdown_text(cell.in_new == "absent" ? "absent" : "skipped: " + cell.reason) << " |\n";
      }
      if (report.missing.size() > kMissingCellsInMarkdown) {
        out << "\nAnd " << report.missing.size() - kMissingCellsInMarkdown
            << " more; the JSON output lists every one.\n";
      }
    }
  }
  const std::vector<const CellComparison*> cells = by_severity(report);
  const auto table = [&](const std::string& title, bool regressions) {
    std::vector<const CellComparison*> rows;
    for (const CellComparison* cell : cells) {
      if ((cell->verdict == CompareVerdict::regression) == regressions) rows.push_back(cell);
    }
    if (rows.empty()) return;
    out << "\n### " << title << "\n\n"
        << "| verdict | cell | implementation | time | time NEW/BASE | memory | peak memory | what else changed |\n"
        << "|---|---|---|---|---|---|---|---|\n";
    for (const CellComparison* cell : rows) {
      out << "| " << to_string(cell->verdict) << " | " << markdown_code(cell_name(cell->scenario, cell->case_key))
          << " | " << markdown_code(cell->implementation) << " | " << metric_verdict_text(*cell, "time") << " | "
          << markdown_text(time_text(*cell)) << " | " << metric_verdict_text(*cell, "peak_memory") << " | "
          << markdown_text(peak_memory_text(*cell)) << " | " << markdown_text(changes_text(*cell, "; ")) << " |\n";
    }
  };
  table("Regressions", true);
  table("Other cells", false);
  const auto unmatched = unmatched_cells(report);
  if (!unmatched.empty()) {
    out << "\n### Unmatched cells\n\n| only in | cell | implementation | status |\n|---|---|---|---|\n";
    for (const auto& [side, cell] : unmatched) {
      out << "| " << side << " | " << markdown_code(cell_name(cell->scenario, cell->case_key)) << " | "
          << markdown_code(cell->implementation) << " | " << cell->status << " |\n";
    }
  }
  return out.str();
}

std::string render_compare_junit(const CompareReport& report) {
  // An unfinished file and each missing cell are test cases too: errors, or
  // skipped when --allow-missing admits them.
  const bool allowed = report.settings.allow_missing;
  const std::size_t incomplete_cases = report.unfinished().size() + report.missing.size();
  const std::size_t failures = report.count(CompareVerdict::regression);
  const std::size_t errors = allowed ? 0 : incomplete_cases;
  const std::size_t skipped = report.count(CompareVerdict::inconclusive) + (allowed ? incomplete_cases : 0);
  const std::string counts = "tests=\"" + std::to_string(report.cells.size() + incomplete_cases) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" +
                             std::to_string(skipped) + "\"";
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"attnbench compare\" " << counts << ">\n"
      << "  <testsuite name=\"attnbench compare\" " << counts << ">\n"
      << "    <properties>\n"
      << "      <property name=\"base\" value=\"" << xml_attribute(report.base.path) << "\"/>\n"
      << "      <property name=\"new\" value=\"" << xml_attribute(report.next.path) << "\"/>\n"
      << "      <property name=\"settings\" value=\"" << xml_attribute(settings_text(report)) << "\"/>\n"
      << "    </properties>\n";
  for (const CellComparison& cell : report.cells) {
    out << "    <testcase classname=\"" << xml_attribute(cell.scenario + "." + cell.implementation) << "\" name=\""
        << xml_attribute(cell.case_key) << "\">\n";
    if (cell.verdict == CompareVerdict::regression) {
      out << "      <failure type=\"regression\" message=\""
          << xml_attribute(joined_summaries(cell, CompareVerdict::regression)) << "\"/>\n";
    } else if (cell.verdict == CompareVerdict::inconclusive) {
      out << "      <skipped message=\"" << xml_attribute(joined_summaries(cell, CompareVerdict::inconclusive))
          << "\"/>\n";
    }
    std::string all;
    for (const MetricComparison& metric : cell.metrics) all += metric.summary + "\n";
    out << "      <system-out>" << xml_text(all) << "</system-out>\n    </testcase>\n";
  }
  const auto incomplete_case = [&](const std::string& classname, const std::string& name, const std::string& type,
                                   const std::string& message) {
    out << "    <testcase classname=\"" << xml_attribute(classname) << "\" name=\"" << xml_attribute(name) << "\">\n";
    if (allowed) out << "      <skipped message=\"" << xml_attribute(message + " (allowed by --allow-missing)") << "\"/>\n";
    else out << "      <error type=\"" << type << "\" message=\"" << xml_attribute(message) << "\"/>\n";
    out << "    </testcase>\n";
  };
  for (const std::string& side : report.unfinished()) {
    const std::string& path = side == "BASE" ? report.base.path : report.next.path;
    incomplete_case("attnbench.inputs", side, "unfinished", path + " is an unfinished run (complete: false)");
  }
  for (const MissingCell& cell : report.missing) {
    incomplete_case(cell.scenario + "." + cell.implementation, cell.case_key, "missing",
                    cell.in_new == "absent" ? "absent from NEW; it ran in BASE"
                                            : "skipped in NEW (" + cell.reason + "); it ran in BASE");
  }
  std::string unmatched;
  for (const auto& [side, cell] : unmatched_cells(report)) unmatched += unmatched_line(side, *cell) + "\n";
  out << "    <system-out>" << xml_text(counts_text(report) + "\n" + unmatched + "result: " + outcome_text(report))
      << "</system-out>\n  </testsuite>\n</testsuites>\n";
  return out.str();
}

Json compare_report_json(const CompareReport& report) {
  const CompareSettings& settings = report.settings;
  Json overrides = Json::array();
  for (const ToleranceOverride& entry : settings.overrides) {
    Json item = {{"match", entry.match}};
    if (entry.time_threshold) item["time_threshold"] = *entry.time_threshold;
    if (entry.min_effect) item["min_effect"] = *entry.min_effect;
    if (entry.hbm_tolerance) item["hbm_tolerance"] = *entry.hbm_tolerance;
    if (entry.memory_slack) item["memory_slack"] = *entry.memory_slack;
    if (entry.accuracy_factor) item["accuracy_factor"] = *entry.accuracy_factor;
    overrides.push_back(std::move(item));
  }
  Json cells = Json::array();
  for (const CellComparison& cell : report.cells) {
    Json metrics = Json::object();
    for (const MetricComparison& metric : cell.metrics) {
      Json entry = metric.details;
      entry["summary"] = metric.summary;
      metrics[metric.metric] = std::move(entry);
    }
    cells.push_back({{"scenario", cell.scenario},
                     {"case_key", cell.case_key},
                     {"implementation", cell.implementation},
                     {"verdict", to_string(cell.verdict)},
                     {"tolerances", tolerances_json(cell.tolerances)},
                     {"metrics", std::move(metrics)}});
  }
  Json devices = Json::array();
  for (const DeviceDifference& difference : report.device_differences) {
    devices.push_back({{"kind", difference.kind}, {"field", difference.field}, {"base", difference.base},
                       {"new", difference.next}});
  }
  Json settings_differences = Json::array();
  for (const SettingDifference& difference : report.setting_differences) {
    settings_differences.push_back(
        {{"setting", difference.setting}, {"base", difference.base}, {"new", difference.next}});
  }
  Json summary = {{"cells", report.cells.size()}};
  for (CompareVerdict verdict : kBySeverity) summary[to_string(verdict)] = report.count(verdict);
  const CompareReport::TimeSummary time_summary = report.time_summary();
  summary["time_ratio_cells"] = time_summary.cells;
  summary["time_ratio_geometric_mean"] =
      time_summary.geometric_mean_ratio ? Json(*time_summary.geometric_mean_ratio) : Json(nullptr);
  summary["only_in_base"] = report.only_in_base.size();
  summary["only_in_new"] = report.only_in_new.size();
  summary["missing"] = report.missing.size();
  summary["unfinished"] = report.unfinished();
  summary["outcome"] = outcome_text(report);
  return {{"schema", kCompareSchemaId},
          {"tool", {{"name", "attnbench"}, {"version", tool_version()}, {"git_revision", git_revision()}}},
          {"inputs", {{"base", input_json(report.base)}, {"new", input_json(report.next)}}},
          {"settings", {{"defaults", tolerances_json(settings.defaults)},
                        {"alpha", settings.alpha},
                        {"allow_different_devices", settings.allow_different_devices},
                        {"allow_noisy", settings.allow_noisy},
                        {"allow_different_settings", settings.allow_different_settings},
                        {"allow_missing", settings.allow_missing},
                        {"minimum_time_samples", kMinimumTimeSamples},
                        {"exact_test_max_pairs", MannWhitneyNull::kExactPairsLimit},
                        {"config", settings.config_path.empty() ? Json(nullptr) : Json(escape_invalid_utf8(settings.config_path))},
                        {"overrides", overrides}}},
          {"devices", {{"comparable", report.device_differences.empty()}, {"differences", devices}}},
          {"run_settings", {{"comparable", report.setting_differences.empty()}, {"differences", settings_differences}}},
          {"cells", cells},
          {"unmatched", {{"only_in_base", unmatched_json(report.only_in_base)},
                         {"only_in_new", unmatched_json(report.only_in_new)}}},
          {"missing", missing_json(report.missing)},
          {"summary", summary},
          {"exit_code", report.exit_code}};
}

}  // namespace attnbench
