// Table construction for `attnbench report`: the merged view of several results
// files, the grouping rule of the sweep tables, and one builder per table kind.
// Only records with status ok contribute performance numbers; the others show a
// marker ("OOM", "skipped", "failed") whose reason the notes and JSON carry.
#include "harness/report/table_kinds.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <tuple>

#include "harness/errors.hpp"
#include "harness/message_text.hpp"
#include "harness/format.hpp"
#include "harness/results/document.hpp"
#include "harness/run/runner.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

// ---- The merged view ----------------------------------------------------------

MergedResults::MergedResults(std::vector<ResultsSource> sources) : sources_(std::move(sources)) {
  std::map<std::tuple<std::string, std::string, std::string>, RecordRef> seen;
  struct Clash {
    std::size_t cells = 0;
    Diagnostic first;
  };
  std::map<std::pair<std::string, std::string>, Clash> clashes;  // by (earlier file, later file)
  for (const ResultsSource& source : sources_) {
    const Json& records = source.document.at("records");
    for (std::size_t i = 0; i < records.size(); ++i) {
      const Json& record = records[i];
      const RecordRef ref{&record, &source.path, i};
      const std::string implementation = record["implementation"];
      const auto [earlier, inserted] =
          seen.emplace(std::make_tuple(record["scenario"], record["case_key"], implementation), ref);
      if (!inserted) {
        Clash& clash = clashes[{*earlier->second.file, source.path}];
        if (clash.cells++ == 0) {
          clash.first = Diagnostic{source.path, "records[" + std::to_string(i) + "]",
                                   "scenario \"" + record["scenario"].get<std::string>() + "\", case \"" +
                                       record["case_key"].get<std::string>() + "\", implementation " + implementation +
                                       " is also in " + *earlier->second.file + " (records[" +
                                       std::to_string(earlier->second.index) +
                                       "]); a report takes each cell from one file: leave one of them out"};
        }
        continue;
      }
      records_.push_back(ref);
      if (std::find(implementations_.begin(), implementations_.end(), implementation) == implementations_.end()) {
        implementations_.push_back(implementation);
      }
    }
  }
  if (clashes.empty()) return;
  std::vector<Diagnostic> diagnostics;
  for (auto& [files, clash] : clashes) {
    if (clash.cells > 1) clash.first.message += " (" + std::to_string(clash.cells) + " cells are in both files)";
    diagnostics.push_back(clash.first);
  }
  throw InputError(diagnostics);
}

