// Table construction for `attnbench report`: the merged view of several results
// files, the grouping rule of the sweep tables, and one builder per table kind.
// Only records with status ok contribute performance numbers; the others show a
// marker ("OOM", "skipped", "failed") whose reason the notes and JSON carry.
#include "harness/report/table_kinds.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "harness/errors.hpp"
#include "harness/message_text.hpp"
#include "harness/format.hpp"
#include "harness/results/document.hpp"
#include "harness/implementation.hpp"
#include "harness/report/ceilings.hpp"
#include "harness/report/published.hpp"
#include "harness/run/summary.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

// ---- The merged view ----------------------------------------------------------

MergedResults::MergedResults(std::vector<ResultsSource> sources, OracleRecords oracle) : sources_(std::move(sources)) {
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
      if (oracle == OracleRecords::leave_out && is_oracle_record(record)) {
        ++oracle_left_out_;
        oracle_name_ = implementation;
        continue;
      }
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

const Json& MergedResults::document_of(const RecordRef& ref) const {
  for (const ResultsSource& source : sources_) {
    if (&source.path == ref.file) return source.document;
  }
  throw std::logic_error("a record of no source");
}

MergedResults load_merged_results(const std::vector<std::string>& paths, OracleRecords oracle,
                                  const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != paths.size()) {
    throw InputError("--label: " + std::to_string(labels.size()) + " labels for " + std::to_string(paths.size()) +
                     " results files; give one per file, in the files' order");
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty() || std::find(labels.begin(), labels.begin() + i, labels[i]) != labels.begin() + i) {
      throw InputError("--label " + quote(labels[i]) + ": labels must be non-empty and differ from each other");
    }
  }
  std::vector<ResultsSource> sources;
  std::vector<Diagnostic> diagnostics;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    try {
      sources.push_back({paths[i], load_results_file(paths[i])});
    } catch (const InputError& error) {
      diagnostics.insert(diagnostics.end(), error.diagnostics().begin(), error.diagnostics().end());
      continue;
    }
    if (labels.empty()) continue;
    for (Json& record : sources.back().document["records"]) {
      record["implementation"] = record["implementation"].get<std::string>() + "@" + labels[i];
    }
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return MergedResults(std::move(sources), oracle);
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

// Whether a record's memory is an arena plan, not a call's (run --memory-only).
bool is_planned(const Json& record) { return at(record, {"memory", "source"}) == "planned"; }

constexpr const char* kPlannedNote =
    "p: planned, the arena plan of a call that was not run (run --memory-only: its device is absent, or one call "
    "would take too long; the record's reason says which).";

