// A small table model for reports and its renderers (Markdown, CSV, LaTeX,
// JSON). A table is built once from results (harness/report/table_kinds.hpp) and knows
// nothing of formats; each renderer is one function in the format list, so a new
// format never touches a table and a new table never touches a renderer.
// Cells are tagged values: a number in the unit its column names, a text, a
// marker standing in for a number a record did not produce ("OOM", "skipped",
// "failed", with the reason), or empty ("-").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

struct Column {
  enum class Type { text, integer, number };
  std::string key;    // stable identifier, e.g. "runtime/cpu.flash"
  std::string title;  // header as printed, unit included: "cpu.flash ms"
  Type type = Type::number;
  std::string unit;            // "ms", "GB", "TFLOP/s", "x"; empty for text and plain counts
  std::string quantity;        // what the numbers are: "runtime", "tflops", "speedup", ...
  std::string implementation;  // the implementation the column belongs to, if any
  std::string tensor;          // the output tensor (accuracy columns), if any
  // A published series' column: {"label", "device", "source", "counterpart"}; null otherwise.
  nlohmann::ordered_json reference;
  int decimals = 2;            // digits after the point in text formats
  bool scientific = false;     // text formats print 1.23e-04 instead

  static Column text(std::string key, std::string title, std::string quantity) {
    return make(std::move(key), std::move(title), Type::text, "", std::move(quantity), 0);
  }
  static Column integer(std::string key, std::string title, std::string quantity) {
    return make(std::move(key), std::move(title), Type::integer, "", std::move(quantity), 0);
  }
  static Column number(std::string key, std::string title, std::string unit, std::string quantity, int decimals) {
    return make(std::move(key), std::move(title), Type::number, std::move(unit), std::move(quantity), decimals);
  }

 private:
  static Column make(std::string key, std::string title, Type type, std::string unit, std::string quantity,
                     int decimals) {
    Column column;
    column.key = std::move(key);
    column.title = std::move(title);
    column.type = type;
    column.unit = std::move(unit);
    column.quantity = std::move(quantity);
    column.decimals = decimals;
    return column;
  }
};

struct Cell {
  enum class Kind { empty, number, text, marker };
  Kind kind = Kind::empty;
  double number = 0;
  std::string text;    // kind text: the text; kind number: an optional display label; kind marker: the marker
  std::string status;  // kind marker: the record's status ("skipped", "failed")
  std::string reason;  // kind marker: why there is no number
  bool planned = false;  // kind number: from an arena plan, not a call that ran (run --memory-only)

  static Cell empty() { return {}; }
  static Cell value(double number, std::string label = "") {
    return {Kind::number, number, std::move(label), "", "", false};
  }
  static Cell planned_value(double number) { return {Kind::number, number, "", "", "", true}; }
  static Cell label(std::string text) { return {Kind::text, 0, std::move(text), "", "", false}; }
  static Cell marker(std::string marker, std::string status, std::string reason) {
    return {Kind::marker, 0, std::move(marker), std::move(status), std::move(reason), false};
  }
};

// Rows that belong together (one case, or one setting of the fields that vary
// in a sweep), rendered as one table of their own in Markdown and LaTeX.
struct TableGroup {
  std::string title;
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();  // what distinguishes this group
  std::vector<std::vector<Cell>> rows;                               // each as long as the columns
};

struct Table {
  std::string kind;             // "seqlen"
  std::string title;            // "Runtime and throughput by sequence length"
  std::vector<Column> columns;  // shared by every group
  std::vector<TableGroup> groups;
  std::vector<std::string> notes;                                      // footnotes
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();  // carried into JSON only (sources, baseline)
};

// The text a text format prints for a cell: numbers with the column's decimals
// (scientific where that would show fewer than two significant digits) and a
// planned one followed by " p", markers as themselves, empty cells as "-".
std::string cell_text(const Column& column, const Cell& cell);

inline constexpr const char* kReportSchemaId = "attnbench.report/1";

using TableRenderer = std::string (*)(const Table& table);
struct TableFormat {
  const char* name;  // the --format value
  TableRenderer render;
};
// md, csv, latex, json.
const std::vector<TableFormat>& table_formats();
const TableFormat* find_table_format(const std::string& name);

std::string render_markdown(const Table& table);
std::string render_csv(const Table& table);
std::string render_latex(const Table& table);
std::string render_json(const Table& table);

}  // namespace attnbench