MergedResults load_merged_results(const std::vector<std::string>& paths) {
  std::vector<ResultsSource> sources;
  std::vector<Diagnostic> diagnostics;
  for (const std::string& path : paths) {
    try {
      sources.push_back({path, load_results_file(path)});
    } catch (const InputError& error) {
      diagnostics.insert(diagnostics.end(), error.diagnostics().begin(), error.diagnostics().end());
    }
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return MergedResults(std::move(sources));
}

namespace {

// ---- Reading records --------------------------------------------------------------

// The value at `path`, or null when any step is missing or not an object.
const Json& at(const Json& json, std::initializer_list<const char*> path) {
  static const Json kNull;
  const Json* node = &json;
  for (const char* key : path) {
    if (!node->is_object()) return kNull;
    const auto found = node->find(key);
    if (found == node->end()) return kNull;
    node = &*found;
  }
  return *node;
}

bool is_ok(const Json& record) { return record["status"] == "ok"; }

// Our pre-flight's wording ("needs … ; … available") or a peer's "out of memory".
bool is_out_of_memory(const std::string& reason) {
  std::string lower = reason;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return (lower.rfind("needs ", 0) == 0 && lower.find(" available") != std::string::npos) ||
         lower.find("out of memory") != std::string::npos;
}

// What stands in a number's place for a record that is not ok.
Cell missing(const Json& record) {
  const std::string status = record["status"];
  const std::string reason = record["reason"];
  const std::string marker = status == "failed" ? "failed" : is_out_of_memory(reason) ? "OOM" : "skipped";
  return Cell::marker(marker, status, reason);
}

// A performance number of an ok record (scaled), its marker otherwise.
Cell measured(const Json& record, const Json& value, double scale = 1.0) {
  if (!is_ok(record)) return missing(record);
  return value.is_number() ? Cell::value(value.get<double>() * scale) : Cell::empty();
}

// Whether a record's time comes from the simulator (cudasim), not a GPU.
bool is_simulated(const Json& record) {
  const Json& simulated = at(record, {"timing", "simulated"});
  return simulated.is_boolean() && simulated.get<bool>();
}

constexpr const char* kSimulatedReason = "simulated on the CPU (cudasim): its time says nothing about a GPU's";

// A number derived from the record's time (runtime, FLOP/s): as `measured`,
// but "sim" for a simulated record, whose time is no performance figure.
Cell timed(const Json& record, const Json& value, double scale = 1.0) {
  if (is_ok(record) && is_simulated(record)) return Cell::marker("sim", "ok", kSimulatedReason);
  return measured(record, value, scale);
}

// Read plus write bytes of a traffic entry ({read_bytes, write_bytes}), if any.
std::optional<double> total_bytes(const Json& entry) {
  if (!entry.is_object() || !entry.contains("read_bytes") || !entry.contains("write_bytes")) return std::nullopt;
  return entry["read_bytes"].get<double>() + entry["write_bytes"].get<double>();
}

// The HBM bytes of a record and where they come from: measured (a profiler),
// counted (the CPU tiled implementations' model), or neither.
std::pair<std::optional<double>, std::string> hbm_bytes(const Json& record) {
  if (const auto bytes = total_bytes(at(record, {"traffic", "measured"}))) return {bytes, "measured"};
  if (const auto bytes = total_bytes(at(record, {"traffic", "counted"}))) return {bytes, "counted"};
  return {std::nullopt, "-"};
}

std::optional<double> median_seconds(const Json& record) {
  const Json& p50 = at(record, {"timing", "statistics", "p50"});
  if (!is_ok(record) || is_simulated(record) || !p50.is_number() || p50.get<double>() <= 0) return std::nullopt;
  return p50.get<double>();
}

std::optional<double> peak_bytes(const Json& record) {
  const Json& peak = at(record, {"memory", "peak_bytes"});
  if (!is_ok(record) || !peak.is_number() || peak.get<double>() <= 0) return std::nullopt;
  return peak.get<double>();
}

// numerator / denominator as a cell: the record's marker when it is not ok,
// empty when either number is missing.
Cell ratio_cell(const Json& record, std::optional<double> numerator, std::optional<double> denominator) {
  if (!is_ok(record)) return missing(record);
  return numerator && denominator ? Cell::value(*numerator / *denominator) : Cell::empty();
}

// Bytes in `unit`: the record's marker when it is not ok, empty when there are none.
Cell bytes_cell(const Json& record, std::optional<double> bytes, const ByteUnit& unit) {
  if (!is_ok(record)) return missing(record);
  return bytes ? Cell::value(*bytes / unit.bytes) : Cell::empty();
}

// The largest amount any ok record gives, for the unit of a column.
double largest_amount(const MergedResults& results, const std::function<std::optional<double>(const Json&)>& amount) {
  double largest = 0;
  for (const RecordRef& ref : results.records()) {
    if (!is_ok(*ref.record)) continue;
    if (const std::optional<double> value = amount(*ref.record)) largest = std::max(largest, *value);
  }
  return largest;
}

// Binary byte units (KiB, MiB, GiB) everywhere, as the terminal output; a
// table takes the largest unit in which its largest number is at least 1.
ByteUnit table_byte_unit(const MergedResults& results,
                         const std::vector<std::function<std::optional<double>(const Json&)>>& amounts) {
  double largest = 0;
  for (const auto& amount : amounts) largest = std::max(largest, largest_amount(results, amount));
  return byte_unit_for(largest);
}

std::string byte_unit_note(const ByteUnit& unit) {
  static const std::map<std::string, std::string> kPowers{
      {"B", "bytes"}, {"KiB", "2^10 bytes"}, {"MiB", "2^20 bytes"}, {"GiB", "2^30 bytes"}, {"TiB", "2^40 bytes"},
      {"PiB", "2^50 bytes"}};
  return std::string(unit.name) + " = " + kPowers.at(unit.name);
}

// FLOP/s in TFLOP/s, or in GFLOP/s (MFLOP/s) when the fastest record would
// show less than 1 TFLOP/s (GFLOP/s).
struct RateUnit {
  const char* name;
  double flops_per_second;
};
RateUnit table_rate_unit(const MergedResults& results) {
  const double largest = largest_amount(results, [](const Json& r) -> std::optional<double> {
    const Json& tflops = at(r, {"timing", "tflops"});
    return tflops.is_number() && !is_simulated(r) ? std::optional(tflops.get<double>() * 1e12) : std::nullopt;
  });
  if (largest >= 1e12) return {"TFLOP/s", 1e12};
  if (largest >= 1e9) return {"GFLOP/s", 1e9};
  return {"MFLOP/s", 1e6};
}

// ---- Grouping: split by every problem field that varies other than the lengths ----

std::string plain_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.is_null() ? "none" : value.dump();
}

struct GroupingField {
  const char* name;
  Json (*value)(const Json& record) = nullptr;  // default: the problem's field `name`
  std::string (*text)(const Json& value) = plain_text;
};

const std::vector<GroupingField>& grouping_fields() {
  static const std::vector<GroupingField> fields{
      {"scenario", [](const Json& r) -> Json { return r["scenario"]; }},
      {"heads"},
      {"kv_heads",  // "heads" when equal to heads, so a sweep over heads does not list it twice
       [](const Json& r) -> Json {
         const Json& p = r["problem"];
         return p["kv_heads"] == p["heads"] ? Json("heads") : p["kv_heads"];
       }},
      {"head_dim"},
      {"dtype"},
      {"layout"},
      {"direction"},
      {"causal"},
      {"window"},
      {"align"},
      {"padding",
       [](const Json& r) -> Json {
         const Json& padding = r["problem"]["padding"];
         Json value{{"kind", padding["kind"]}};
         if (padding["kind"] == "random") {
           value["shortfall"] = at(padding, {"shortfall"});
           value["seed"] = at(padding, {"seed"});
         } else if (padding["kind"] == "explicit") {
           value["lengths_q"] = padding["lengths_q"];
           value["lengths_k"] = padding["lengths_k"];
         }
         return value;
       },
       [](const Json& v) -> std::string {
         if (v["kind"] == "random") return "random" + v["shortfall"].dump() + " seed " + v["seed"].dump();
         if (v["kind"] == "explicit") return "explicit q" + v["lengths_q"].dump() + " k" + v["lengths_k"].dump();
         return "none";
       }},
      {"dropout", [](const Json& r) -> Json { return r["problem"]["dropout"]; },
       [](const Json& v) -> std::string {
         const bool keyed = v["seed"] != 0 || v["offset"] != 0;
         return v["p"].dump() + (keyed ? " seed " + v["seed"].dump() + " offset " + v["offset"].dump() : "");
       }},
      {"scale",
       [](const Json& r) -> Json {
         return r["problem"]["scale_is_default"].get<bool>() ? Json("default") : r["problem"]["scale"];
       }},
      {"input", nullptr,
       [](const Json& v) -> std::string {
         const bool normal = v["distribution"] == "normal";
         return v["distribution"].get<std::string>() + "(" + at(v, {normal ? "mean" : "low"}).dump() + "," +
                at(v, {normal ? "std" : "high"}).dump() + ") seed " + v["seed"].dump();
       }},
      {"block_q", nullptr, [](const Json& v) { return v.is_null() ? std::string("default") : v.dump(); }},
      {"block_k", nullptr, [](const Json& v) { return v.is_null() ? std::string("default") : v.dump(); }},
  };
  return fields;
}

Json field_value(const GroupingField& field, const Json& record) {
  return field.value ? field.value(record) : record["problem"][field.name];
}

struct RecordGroup {
  std::string title;
  Json fields = Json::object();  // the varying fields' values
  std::vector<RecordRef> records;
};

struct Grouping {
  std::vector<RecordGroup> groups;  // in order of first appearance
  Json common = Json::object();         // the fields every record shares
  Json common_labels = Json::object();  // the same, as text ("input": "normal(0,1) seed 0")
  std::string common_text;
};

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : separator) + part;
  return out;
}