// A memory field of the record in `unit`, marked planned where it is.
Cell memory_cell(const Json& record, const char* field, const ByteUnit& unit) {
  Cell cell = measured(record, at(record, {"memory", field}), 1 / unit.bytes);
  cell.planned = cell.kind == Cell::Kind::number && is_planned(record);
  return cell;
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
// table takes the largest unit in which its largest number is at least 1, or,
// when its numbers span more than a factor 1024 (a memory sweep from MiB to
// TiB), the unit of their geometric middle, so neither end reads as 1e-05.
// `more` holds amounts that are no record's (published values).
ByteUnit table_byte_unit(const MergedResults& results,
                         const std::vector<std::function<std::optional<double>(const Json&)>>& amounts,
                         const std::vector<double>& more = {}) {
  double largest = 0, smallest = 0;
  const auto add = [&](double value) {
    if (!(value > 0)) return;
    largest = std::max(largest, value);
    smallest = smallest > 0 ? std::min(smallest, value) : value;
  };
  for (const RecordRef& ref : results.records()) {
    if (!is_ok(*ref.record)) continue;
    for (const auto& amount : amounts) {
      if (const std::optional<double> value = amount(*ref.record)) add(*value);
    }
  }
  for (double value : more) add(value);
  return byte_unit_for(largest > 1024 * smallest ? std::sqrt(largest * smallest) : largest);
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
  Json title_labels = Json::object();   // those of them that are not the problem's defaults
  std::string common_text, title_text;
};

// Whether a field's label is what a scenario gets when it does not set it:
// such fields are left out of titles (a note lists them all).
bool is_default_label(const std::string& field, const std::string& label) {
  static const std::map<std::string, std::vector<std::string>> kDefaults{
      {"kv_heads", {"heads"}},       {"layout", {"bshd"}},       {"window", {"none"}},
      {"align", {"bottom_right"}},   {"padding", {"none"}},      {"dropout", {"0", "0.0"}},
      {"scale", {"default"}},        {"input", {"normal(0.0,1.0) seed 0", "normal(0,1) seed 0"}},
      {"block_q", {"default"}},      {"block_k", {"default"}}};
  const auto found = kDefaults.find(field);
  return found != kDefaults.end() &&
         std::find(found->second.begin(), found->second.end(), label) != found->second.end();
}

// What the rows of a sweep table are ordered by and the figures' x axis:
// the sequence length (rows (N, B)), the batch, or a grouping field, which
// then no longer splits groups ("block": block_q and block_k together).
struct XAxis {
  std::string name = "seqlen";
  std::set<std::string> not_grouping;  // fields that no longer split groups
  // The value of a record on this axis (null for seqlen and batch, which the rows hold anyway).
  Json value(const Json& record) const;
  std::string text(const Json& value) const;
};

const GroupingField* find_grouping_field(const std::string& name) {
  for (const GroupingField& field : grouping_fields()) {
    if (name == field.name) return &field;
  }
  return nullptr;
}

Json XAxis::value(const Json& record) const {
  if (name == "seqlen" || name == "batch") return nullptr;
  if (name == "block") {
    // An unset size is the implementation's default, which its configuration records.
    const auto effective = [&](const char* key) {
      const Json& block = record["problem"][key];
      if (!block.is_null()) return block;
      const Json& configuration = record["configuration"];
      if (configuration.is_object() && configuration.contains(key) && configuration[key].is_number_integer()) {
        return configuration[key];
      }
      return Json(TileHint::kDefaultBlock);
    };
    return Json::array({effective("block_q"), effective("block_k")});
  }
  return field_value(*find_grouping_field(name), record);
}

std::string XAxis::text(const Json& value) const {
  if (name == "block") return value[0] == value[1] ? value[0].dump() : value[0].dump() + "x" + value[1].dump();
  return value.is_null() ? "" : find_grouping_field(name)->text(value);
}

XAxis x_axis(const ReportOptions& options) {
  XAxis axis;
  axis.name = options.x_axis;
  const std::vector<std::string> names = x_axis_names();
  if (std::find(names.begin(), names.end(), axis.name) == names.end()) {
    throw InputError("--x " + quote(axis.name) + ": not an axis; one of " + join(names, ", "));
  }
  if (axis.name == "block") axis.not_grouping = {"block_q", "block_k"};
  else if (axis.name != "seqlen" && axis.name != "batch") axis.not_grouping = {axis.name};
  return axis;
}

Grouping group_by_varying_fields(const std::vector<RecordRef>& records, const XAxis& x) {
  std::vector<const GroupingField*> fields;
  for (const GroupingField& field : grouping_fields()) {
    if (!x.not_grouping.count(field.name)) fields.push_back(&field);
  }
  std::vector<std::vector<Json>> distinct(fields.size());
  for (const RecordRef& ref : records) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const Json value = field_value(*fields[f], *ref.record);
      if (std::find(distinct[f].begin(), distinct[f].end(), value) == distinct[f].end()) distinct[f].push_back(value);
    }
  }
  Grouping grouping;
  std::vector<std::size_t> varying;
  std::vector<std::string> common_parts, title_parts;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (distinct[f].size() > 1) {
      varying.push_back(f);
    } else if (!distinct[f].empty()) {
      const std::string label = fields[f]->text(distinct[f][0]);
      grouping.common[fields[f]->name] = distinct[f][0];
      grouping.common_labels[fields[f]->name] = label;
      common_parts.push_back(std::string(fields[f]->name) + "=" + label);
      if (!is_default_label(fields[f]->name, label)) {
        grouping.title_labels[fields[f]->name] = label;
        title_parts.push_back(std::string(fields[f]->name) + "=" + label);
      }
    }
  }
  // The alignment of a mask that no case has says nothing.
  const bool unmasked = grouping.common.value("causal", Json()) == false && grouping.common.contains("window") &&
                        grouping.common["window"].is_null();
  if (unmasked && grouping.title_labels.contains("align")) {
    const std::string part = "align=" + grouping.title_labels["align"].get<std::string>();
    grouping.title_labels.erase("align");
    title_parts.erase(std::find(title_parts.begin(), title_parts.end(), part));
  }
  grouping.common_text = join(common_parts, ", ");
  grouping.title_text = join(title_parts, ", ");

  std::map<std::string, std::size_t> index;  // group key (its values, as JSON text) -> group
  for (const RecordRef& ref : records) {
    RecordGroup group;
    std::vector<std::string> parts;
    for (const std::size_t f : varying) {
      const Json value = field_value(*fields[f], *ref.record);
      group.fields[fields[f]->name] = value;
      parts.push_back(std::string(fields[f]->name) + "=" + fields[f]->text(value));
    }
    const auto [slot, inserted] = index.emplace(group.fields.dump(), grouping.groups.size());
    if (inserted) {
      group.title = varying.empty() ? grouping.title_text : join(parts, ", ");
      grouping.groups.push_back(std::move(group));
    }
    grouping.groups[slot->second].records.push_back(ref);
  }
  return grouping;
}