Grouping group_by_varying_fields(const std::vector<RecordRef>& records) {
  const std::vector<GroupingField>& fields = grouping_fields();
  std::vector<std::vector<Json>> distinct(fields.size());
  for (const RecordRef& ref : records) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const Json value = field_value(fields[f], *ref.record);
      if (std::find(distinct[f].begin(), distinct[f].end(), value) == distinct[f].end()) distinct[f].push_back(value);
    }
  }
  Grouping grouping;
  std::vector<std::size_t> varying;
  std::vector<std::string> common_parts;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (distinct[f].size() > 1) {
      varying.push_back(f);
    } else if (!distinct[f].empty()) {
      grouping.common[fields[f].name] = distinct[f][0];
      grouping.common_labels[fields[f].name] = fields[f].text(distinct[f][0]);
      common_parts.push_back(std::string(fields[f].name) + "=" + fields[f].text(distinct[f][0]));
    }
  }
  grouping.common_text = join(common_parts, ", ");

  std::map<std::string, std::size_t> index;  // group key (its values, as JSON text) -> group
  for (const RecordRef& ref : records) {
    RecordGroup group;
    std::vector<std::string> parts;
    for (const std::size_t f : varying) {
      const Json value = field_value(fields[f], *ref.record);
      group.fields[fields[f].name] = value;
      parts.push_back(std::string(fields[f].name) + "=" + fields[f].text(value));
    }
    const auto [slot, inserted] = index.emplace(group.fields.dump(), grouping.groups.size());
    if (inserted) {
      group.title = varying.empty() ? grouping.common_text : join(parts, ", ");
      grouping.groups.push_back(std::move(group));
    }
    grouping.groups[slot->second].records.push_back(ref);
  }
  return grouping;
}

// One row of a sweep table: the records of one (Nq, Nk, B) in a group.
struct LengthRow {
  std::int64_t seqlen_q = 0;
  std::int64_t seqlen_k = 0;
  std::int64_t batch = 0;
  std::vector<RecordRef> records;  // at most one per implementation

  const Json* find(const std::string& implementation) const {
    for (const RecordRef& ref : records) {
      if ((*ref.record)["implementation"] == implementation) return ref.record;
    }
    return nullptr;
  }
};

std::string cell_location(const RecordRef& ref) { return *ref.file + " records[" + std::to_string(ref.index) + "]"; }

// Rows sorted by (Nk, Nq, B). Throws InputError when two records of one
// implementation land in one row: their problems differ only where the report
// does not look (two case keys for one problem, e.g. from another tool).
std::vector<LengthRow> rows_by_length(const RecordGroup& group) {
  std::vector<LengthRow> rows;
  for (const RecordRef& ref : group.records) {
    const Json& problem = (*ref.record)["problem"];
    const std::int64_t q = problem["seqlen_q"], k = problem["seqlen_k"], batch = problem["batch"];
    auto row = std::find_if(rows.begin(), rows.end(),
                            [&](const LengthRow& r) { return r.seqlen_q == q && r.seqlen_k == k && r.batch == batch; });
    if (row == rows.end()) row = rows.insert(rows.end(), LengthRow{q, k, batch, {}});
    const std::string implementation = (*ref.record)["implementation"];
    for (const RecordRef& other : row->records) {
      if ((*other.record)["implementation"] == implementation) {
        throw InputError({Diagnostic{
            *ref.file, "records[" + std::to_string(ref.index) + "]",
            "describes the same problem and implementation as " + cell_location(other) + " under another case_key"}});
      }
    }
    row->records.push_back(ref);
  }
  std::sort(rows.begin(), rows.end(), [](const LengthRow& a, const LengthRow& b) {
    return std::tie(a.seqlen_k, a.seqlen_q, a.batch) < std::tie(b.seqlen_k, b.seqlen_q, b.batch);
  });
  return rows;
}

// ---- Columns and notes shared by the tables ----

std::vector<Column> length_columns() {
  return {Column::integer("seqlen", "N", "seqlen_k"), Column::integer("batch", "B", "batch")};
}

// N is the key length; a row whose query length differs is labelled "Nq x Nk".
std::vector<Cell> length_cells(const LengthRow& row) {
  const std::string label =
      row.seqlen_q == row.seqlen_k ? "" : std::to_string(row.seqlen_q) + "x" + std::to_string(row.seqlen_k);
  return {Cell::value(static_cast<double>(row.seqlen_k), label), Cell::value(static_cast<double>(row.batch))};
}

Column implementation_column() { return Column::text("implementation", "implementation", "implementation"); }

Column per_implementation(const std::string& implementation, const std::string& quantity, const std::string& what,
                          const std::string& unit, int decimals) {
  Column column =
      Column::number(quantity + "/" + implementation, implementation + " " + what, unit, quantity, decimals);
  column.implementation = implementation;
  return column;
}

std::string resolve_baseline(const MergedResults& results, const ReportOptions& options) {
  const auto& names = results.implementations();
  const auto present = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!options.baseline.empty()) {
    if (!present(options.baseline)) {
      throw InputError("--baseline " + options.baseline +
                       ": no record of this implementation in the results (they have " + join(names, ", ") + ")");
    }
    return options.baseline;
  }
  for (const char* candidate : {"cuda.cublas", "cpu.standard"}) {
    if (present(candidate)) return candidate;
  }
  return "";
}

// Records in the order of the implementations' first appearance.
std::vector<RecordRef> by_implementation(const MergedResults& results, std::vector<RecordRef> records) {
  const auto& names = results.implementations();
  const auto rank = [&](const RecordRef& ref) {
    return std::find(names.begin(), names.end(), (*ref.record)["implementation"].get<std::string>()) - names.begin();
  };
  std::stable_sort(records.begin(), records.end(),
                   [&](const RecordRef& a, const RecordRef& b) { return rank(a) < rank(b); });
  return records;
}