// One row of a sweep table: the records of one (x, Nq, Nk, B) in a group.
struct LengthRow {
  Json x;  // the value on the x axis (null for seqlen and batch)
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

// An order of x values: numbers (the first of a block pair) by size, anything
// else by its text.
bool x_before(const Json& a, const Json& b) {
  const Json& first_a = a.is_array() ? a[0] : a;
  const Json& first_b = b.is_array() ? b[0] : b;
  if (first_a.is_number() && first_b.is_number()) {
    if (first_a != first_b) return first_a.get<double>() < first_b.get<double>();
    return a.dump() < b.dump();
  }
  return a.dump() < b.dump();
}

// Rows sorted by (x, Nk, Nq, B) (by B first when B is the x axis). Throws
// InputError when two records of one implementation land in one row: their
// problems differ only where the report does not look (two case keys for one
// problem, e.g. from another tool).
std::vector<LengthRow> rows_by_length(const RecordGroup& group, const XAxis& x) {
  std::vector<LengthRow> rows;
  for (const RecordRef& ref : group.records) {
    const Json& problem = (*ref.record)["problem"];
    const std::int64_t q = problem["seqlen_q"], k = problem["seqlen_k"], batch = problem["batch"];
    const Json value = x.value(*ref.record);
    auto row = std::find_if(rows.begin(), rows.end(), [&](const LengthRow& r) {
      return r.x == value && r.seqlen_q == q && r.seqlen_k == k && r.batch == batch;
    });
    if (row == rows.end()) row = rows.insert(rows.end(), LengthRow{value, q, k, batch, {}});
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
  const bool by_batch = x.name == "batch";
  std::sort(rows.begin(), rows.end(), [&](const LengthRow& a, const LengthRow& b) {
    if (a.x != b.x) return x_before(a.x, b.x);
    if (by_batch && a.batch != b.batch) return a.batch < b.batch;
    return std::tie(a.seqlen_k, a.seqlen_q, a.batch) < std::tie(b.seqlen_k, b.seqlen_q, b.batch);
  });
  return rows;
}

// ---- Columns and notes shared by the tables ----

// N and B, after the x axis's own column when it is another field (B first
// when it is the batch).
std::vector<Column> length_columns(const XAxis& x) {
  const Column n = Column::integer("seqlen", "N", "seqlen_k"), b = Column::integer("batch", "B", "batch");
  if (x.name == "seqlen") return {n, b};
  if (x.name == "batch") return {b, n};
  return {Column::number("x", x.name, "", "x", 0), n, b};
}

// N is the key length; a row whose query length differs is labelled "Nq x Nk".
// The x column holds the field's value, labelled with its text where that is
// not the number itself.
std::vector<Cell> length_cells(const LengthRow& row, const XAxis& x) {
  const std::string label =
      row.seqlen_q == row.seqlen_k ? "" : std::to_string(row.seqlen_q) + "x" + std::to_string(row.seqlen_k);
  const Cell n = Cell::value(static_cast<double>(row.seqlen_k), label);
  const Cell b = Cell::value(static_cast<double>(row.batch));
  if (x.name == "seqlen") return {n, b};
  if (x.name == "batch") return {b, n};
  const Json& first = row.x.is_array() ? row.x[0] : row.x;
  const std::string text = x.text(row.x);
  const Cell value = first.is_number() ? Cell::value(first.get<double>(), text == first.dump() ? "" : text)
                                       : Cell::label(text);
  return {value, n, b};
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

// What the records ran on, for titles: "CPU AMD EPYC, 2 threads", a GPU's
// name, the simulator's model; "cuda (planned, not run)" for a device kind
// whose records only planned their memory (run --memory-only without it).
Json ran_on(const MergedResults& results) {
  Json described = Json::array();
  const auto add = [&](const std::string& text) {
    if (std::find(described.begin(), described.end(), Json(text)) == described.end()) described.push_back(text);
  };
  std::set<std::string> kinds_with_device;
  for (const RecordRef& ref : results.records()) {
    const Json& document = results.document_of(ref);
    const Json& kind = (*ref.record)["device"];
    const Json* device = nullptr;
    for (const Json& entry : document["devices"]) {
      if (entry["kind"] == kind) device = &entry;
    }
    if (device == nullptr) continue;
    kinds_with_device.insert(kind.get<std::string>());
    const std::string name = (*device)["name"];
    const bool threads = kind == "cpu" && document.contains("threads") && document["threads"].is_number_integer();
    add(kind != "cpu" ? name
                      : "CPU " + name + (threads ? ", " + count_of(document["threads"].get<std::size_t>(), "thread") : ""));
  }
  for (const RecordRef& ref : results.records()) {
    const std::string kind = (*ref.record)["device"];
    if (!kinds_with_device.count(kind)) add(kind + " (planned, not run)");
  }
  return described;
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
  table.metadata = Json{{"baseline", baseline.empty() ? Json(nullptr) : Json(baseline)},
                         {"sources", sources},
                         {"ran_on", ran_on(results)}};
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
  if (results.oracle_records_left_out() > 0) {
    table.notes.push_back(results.oracle_name() + " (the fp64 oracle the others are checked against) is left out: " +
                          count_of(results.oracle_records_left_out(), "record") + "; --with-oracle shows it.");
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

// A sweep table's groups, with the fields shared by every group in a note
// (titles name only those that are not the problem's defaults).
Grouping start_sweep_table(Table& table, const MergedResults& results, const XAxis& x) {
  Grouping grouping = group_by_varying_fields(results.records(), x);
  table.metadata["x_axis"] = x.name;
  table.metadata["common"] = grouping.common;
  table.metadata["common_labels"] = grouping.common_labels;
  table.metadata["title_labels"] = grouping.title_labels;
  if (!grouping.common_text.empty()) {
    table.notes.push_back((grouping.groups.size() > 1 ? "Every group: " : "Every row: ") + grouping.common_text + ".");
  }
  return grouping;
}

// ---- Published values beside ours ----

std::optional<double> flops_per_second(const Json& record) {
  const std::optional<double> seconds = median_seconds(record);
  if (!seconds) return std::nullopt;
  return at(record, {"flops", "total"}).get<double>() / *seconds;
}

Json reference_json(const PublishedSeries& series) {
  return Json{{"label", series.label},
              {"device", series.device},
              {"source", series.source},
              {"counterpart", series.counterpart.empty() ? Json(nullptr) : Json(series.counterpart)}};
}

std::string published_name(const PublishedSeries& series) {
  return series.label + (series.device.empty() ? "" : " (" + series.device + ")");
}

// The published series of the results' scenarios.
std::vector<PublishedSeries> published_of(const MergedResults& results) {
  std::vector<const Json*> documents;
  for (const ResultsSource& source : results.sources()) documents.push_back(&source.document);
  return published_series(documents);
}

// Every published amount of `quantity`, in its base unit.
std::vector<double> published_amounts(const std::vector<PublishedSeries>& published, const std::string& quantity) {
  std::vector<double> amounts;
  for (const PublishedSeries& series : published) {
    if (series.quantity != quantity) continue;
    for (const Json& entry : series.values) {
      if (entry["value"].is_number()) amounts.push_back(entry["value"].get<double>() * unit_factor(series.unit));
    }
  }
  return amounts;
}

// A published value as a cell in base units per `base_per_unit`: the number,
// or the publication's OOM.
Cell published_cell(const std::optional<PublishedValue>& published, double base_per_unit) {
  if (!published) return Cell::empty();
  if (!published->amount) return Cell::marker("OOM", "published", "out of memory in the publication");
  return Cell::value(*published->amount / base_per_unit);
}

// The series' value for a row: looked up with any record of the row (they
// share the problem).
std::optional<PublishedValue> published_for_row(const PublishedSeries& series, const LengthRow& row) {
  for (const RecordRef& ref : row.records) {
    if (auto value = published_value(series, *ref.record)) return value;
  }
  return std::nullopt;
}
// "sequence length", "batch", "block_q", "block size".
std::string axis_words(const ReportOptions& options) {
  if (options.x_axis == "seqlen") return "sequence length";
  if (options.x_axis == "block") return "block size";
  return options.x_axis;
}

// The rows of a table with one row per record: in each group, by row of the x
// axis, by implementation; the length cells, then what `cells_of` gives.
void fill_record_rows(Table& table, const MergedResults& results, const XAxis& x,
                      const std::function<std::vector<Cell>(const Json& record, const RecordRef& ref)>& cells_of) {
  const Grouping grouping = start_sweep_table(table, results, x);
  for (const RecordGroup& group : grouping.groups) {
    TableGroup out{group.title, group.fields, {}};
    for (const LengthRow& row : rows_by_length(group, x)) {
      for (const RecordRef& ref : by_implementation(results, row.records)) {
        std::vector<Cell> cells = length_cells(row, x);
        std::vector<Cell> more = cells_of(*ref.record, ref);
        cells.insert(cells.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        out.rows.push_back(std::move(cells));
      }
    }
    table.groups.push_back(std::move(out));
  }
}

// ---- fig2: the FlashAttention paper's Figure 2 (left) ----

Table fig2_table(const MergedResults& results, const ReportOptions& options) {
  Table table = new_table("fig2", "Attention cost per implementation (FlashAttention, Figure 2 left)", results,
                          resolve_baseline(results, options));
  const std::vector<PublishedSeries> published = published_of(results);
  const ByteUnit unit =
      table_byte_unit(results, {[](const Json& r) { return hbm_bytes(r).first; }}, published_amounts(published, "hbm_bytes"));
  table.columns = {implementation_column(), Column::number("gflops", "GFLOPs", "GFLOP", "flops", 1),
                   Column::number("hbm", std::string("HBM R/W ") + unit.name, unit.name, "hbm_bytes", 2),
                   Column::text("hbm_source", "HBM source", "hbm_source"),
                   Column::number("runtime", "runtime ms", "ms", "runtime", 3)};
  // Published rows beside ours, and ours over the published runtime of the
  // series our implementation is the counterpart of.
  const bool versus = std::any_of(published.begin(), published.end(), [](const PublishedSeries& series) {
    return series.quantity == "runtime" && !series.counterpart.empty();
  });
  if (versus) {
    table.columns.push_back(Column::number("published_ratio", "runtime / published", "x", "published_ratio", 2));
  }
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
      std::vector<Cell> row{Cell::label(record["implementation"]), measured(record, at(record, {"flops", "total"}), 1e-9),
                            bytes_cell(record, bytes, unit), Cell::label(is_ok(record) ? source : "-"),
                            timed(record, at(record, {"timing", "statistics", "p50"}), 1e3)};
      if (versus) {
        Cell ratio = Cell::empty();
        for (const PublishedSeries& series : published) {
          if (series.quantity != "runtime" || series.counterpart != record["implementation"]) continue;
          const std::optional<PublishedValue> value = published_value(series, record);
          if (value && value->amount) ratio = ratio_cell(record, median_seconds(record), *value->amount);
        }
        row.push_back(ratio);
      }
      table.groups[g].rows.push_back(std::move(row));
    }
    // One row per published label with a value for this case.
    std::vector<std::string> labels;
    for (const PublishedSeries& series : published) {
      if (std::find(labels.begin(), labels.end(), series.label) == labels.end()) labels.push_back(series.label);
    }
    const Json& record = *members[g].front().record;
    for (const std::string& label : labels) {
      std::map<std::string, Cell> cells;  // quantity -> cell
      std::string name;
      for (const PublishedSeries& series : published) {
        if (series.label != label) continue;
        const std::optional<PublishedValue> value = published_value(series, record);
        if (!value) continue;
        name = published_name(series);
        const double per_unit = series.quantity == "runtime" ? 1e-3 : series.quantity == "hbm_bytes" ? unit.bytes : 1e9;
        cells[series.quantity] = published_cell(value, per_unit);
      }
      if (cells.empty()) continue;
      std::vector<Cell> row{Cell::label(name + ", published"), cells["flops"], cells["hbm_bytes"],
                            Cell::label(cells.count("hbm_bytes") ? "published" : "-"), cells["runtime"]};
      if (versus) row.push_back(Cell::empty());
      table.groups[g].rows.push_back(std::move(row));
    }
  }
  for (const PublishedSeries& series : published) {
    const std::string note = published_name(series) + ", published: " + series.source + ".";
    if (std::find(table.notes.begin(), table.notes.end(), note) == table.notes.end()) table.notes.push_back(note);
  }
  if (versus) table.notes.push_back("runtime / published: our median over the published runtime of the row it is the counterpart of.");
  table.notes.insert(table.notes.begin(), {
      "GFLOPs: the exact visible-pair count (docs/design.md, FLOPs), the same for every implementation: unlike the "
      "paper's figure, the fused algorithm's recomputation in the backward pass is not counted as work.",
      "HBM R/W: read plus written bytes (" + byte_unit_note(unit) + "); source measured = DRAM bytes from the "
      "profiler, counted = bytes a CPU tiled implementation moved between its full-size arrays and tile buffers (the "
      "paper's HBM-access model).",
      "Runtime: the median sample."});
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
// A number each record gives, and how published values of it compare: the
// quantity's name in scenario files and the base units (seconds, FLOP/s,
// bytes) per unit of the column.
struct Quantity {
  ColumnSpec column;
  std::function<Cell(const Json& record)> cell;
  std::string published_as;      // "runtime", "throughput", "peak_memory"
  double base_per_unit = 1;      // 1e-3 for ms, 1e12 for TFLOP/s, 2^20 for MiB
  std::optional<double> (*amount)(const Json& record) = nullptr;  // in base units, for the ratio
};

// The baseline's amount over each other implementation's (speedup, reduction).
struct Ratio {
  ColumnSpec column;
  std::optional<double> (*amount)(const Json& record);
};

Column per_implementation(const std::string& implementation, const ColumnSpec& spec) {
  return per_implementation(implementation, spec.key, spec.what, spec.unit, spec.decimals);
}

// A published series shown in a wide table: the quantity it belongs to.
struct PublishedColumn {
  PublishedSeries series;
  const Quantity* quantity;
  bool with_ratio;  // its counterpart is among the implementations
};

// Columns for each quantity and implementation, then the ratio for each
// implementation other than the baseline, then each published series of one
// of the quantities with the ratio of its counterpart (ours over published).
void fill_wide_sweep_table(Table& table, const MergedResults& results, const std::string& baseline, const XAxis& x,
                           const std::vector<Quantity>& quantities, const Ratio& ratio) {
  const auto& names = results.implementations();
  const auto has_ratio = [&](const std::string& name) { return !baseline.empty() && name != baseline; };
  table.columns = length_columns(x);
  for (const Quantity& q : quantities) {
    for (const auto& name : names) table.columns.push_back(per_implementation(name, q.column));
  }
  for (const auto& name : names) {
    if (has_ratio(name)) table.columns.push_back(per_implementation(name, ratio.column));
  }
  std::vector<PublishedColumn> published;
  for (const PublishedSeries& series : published_of(results)) {
    for (const Quantity& q : quantities) {
      if (q.published_as != series.quantity) continue;
      const bool with_ratio =
          std::find(names.begin(), names.end(), series.counterpart) != names.end() && q.amount != nullptr;
      published.push_back({series, &q, with_ratio});
      Column value = Column::number("published_" + q.column.key + "/" + series.label + "/" + series.scenario,
                                    published_name(series) + " " + q.column.what, q.column.unit,
                                    "published_" + q.column.key, q.column.decimals);
      value.reference = reference_json(series);
      table.columns.push_back(value);
      if (with_ratio) {
        Column versus = Column::number("published_ratio/" + series.label + "/" + series.scenario,
                                       series.counterpart + " / " + series.label, "x", "published_ratio", 2);
        versus.implementation = series.counterpart;
        versus.reference = reference_json(series);
        table.columns.push_back(versus);
      }
      table.notes.push_back(published_name(series) + ": published " + q.column.key + " from " + series.source +
                            (with_ratio ? "; " + series.counterpart + " / " + series.label + " is ours over it" : "") +
                            ".");
      if (std::any_of(series.values.begin(), series.values.end(),
                      [](const Json& entry) { return entry["value"].is_string(); })) {
        table.notes.push_back("OOM: " + published_name(series) + " ran out of memory in the publication.");
      }
    }
  }
  const Grouping grouping = start_sweep_table(table, results, x);
  for (const RecordGroup& group : grouping.groups) {
    TableGroup out{group.title, group.fields, {}};
    for (const LengthRow& row : rows_by_length(group, x)) {
      std::vector<Cell> cells = length_cells(row, x);
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
        Cell cell = record ? ratio_cell(*record, base_amount, ratio.amount(*record)) : Cell::empty();
        cell.planned = cell.kind == Cell::Kind::number && (is_planned(*record) || (base && is_planned(*base)));
        cells.push_back(cell);
      }
      for (const PublishedColumn& column : published) {
        const std::optional<PublishedValue> value = published_for_row(column.series, row);
        cells.push_back(published_cell(value, column.quantity->base_per_unit));
        if (!column.with_ratio) continue;
        const Json* ours = row.find(column.series.counterpart);
        const bool both = ours && value && value->amount && *value->amount > 0;
        const std::optional<double> amount = both ? column.quantity->amount(*ours) : std::nullopt;
        Cell versus = !ours ? Cell::empty() : !both ? (is_ok(*ours) ? Cell::empty() : missing(*ours))
                                                    : ratio_cell(*ours, amount, *value->amount);
        versus.planned = versus.kind == Cell::Kind::number && is_planned(*ours);
        cells.push_back(versus);
      }
      out.rows.push_back(std::move(cells));
    }
    table.groups.push_back(std::move(out));
  }
}

// ---- seqlen: Appendix E tables and the FlashAttention-2 figures ----

Table seqlen_table(const MergedResults& results, const ReportOptions& options) {
  const std::string baseline = resolve_baseline(results, options);
  Table table = new_table("seqlen", "Runtime and throughput by " + axis_words(options), results, baseline);
  const Quantity runtime{{"runtime", "ms", "ms", 3},
                         [](const Json& r) { return timed(r, at(r, {"timing", "statistics", "p50"}), 1e3); },
                         "runtime", 1e-3, median_seconds};
  const RateUnit rate = table_rate_unit(results);
  const Quantity throughput{{"throughput", rate.name, rate.name, 2},
                            [rate](const Json& r) {
                              return timed(r, at(r, {"timing", "tflops"}), 1e12 / rate.flops_per_second);
                            },
                            "throughput", rate.flops_per_second, flops_per_second};
  fill_wide_sweep_table(table, results, baseline, x_axis(options), {runtime, throughput},
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
  Table table =
      new_table("memory", "Peak memory by " + axis_words(options), results, baseline);
  const ByteUnit unit = table_byte_unit(results, {peak_bytes}, published_amounts(published_of(results), "peak_memory"));
  const Quantity peak{{"peak_memory", std::string("peak ") + unit.name, unit.name, 2},
                      [unit](const Json& r) { return memory_cell(r, "peak_bytes", unit); }, "peak_memory",
                      unit.bytes, peak_bytes};
  const Quantity extra{{"extra_memory", std::string("extra ") + unit.name, unit.name, 2},
                       [unit](const Json& r) { return memory_cell(r, "extra_bytes", unit); }, "", 1, nullptr};
  fill_wide_sweep_table(table, results, baseline, x_axis(options), {peak, extra},
                        Ratio{{"memory_reduction", "reduction", "x", 2}, peak_bytes});
  table.notes.push_back(
      byte_unit_note(unit) + ". Peak: the high-water mark of the device memory the call used (inputs, outputs and "
      "workspace); extra: peak minus inputs and outputs.");
  table.notes.push_back(baseline.empty()
                            ? "No reduction factors: the results have neither cuda.cublas nor cpu.standard; name a "
                              "baseline with --baseline."
                            : "Reduction: " + baseline + "'s peak over the implementation's, in the same row.");
  if (std::any_of(results.records().begin(), results.records().end(),
                  [](const RecordRef& ref) { return is_planned(*ref.record); })) {
    table.notes.push_back(kPlannedNote);
  }
  add_closing_notes(table, results);
  return table;
}

// ---- io: measured and counted HBM bytes against the compulsory minimum ----

Table io_table(const MergedResults& results, const ReportOptions& options) {
  const XAxis x = x_axis(options);
  Table table =
      new_table("io", "Memory traffic (HBM measured, or counted between arrays and tiles) against the compulsory bytes",
                results, resolve_baseline(results, options));
  table.columns = length_columns(x);
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
  fill_record_rows(table, results, x, [&](const Json& record, const RecordRef&) {
    const double compulsory = total_bytes(at(record, {"traffic", "compulsory"})).value_or(0);
    const auto [traffic, source] = hbm_bytes(record);
    std::vector<Cell> cells;
    cells.push_back(Cell::label(record["implementation"]));
    const std::optional<double> modelled = total_bytes(at(record, {"traffic", "modelled"}));
    cells.push_back(bytes_cell(record, compulsory, unit));
    cells.push_back(bytes_cell(record, modelled, unit));
    cells.push_back(bytes_cell(record, total_bytes(at(record, {"traffic", "counted"})), unit));
    cells.push_back(bytes_cell(record, total_bytes(at(record, {"traffic", "measured"})), unit));
    cells.push_back(ratio_cell(record, traffic, compulsory > 0 ? std::optional(compulsory) : std::nullopt));
    cells.push_back(ratio_cell(record, traffic, modelled && *modelled > 0 ? modelled : std::nullopt));
    cells.push_back(Cell::label(is_ok(record) ? source : "-"));
    return cells;
  });
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

// ---- timing: what each record's time is, and what its method hides ----

Table timing_table(const MergedResults& results, const ReportOptions& options) {
  const XAxis x = x_axis(options);
  Table table = new_table("timing", "Timing method, kernel and events time, launch overhead and clocks per record",
                          results, resolve_baseline(results, options));
  table.columns = length_columns(x);
  table.columns.push_back(implementation_column());
  table.columns.push_back(Column::text("method", "method", "timing_method"));
  table.columns.push_back(Column::number("runtime", "runtime ms", "ms", "runtime", 4));
  table.columns.push_back(Column::number("events", "events ms", "ms", "events_runtime", 4));
  table.columns.push_back(Column::number("launch_overhead", "launch overhead us", "us", "launch_overhead", 2));
  table.columns.push_back(Column::number("flush", "flush/call us", "us", "graph_flush", 2));
  table.columns.push_back(Column::text("clocks", "clock marks", "clock_marks"));
  fill_record_rows(table, results, x, [&](const Json& record, const RecordRef&) {
    const Json& timing = record["timing"];
    std::vector<Cell> cells;
    cells.push_back(Cell::label(record["implementation"]));
    cells.push_back(timing.is_object() ? Cell::label(timing.value("method", std::string("events"))) : missing(record));
    cells.push_back(timed(record, at(record, {"timing", "statistics", "p50"}), 1e3));
    cells.push_back(timed(record, at(record, {"timing", "cupti", "events_p50"}), 1e3));
    cells.push_back(timed(record, at(record, {"timing", "cupti", "launch_overhead_seconds"}), 1e6));
    cells.push_back(timed(record, at(record, {"timing", "graph", "flush_seconds_per_call"}), 1e6));
    const Json& marks = at(record, {"timing", "clock_marks"});
    cells.push_back(marks.is_object() ? Cell::label(std::to_string(marks["marked"].size()) + " of " +
                                                    std::to_string(marks["read"].get<std::size_t>()) + " below " +
                                                    format_fixed(marks["threshold_mhz"].get<double>(), 0) + " MHz")
                                      : Cell::empty());
    return cells;
  });
  table.notes.push_back(
      "Method (docs/design.md §4.1): events, CUDA events around one call; cupti, the merged device time of the call's "
      "own kernels (CUPTI activity records), with the events time of the same calls beside it and the launch "
      "overhead, the median of events minus kernel time; graph, the time per call of a CUDA graph of several calls, "
      "less the flush-only graph's time per call (flush/call).");
  table.notes.push_back("Clock marks: samples whose SM clock was below the share of the run's highest SM clock "
                        "(measure.clock_mark_share); any makes the record throttled.");
  add_closing_notes(table, results);
  return table;
}

// ---- accuracy: errors against the fp64 oracle ----

Table accuracy_table(const MergedResults& results, const ReportOptions& options) {
  const XAxis x = x_axis(options);
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
  table.columns = length_columns(x);
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
  fill_record_rows(table, results, x, [&](const Json& record, const RecordRef&) {
    const Json& accuracy = record["accuracy"];
    const Cell none = accuracy.is_null() && !is_ok(record) ? missing(record) : Cell::empty();
    std::vector<Cell> cells;
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
    return cells;
  });
  table.notes.insert(
      table.notes.end(),
      {"max err: the largest absolute error against the fp64 oracle on the sample; the per-dtype bound also applies "
       "(see the results file).",
       "rule limit: 2 x the materializing baseline's error + a floor, where the fused-versus-baseline rule applied "
       "(- elsewhere)."});
  add_closing_notes(table, results);
  return table;
}

// ---- roofline: achieved FLOP/s against arithmetic intensity ----

// The bytes the roofline divides by: measured, else counted, else modelled.
std::pair<std::optional<double>, std::string> roofline_bytes(const Json& record) {
  const auto [bytes, source] = hbm_bytes(record);
  if (bytes) return {bytes, source};
  if (const auto modelled = total_bytes(at(record, {"traffic", "modelled"}))) return {modelled, "modelled"};
  return {std::nullopt, "-"};
}

// The devices entry a record ran on, in its results file.
const Json* device_of(const MergedResults& results, const RecordRef& ref) {
  for (const Json& device : results.document_of(ref)["devices"]) {
    if (device["kind"] == (*ref.record)["device"]) return &device;
  }
  return nullptr;
}

Table roofline_table(const MergedResults& results, const ReportOptions& options) {
  const XAxis x = x_axis(options);
  Table table = new_table("roofline", "Achieved FLOP/s against arithmetic intensity (roofline)", results,
                          resolve_baseline(results, options));
  const RateUnit rate = table_rate_unit(results);
  const ByteUnit unit = table_byte_unit(results, {[](const Json& r) { return roofline_bytes(r).first; }});
  table.columns = length_columns(x);
  table.columns.push_back(implementation_column());
  table.columns.push_back(Column::text("device", "device", "device"));
  table.columns.push_back(Column::number("gflop", "GFLOP", "GFLOP", "flops", 2));
  table.columns.push_back(Column::number("bytes", std::string("bytes ") + unit.name, unit.name, "hbm_bytes", 3));
  table.columns.push_back(Column::text("bytes_source", "bytes source", "hbm_source"));
  table.columns.push_back(Column::number("intensity", "FLOP/byte", "FLOP/B", "intensity", 2));
  table.columns.push_back(Column::number("achieved", std::string("achieved ") + rate.name, rate.name, "throughput", 2));
  table.columns.push_back(Column::number("roof", std::string("roof ") + rate.name, rate.name, "roof", 2));
  table.columns.push_back(Column::number("of_roof", "of roof", "", "fraction_of_roof", 2));
  table.columns.push_back(Column::text("bound", "bound by", "bound"));
  table.columns.push_back(Column::text("algorithm", "algorithm", "algorithm"));

  Json ceilings = Json::array();
  std::set<std::string> described;
  std::map<std::string, std::vector<std::string>> above_roof;  // device name -> the points above its roof
  fill_record_rows(table, results, x, [&](const Json& record, const RecordRef& ref) {
    const Json* device = device_of(results, ref);
    const std::optional<Ceilings> ceiling =
        device ? device_ceilings(*device, results.document_of(ref)["host"]) : std::nullopt;
    if (device && ceiling && described.insert((*device)["name"].get<std::string>()).second) {
      ceilings.push_back(Json{{"kind", (*device)["kind"]},
                              {"device", (*device)["name"]},
                              {"flops_per_second", ceiling->flops_per_second},
                              {"bytes_per_second", ceiling->bytes_per_second},
                              {"ridge_flop_per_byte", ceiling->ridge()},
                              {"source", ceiling->source}});
    }
    const double flops = at(record, {"flops", "total"}).get<double>();
    const auto [bytes, source] = roofline_bytes(record);
    const bool has_intensity = bytes.has_value() && bytes.value_or(0) > 0;
    const double intensity = has_intensity ? flops / bytes.value_or(1) : 0;
    const std::optional<double> achieved = flops_per_second(record);
    std::vector<Cell> cells;
    cells.push_back(Cell::label(record["implementation"]));
    cells.push_back(Cell::label(record["device"]));
    cells.push_back(Cell::value(flops / 1e9));
    cells.push_back(bytes_cell(record, bytes, unit));
    cells.push_back(Cell::label(is_ok(record) ? source : "-"));
    cells.push_back(has_intensity && is_ok(record) ? Cell::value(intensity) : bytes_cell(record, std::nullopt, unit));
    cells.push_back(timed(record, achieved ? Json(*achieved) : Json(nullptr), 1 / rate.flops_per_second));
    const bool placed = ceiling && has_intensity && is_ok(record);
    const double roof = placed ? ceiling->roof(intensity) : 0;
    cells.push_back(placed ? Cell::value(roof / rate.flops_per_second) : Cell::empty());
    const bool fraction = placed && achieved && !is_simulated(record);
    cells.push_back(fraction ? Cell::value(achieved.value_or(0) / roof) : Cell::empty());
    if (fraction && achieved.value_or(0) > roof) {
      above_roof[(*device)["name"].get<std::string>()].push_back(record["implementation"].get<std::string>() + " " +
                                                                 short_case_label(record["problem"]));
    }
    cells.push_back(Cell::label(!placed ? "-" : intensity < ceiling->ridge() ? "memory" : "compute"));
    const Json& algorithm = at(record, {"traffic", "modelled", "algorithm"});
    cells.push_back(Cell::label(algorithm.is_string() ? algorithm.get<std::string>() : "-"));
    return cells;
  });
  // A measured point above its roof contradicts the roof: the ceiling is then
  // no limit but a lower bound (a calibration the host outran, or bytes that
  // a faster memory level than the one calibrated served).
  for (Json& ceiling : ceilings) {
    const auto found = above_roof.find(ceiling["device"].get<std::string>());
    const std::size_t above = found == above_roof.end() ? 0 : found->second.size();
    ceiling["points_above"] = above;
    ceiling["lower_bound"] = above > 0;
  }
  table.metadata["ceilings"] = ceilings;
  table.notes.push_back(
      "FLOP/byte: the exact FLOP count over the record's bytes: measured DRAM bytes (the profiler) where collected, "
      "else the bytes a CPU tiled implementation counted, else the implementation's modelled HBM traffic "
      "(docs/io-models.md); bytes source says which.");
  table.notes.push_back("roof: the lower of the device's compute ceiling and its bandwidth ceiling times the "
                        "intensity; bound by: memory left of the ridge point (compute ceiling over bandwidth), "
                        "compute right of it; algorithm: standard (materializing) or fused, from the "
                        "implementation's traffic model.");
  for (const Json& ceiling : ceilings) {
    table.notes.push_back("Ceilings of " + ceiling["device"].get<std::string>() + ": " +
                          format_flops_rate(ceiling["flops_per_second"].get<double>()) + ", " +
                          format_bytes(ceiling["bytes_per_second"].get<double>()) + "/s, ridge " +
                          format_fixed(ceiling["ridge_flop_per_byte"].get<double>(), 1) + " FLOP/byte (" +
                          ceiling["source"].get<std::string>() + ").");
  }
  for (const Json& ceiling : ceilings) {
    if (!ceiling["lower_bound"].get<bool>()) continue;
    const std::vector<std::string>& points = above_roof[ceiling["device"].get<std::string>()];
    const bool host = ceiling["kind"] == "cpu";
    table.notes.push_back(
        "Contradiction: " + count_of(points.size(), "point") + " of " + ceiling["device"].get<std::string>() +
        (points.size() == 1 ? " lies" : " lie") + " above the roof (of roof > 1: " + join(points, "; ") +
        "), so its roof is a lower bound here, not a limit. " +
        (host ? "The calibration is a measured rate that other work on the machine lowers: recalibrate on an idle "
                "machine (attnbench run --calibrate); left of the ridge, counted bytes are tile traffic that the "
                "caches serve faster than the copy bandwidth."
              : "The published peaks are below what ran: check the device's model and clocks."));
  }
  if (ceilings.empty()) {
    table.notes.push_back("No ceilings: the host was not calibrated (run --calibrate records it) and no GPU of a "
                          "known model ran.");
  }
  add_closing_notes(table, results);
  return table;
}

}  // namespace

std::vector<std::string> x_axis_names() {
  std::vector<std::string> names{"seqlen", "batch", "block"};
  for (const GroupingField& field : grouping_fields()) {
    if (std::string(field.name) != "scenario") names.push_back(field.name);
  }
  return names;
}

const std::vector<TableKind>& table_kinds() {
  static const std::vector<TableKind> kinds{
      {"fig2", "GFLOPs, HBM R/W bytes and runtime per implementation, per case (FlashAttention Figure 2 left)",
       fig2_table},
      {"seqlen", "runtime, FLOP/s and speedup over the baseline by sequence length (Appendix E, FA2 figures)",
       seqlen_table},
      {"memory", "peak and extra memory by sequence length with the reduction factor (Table 21)", memory_table},
      {"io", "compulsory, counted and measured HBM bytes per record", io_table},
      {"accuracy", "status, max abs error per tensor, rule limits and the oracle sample per record", accuracy_table},
      {"timing", "timing method, kernel and events time, launch overhead, graph flush and clock marks per record",
       timing_table},
      {"roofline", "achieved FLOP/s against FLOPs per byte, with the device's compute and bandwidth ceilings",
       roofline_table},
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