// A table with its JSON metadata and the notes every table ends with: why
// records have no numbers, and where the results came from.
Table new_table(const std::string& kind, const std::string& title, const MergedResults& results,
                const std::string& baseline) {
  Table table;
  table.kind = kind;
  table.title = title;
  Json sources = Json::array();
  for (const ResultsSource& source : results.sources()) {
    Json devices = Json::array();
    for (const Json& device : source.document["devices"]) devices.push_back(device["name"]);
    sources.push_back(Json{{"path", escape_invalid_utf8(source.path)},
                           {"complete", source.document["complete"]},
                           {"tool", source.document["tool"]},
                           {"devices", devices}});
  }
  table.metadata = Json{{"baseline", baseline.empty() ? Json(nullptr) : Json(baseline)}, {"sources", sources}};
  return table;
}

void add_closing_notes(Table& table, const MergedResults& results) {
  bool simulated = false;
  for (const RecordRef& ref : results.records()) {
    const Json& record = *ref.record;
    simulated = simulated || (is_ok(record) && is_simulated(record));
    if (is_ok(record)) continue;
    const std::string note = missing(record).text + ": " + record["implementation"].get<std::string>() + ", " +
                             record["scenario"].get<std::string>() + " " + short_case_label(record["problem"]) + ": " +
                             record["reason"].get<std::string>();
    if (std::find(table.notes.begin(), table.notes.end(), note) == table.notes.end()) table.notes.push_back(note);
  }
  if (simulated) {
    table.notes.push_back("sim: " + std::string(kSimulatedReason) + "; no runtime, FLOP/s or speedup is shown for it.");
  }
  for (const ResultsSource& source : results.sources()) {
    std::vector<std::string> devices;
    for (const Json& device : source.document["devices"]) {
      devices.push_back(device["kind"].get<std::string>() + ": " + device["name"].get<std::string>());
    }
    const Json& tool = source.document["tool"];
    table.notes.push_back("Source: " + escape_invalid_utf8(source.path) + " (" + (devices.empty() ? "no device" : join(devices, "; ")) +
                          "; attnbench " + tool["version"].get<std::string>() + ", git " +
                          tool["git_revision"].get<std::string>() + ")" +
                          (source.document["complete"].get<bool>() ? "" : "; an unfinished run (complete: false)"));
  }
}

// A sweep table's groups, with the fields shared by every group in a note.
Grouping start_sweep_table(Table& table, const MergedResults& results) {
  Grouping grouping = group_by_varying_fields(results.records());
  table.metadata["common"] = grouping.common;
  table.metadata["common_labels"] = grouping.common_labels;
  if (grouping.groups.size() > 1) table.notes.push_back("Every group: " + grouping.common_text + ".");
  return grouping;
}

// ---- fig2: the FlashAttention paper's Figure 2 (left) ----

Table fig2_table(const MergedResults& results, const ReportOptions& options) {
  Table table = new_table("fig2", "Attention cost per implementation (FlashAttention, Figure 2 left)", results,
                          resolve_baseline(results, options));
  const ByteUnit unit = table_byte_unit(results, {[](const Json& r) { return hbm_bytes(r).first; }});
  table.columns = {implementation_column(), Column::number("gflops", "GFLOPs", "GFLOP", "flops", 1),
                   Column::number("hbm", std::string("HBM R/W ") + unit.name, unit.name, "hbm_bytes", 2),
                   Column::text("hbm_source", "HBM source", "hbm_source"),
                   Column::number("runtime", "runtime ms", "ms", "runtime", 3)};
  std::map<std::string, std::size_t> index;  // scenario + case key -> group
  std::vector<std::vector<RecordRef>> members;
  for (const RecordRef& ref : results.records()) {
    const Json& record = *ref.record;
    const std::string scenario = record["scenario"], key = record["case_key"];
    const auto [slot, inserted] = index.emplace(scenario + "\n" + key, table.groups.size());
    if (inserted) {
      table.groups.push_back(TableGroup{
          scenario + ": " + short_case_label(record["problem"]), Json{{"scenario", scenario}, {"case_key", key}}, {}});
      members.emplace_back();
    }
    members[slot->second].push_back(ref);
  }
  for (std::size_t g = 0; g < table.groups.size(); ++g) {
    for (const RecordRef& ref : by_implementation(results, members[g])) {
      const Json& record = *ref.record;
      const auto [bytes, source] = hbm_bytes(record);
      table.groups[g].rows.push_back({Cell::label(record["implementation"]),
                                      measured(record, at(record, {"flops", "total"}), 1e-9),
                                      bytes_cell(record, bytes, unit), Cell::label(is_ok(record) ? source : "-"),
                                      timed(record, at(record, {"timing", "statistics", "p50"}), 1e3)});
    }
  }
  table.notes = {
      "GFLOPs: the exact visible-pair count (docs/design.md, FLOPs), the same for every implementation: unlike the "
      "paper's figure, the fused algorithm's recomputation in the backward pass is not counted as work.",
      "HBM R/W: read plus written bytes (" + byte_unit_note(unit) + "); source measured = DRAM bytes from the "
      "profiler, counted = bytes a CPU tiled implementation moved between its full-size arrays and tile buffers (the "
      "paper's HBM-access model).",
      "Runtime: the median sample."};
  add_closing_notes(table, results);
  return table;
}

// ---- The wide sweep tables: rows (N, B), columns per implementation ----

// A column per implementation: what its title says after the name, its unit.
struct ColumnSpec {
  std::string key;   // "runtime"
  std::string what;  // "ms"
  std::string unit;
  int decimals;
};
// A number each record gives.
struct Quantity {
  ColumnSpec column;
  std::function<Cell(const Json& record)> cell;
};
// The baseline's amount over each other implementation's (speedup, reduction).
struct Ratio {
  ColumnSpec column;
  std::optional<double> (*amount)(const Json& record);
};

Column per_implementation(const std::string& implementation, const ColumnSpec& spec) {
  return per_implementation(implementation, spec.key, spec.what, spec.unit, spec.decimals);
}

// Columns for each quantity and implementation, then the ratio for each
// implementation other than the baseline.
void fill_wide_sweep_table(Table& table, const MergedResults& results, const std::string& baseline,
                           const std::vector<Quantity>& quantities, const Ratio& ratio) {
  const auto& names = results.implementations();
  const auto has_ratio = [&](const std::string& name) { return !baseline.empty() && name != baseline; };
  table.columns = length_columns();
  for (const Quantity& q : quantities) {
    for (const auto& name : names) table.columns.push_back(per_implementation(name, q.column));
  }
  for (const auto& name : names) {
    if (has_ratio(name)) table.columns.push_back(per_implementation(name, ratio.column));
  }
  const Grouping grouping = start_sweep_table(table, results);
  for (const RecordGroup& group : grouping.groups) {
    TableGroup out{group.title, group.fields, {}};
    for (const LengthRow& row : rows_by_length(group)) {
      std::vector<Cell> cells = length_cells(row);
      for (const Quantity& q : quantities) {
        for (const auto& name : names) {
          const Json* record = row.find(name);
          cells.push_back(record ? q.cell(*record) : Cell::empty());
        }
      }
      const Json* base = baseline.empty() ? nullptr : row.find(baseline);
      const std::optional<double> base_amount = base ? ratio.amount(*base) : std::nullopt;
      for (const auto& name : names) {
        if (!has_ratio(name)) continue;
        const Json* record = row.find(name);
        cells.push_back(record ? ratio_cell(*record, base_amount, ratio.amount(*record)) : Cell::empty());
      }
      out.rows.push_back(std::move(cells));
    }
    table.groups.push_back(std::move(out));
  }
}

// ---- seqlen: Appendix E tables and the FlashAttention-2 figures ----

Table seqlen_table(const MergedResults& results, const ReportOptions& options) {
  const std::string baseline = resolve_baseline(results, options);
  Table table = new_table("seqlen",
                          "Runtime and throughput by sequence length (FlashAttention Appendix E, "
                          "FlashAttention-2 Figures 4-7)",
                          results, baseline);
  const Quantity runtime{{"runtime", "ms", "ms", 3}, [](const Json& r) {
                           return timed(r, at(r, {"timing", "statistics", "p50"}), 1e3);
                         }};
  const RateUnit rate = table_rate_unit(results);
  const Quantity throughput{{"throughput", rate.name, rate.name, 2}, [rate](const Json& r) {
                              return timed(r, at(r, {"timing", "tflops"}), 1e12 / rate.flops_per_second);
                            }};
  fill_wide_sweep_table(table, results, baseline, {runtime, throughput},
                        Ratio{{"speedup", "speedup", "x", 2}, median_seconds});
  table.notes.push_back("Runtime: the median sample. " + std::string(rate.name) +
                        ": the exact visible-pair FLOP count (docs/design.md, FLOPs) over the median.");
  table.notes.push_back(baseline.empty()
                            ? "No speedups: the results have neither cuda.cublas nor cpu.standard; name a baseline "
                              "with --baseline."
                            : "Speedup: " + baseline + "'s median over the implementation's, in the same row.");
  add_closing_notes(table, results);
  return table;
}

// ---- memory: Table 21 ----

Table memory_table(const MergedResults& results, const ReportOptions& options) {
  const std::string baseline = resolve_baseline(results, options);
  Table table = new_table("memory", "Peak memory by sequence length (FlashAttention Table 21)", results, baseline);
  const ByteUnit unit = table_byte_unit(results, {peak_bytes});
  const Quantity peak{{"peak_memory", std::string("peak ") + unit.name, unit.name, 2}, [unit](const Json& r) {
                        return measured(r, at(r, {"memory", "peak_bytes"}), 1 / unit.bytes);
                      }};
  const Quantity extra{{"extra_memory", std::string("extra ") + unit.name, unit.name, 2}, [unit](const Json& r) {
                         return measured(r, at(r, {"memory", "extra_bytes"}), 1 / unit.bytes);
                       }};
  fill_wide_sweep_table(table, results, baseline, {peak, extra},
                        Ratio{{"memory_reduction", "reduction", "x", 2}, peak_bytes});
  table.notes.push_back(
      byte_unit_note(unit) + ". Peak: the high-water mark of the device memory the call used (inputs, outputs and "
      "workspace); extra: peak minus inputs and outputs.");
  table.notes.push_back(baseline.empty()
                            ? "No reduction factors: the results have neither cuda.cublas nor cpu.standard; name a "
                              "baseline with --baseline."
                            : "Reduction: " + baseline + "'s peak over the implementation's, in the same row.");
  add_closing_notes(table, results);
  return table;
}

// ---- io: measured and counted HBM bytes against the compulsory minimum ----

Table io_table(const MergedResults& results, const ReportOptions& options) {
  Table table =
      new_table("io", "HBM traffic against the compulsory bytes", results, resolve_baseline(results, options));
  table.columns = length_columns();
  table.columns.push_back(implementation_column());
  const auto traffic_of = [](const char* kind) {
    return [kind](const Json& r) { return total_bytes(at(r, {"traffic", kind})); };
  };
  const ByteUnit unit = table_byte_unit(
      results, {traffic_of("compulsory"), traffic_of("modelled"), traffic_of("counted"), traffic_of("measured")});
  for (const char* kind : {"compulsory", "modelled", "counted", "measured"}) {
    table.columns.push_back(Column::number(kind, std::string(kind) + " " + unit.name, unit.name,
                                           std::string(kind) + "_bytes", 3));
  }
  table.columns.push_back(Column::number("ratio", "traffic / compulsory", "x", "traffic_ratio", 2));
  table.columns.push_back(Column::number("model_ratio", "traffic / modelled", "x", "traffic_model_ratio", 2));
  table.columns.push_back(Column::text("source", "traffic source", "hbm_source"));
  const Grouping grouping = start_sweep_table(table, results);
  for (const RecordGroup& group : grouping.groups) {
    TableGroup out{group.title, group.fields, {}};
    for (const LengthRow& row : rows_by_length(group)) {
      for (const RecordRef& ref : by_implementation(results, row.records)) {
        const Json& record = *ref.record;
        const double compulsory = total_bytes(at(record, {"traffic", "compulsory"})).value_or(0);
        const auto [traffic, source] = hbm_bytes(record);
        std::vector<Cell> cells = length_cells(row);
        cells.push_back(Cell::label(record["implementation"]));
        const std::optional<double> modelled = total_bytes(at(record, {"traffic", "modelled"}));
        cells.push_back(bytes_cell(record, compulsory, unit));
        cells.push_back(bytes_cell(record, modelled, unit));
        cells.push_back(bytes_cell(record, total_bytes(at(record, {"traffic", "counted"})), unit));
        cells.push_back(bytes_cell(record, total_bytes(at(record, {"traffic", "measured"})), unit));
        cells.push_back(ratio_cell(record, traffic, compulsory > 0 ? std::optional(compulsory) : std::nullopt));
        cells.push_back(ratio_cell(record, traffic, modelled && *modelled > 0 ? modelled : std::nullopt));
        cells.push_back(Cell::label(is_ok(record) ? source : "-"));
        out.rows.push_back(std::move(cells));
      }
    }
    table.groups.push_back(std::move(out));
  }
  table.notes.insert(
      table.notes.end(),
      {byte_unit_note(unit) + ", read plus written. Compulsory: every input read once and every output written once "
       "(both passes for fwd+bwd); counted: bytes a CPU tiled implementation moved between its full-size arrays and "
       "tile buffers; measured: DRAM bytes from the profiler (- when none collected them); modelled: the "
       "implementation's analytic HBM traffic (standard or fused, docs/io-models.md).",
       "traffic / compulsory and traffic / modelled: measured bytes (counted where none were measured) over the "
       "compulsory and the modelled bytes."});
  add_closing_notes(table, results);
  return table;
}

// ---- accuracy: errors against the fp64 oracle ----

Table accuracy_table(const MergedResults& results, const ReportOptions& options) {
  Table table = new_table("accuracy", "Accuracy against the fp64 oracle", results, resolve_baseline(results, options));
  // Only the tensors some record checked, and rule limits only where the rule applied somewhere.
  std::vector<std::pair<std::string, bool>> tensors;  // (tensor, has a rule limit)
  for (const char* tensor : {"O", "LSE", "dQ", "dK", "dV"}) {
    bool checked = false, limited = false;
    for (const RecordRef& ref : results.records()) {
      const Json& error = at(*ref.record, {"accuracy", "tensors", tensor});
      checked = checked || error.is_object();
      limited = limited || at(error, {"rule_limit"}).is_number();
    }
    if (checked) tensors.emplace_back(tensor, limited);
  }
  table.columns = length_columns();
  table.columns.push_back(implementation_column());
  table.columns.push_back(Column::text("status", "status", "status"));
  const auto tensor_column = [](const std::string& tensor, const std::string& quantity, const std::string& what) {
    Column column = Column::number(quantity + "/" + tensor, tensor + " " + what, "", quantity, 2);
    column.tensor = tensor;
    column.scientific = true;
    return column;
  };
  for (const auto& [tensor, limited] : tensors) {
    table.columns.push_back(tensor_column(tensor, "max_abs_error", "max err"));
    if (limited) table.columns.push_back(tensor_column(tensor, "rule_limit", "rule limit"));
  }
  table.columns.push_back(Column::text("sample", "oracle sample", "oracle_sample"));
  const Grouping grouping = start_sweep_table(table, results);
  for (const RecordGroup& group : grouping.groups) {
    TableGroup out{group.title, group.fields, {}};
    for (const LengthRow& row : rows_by_length(group)) {
      for (const RecordRef& ref : by_implementation(results, row.records)) {
        const Json& record = *ref.record;
        const Json& accuracy = record["accuracy"];
        const Cell none = accuracy.is_null() && !is_ok(record) ? missing(record) : Cell::empty();
        std::vector<Cell> cells = length_cells(row);
        cells.push_back(Cell::label(record["implementation"]));
        cells.push_back(accuracy.is_null() ? none : Cell::label(accuracy["status"]));
        for (const auto& [tensor, limited] : tensors) {
          const Json& error = at(accuracy, {"tensors", tensor.c_str()});
          cells.push_back(error.is_object() ? Cell::value(error["max_abs_error"].get<double>()) : none);
          const Json& limit = at(error, {"rule_limit"});
          if (limited) cells.push_back(limit.is_number() ? Cell::value(limit.get<double>()) : none);
        }
        const Json& sample = at(accuracy, {"sample"});
        if (!sample.is_object()) {
          cells.push_back(none);
        } else if (at(sample, {"complete"}) == true) {
          cells.push_back(Cell::label("complete"));
        } else {
          cells.push_back(Cell::label("sampled: " + at(sample, {"query_heads"}).dump() + " heads, " +
                                      at(sample, {"query_rows"}).dump() + " rows" +
                                      (at(sample, {"key_side_checked"}) == false ? ", dK/dV not checked" : "")));
        }
        out.rows.push_back(std::move(cells));
      }
    }
    table.groups.push_back(std::move(out));
  }
  table.notes.insert(
      table.notes.end(),
      {"max err: the largest absolute error against the fp64 oracle on the sample; the per-dtype bound also applies "
       "(see the results file).",
       "rule limit: 2 x the materializing baseline's error + a floor, where the fused-versus-baseline rule applied "
       "(- elsewhere)."});
  add_closing_notes(table, results);
  return table;
}

}  // namespace

const std::vector<TableKind>& table_kinds() {
  static const std::vector<TableKind> kinds{
      {"fig2", "GFLOPs, HBM R/W bytes and runtime per implementation, per case (FlashAttention Figure 2 left)",
       fig2_table},
      {"seqlen", "runtime, FLOP/s and speedup over the baseline by sequence length (Appendix E, FA2 figures)",
       seqlen_table},
      {"memory", "peak and extra memory by sequence length with the reduction factor (Table 21)", memory_table},
      {"io", "compulsory, counted and measured HBM bytes per record", io_table},
      {"accuracy", "status, max abs error per tensor, rule limits and the oracle sample per record", accuracy_table},
  };
  return kinds;
}

Table build_table(const std::string& kind, const MergedResults& results, const ReportOptions& options) {
  for (const TableKind& table_kind : table_kinds()) {
    if (kind == table_kind.name) {
      resolve_baseline(results, options);  // an unknown --baseline is an error for every table
      return table_kind.build(results, options);
    }
  }
  std::vector<std::string> names;
  for (const TableKind& table_kind : table_kinds()) names.push_back(table_kind.name);
  throw InputError("unknown table \"" + kind + "\" (one of " + join(names, ", ") + ")");
}

}  // namespace attnbench
