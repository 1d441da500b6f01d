// The report renderers: each turns a whole Table into one document. See
// docs/reports.md for what each format looks like.
#include "harness/report/table.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "harness/format.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

namespace {

// Smaller magnitudes print in scientific notation: fixed decimals would need more than five.
constexpr double kSmallestFixed = 1e-4;

}  // namespace

std::string cell_text(const Column& column, const Cell& cell) {
  switch (cell.kind) {
    case Cell::Kind::empty:
      return "-";
    case Cell::Kind::text:
    case Cell::Kind::marker:
      return cell.text;
    case Cell::Kind::number:
      break;
  }
  if (!cell.text.empty()) return cell.text;
  const double v = cell.number;
  if (!std::isfinite(v)) return "-";
  if (column.type == Column::Type::integer) return std::to_string(std::llround(v));
  if (column.scientific) return format_scientific(v, 2) + (cell.planned ? " p" : "");
  // A small value keeps two significant digits with more decimals (0.020, not
  // 0.02 or 1.97e-02); only one below kSmallestFixed goes scientific.
  int decimals = column.decimals;
  if (v != 0 && std::abs(v) < std::pow(10.0, 1 - decimals)) {
    decimals = 1 - static_cast<int>(std::floor(std::log10(std::abs(v))));
  }
  const bool tiny = v != 0 && std::abs(v) < kSmallestFixed;
  return (tiny ? format_scientific(v, 2) : format_fixed(v, decimals)) + (cell.planned ? " p" : "");
}

namespace {

std::string replace_all(std::string_view text, const std::vector<std::pair<char, std::string_view>>& replacements) {
  std::string out;
  for (const char c : text) {
    const auto match = std::find_if(replacements.begin(), replacements.end(),
                                    [c](const auto& replacement) { return replacement.first == c; });
    if (match == replacements.end()) {
      out += c;
    } else {
      out += match->second;
    }
  }
  return out;
}

// ---- Markdown: GitHub tables, padded so the text reads as a table too ----

std::string markdown_escape(const std::string& text) { return replace_all(text, {{'|', "\\|"}, {'\n', " "}}); }

std::string markdown_group(const Table& table, const TableGroup& group) {
  const std::size_t n = table.columns.size();
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> header;
  for (const Column& column : table.columns) header.push_back(markdown_escape(column.title));
  lines.push_back(header);
  for (const auto& row : group.rows) {
    std::vector<std::string> line;
    for (std::size_t i = 0; i < n; ++i) line.push_back(markdown_escape(cell_text(table.columns[i], row[i])));
    lines.push_back(line);
  }
  std::vector<std::size_t> width(n, 3);
  for (const auto& line : lines) {
    for (std::size_t i = 0; i < n; ++i) width[i] = std::max(width[i], line[i].size());
  }
  const auto left = [&](std::size_t i) { return table.columns[i].type == Column::Type::text; };
  const auto pad = [&](const std::string& text, std::size_t i) {
    const std::string fill(width[i] - text.size(), ' ');
    return left(i) ? text + fill : fill + text;
  };
  std::string out;
  for (std::size_t l = 0; l < lines.size(); ++l) {
    out += '|';
    for (std::size_t i = 0; i < n; ++i) out += ' ' + pad(lines[l][i], i) + " |";
    out += '\n';
    if (l == 0) {
      out += '|';
      for (std::size_t i = 0; i < n; ++i) {
        const std::string dashes(width[i] - 1, '-');
        out += ' ' + (left(i) ? ":" + dashes : dashes + ":") + " |";
      }
      out += '\n';
    }
  }
  return out;
}

// ---- CSV (RFC 4180): one header row, a "group" column tags each row ----

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

// CSV keeps every digit (it is read by programs); labelled numbers print their label.
std::string csv_cell(const Column& column, const Cell& cell) {
  switch (cell.kind) {
    case Cell::Kind::empty:
      return "";
    case Cell::Kind::text:
    case Cell::Kind::marker:
      return csv_field(cell.text);
    case Cell::Kind::number:
      break;
  }
  if (!cell.text.empty()) return csv_field(cell.text);
  if (!std::isfinite(cell.number)) return "";
  if (column.type == Column::Type::integer) return std::to_string(std::llround(cell.number));
  return Json(cell.number).dump();
}

// ---- LaTeX (booktabs) ----

std::string latex_escape(const std::string& text) {
  return replace_all(text, {{'\\', "\\textbackslash{}"},
                            {'&', "\\&"},
                            {'%', "\\%"},
                            {'$', "\\$"},
                            {'#', "\\#"},
                            {'_', "\\_"},
                            {'{', "\\{"},
                            {'}', "\\}"},
                            {'~', "\\textasciitilde{}"},
                            {'^', "\\textasciicircum{}"},
                            {'<', "\\textless{}"},
                            {'>', "\\textgreater{}"},
                            {'|', "\\textbar{}"},
                            {'\n', " "}});
}

// A number in scientific notation ("4.73e-03", "1.2e+05 p") as LaTeX writes
// it: $4.73 \times 10^{-3}$; any other cell unchanged.
std::string latex_number(const std::string& cell) {
  const std::size_t e = cell.find('e');
  if (e == std::string::npos || e == 0 || e + 2 >= cell.size()) return cell;
  const auto digits = [&](std::size_t from, std::size_t to) {
    return from < to && std::all_of(cell.begin() + static_cast<std::ptrdiff_t>(from),
                                    cell.begin() + static_cast<std::ptrdiff_t>(to), [](char c) {
                                      return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                                    });
  };
  const std::size_t mantissa_start = cell[0] == '-' ? 1 : 0;
  const std::size_t end = cell.find(' ', e);
  const std::size_t exponent_end = end == std::string::npos ? cell.size() : end;
  if (!digits(mantissa_start, e) || (cell[e + 1] != '-' && cell[e + 1] != '+') || !digits(e + 2, exponent_end)) {
    return cell;
  }
  const int exponent = std::stoi(cell.substr(e + 1, exponent_end - e - 1));
  return "$" + cell.substr(0, e) + " \\times 10^{" + std::to_string(exponent) + "}$" + cell.substr(exponent_end);
}

std::string latex_row(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? " & " : "") + cells[i];
  return out + " \\\\\n";
}

// ---- JSON: typed cells, units in the column metadata ----

Json json_cell(const Column& column, const Cell& cell) {
  switch (cell.kind) {
    case Cell::Kind::empty:
      return nullptr;
    case Cell::Kind::text:
      return cell.text;
    case Cell::Kind::marker:
      return Json{{"marker", cell.text}, {"status", cell.status}, {"reason", cell.reason}};
    case Cell::Kind::number:
      break;
  }
  if (!std::isfinite(cell.number)) return nullptr;
  const Json value = column.type == Column::Type::integer ? Json(std::llround(cell.number)) : Json(cell.number);
  if (cell.planned) return Json{{"value", value}, {"source", "planned"}};
  if (cell.text.empty()) return value;
  return Json{{"value", value}, {"label", cell.text}};
}

Json json_column(const Column& column) {
  static const char* const kTypes[] = {"text", "integer", "number"};
  Json out{{"key", column.key},
           {"title", column.title},
           {"type", kTypes[static_cast<int>(column.type)]},
           {"unit", column.unit.empty() ? Json(nullptr) : Json(column.unit)},
           {"quantity", column.quantity}};
  if (!column.implementation.empty()) out["implementation"] = column.implementation;
  if (!column.tensor.empty()) out["tensor"] = column.tensor;
  if (!column.reference.is_null()) out["reference"] = column.reference;
  return out;
}

}  // namespace

std::string render_markdown(const Table& table) {
  std::string out = "## " + markdown_escape(table.title) + "\n";
  for (const TableGroup& group : table.groups) {
    out += "\n";
    if (!group.title.empty()) out += "### " + markdown_escape(group.title) + "\n\n";
    out += markdown_group(table, group);
  }
  if (table.groups.empty()) out += "\nNo records.\n";
  if (!table.notes.empty()) out += "\n";
  for (const std::string& note : table.notes) out += "- " + markdown_escape(note) + "\n";
  return out;
}

std::string render_csv(const Table& table) {
  std::string out = "group";
  for (const Column& column : table.columns) out += "," + csv_field(column.title);
  out += "\r\n";
  for (const TableGroup& group : table.groups) {
    for (const auto& row : group.rows) {
      out += csv_field(group.title);
      for (std::size_t i = 0; i < table.columns.size(); ++i) out += "," + csv_cell(table.columns[i], row[i]);
      out += "\r\n";
    }
  }
  return out;
}

std::string render_latex(const Table& table) {
  // A table wider than a page's text (more than kLatexColumnsThatFit columns)
  // is scaled down to the text width.
  constexpr std::size_t kLatexColumnsThatFit = 6;
  const bool scaled = table.columns.size() > kLatexColumnsThatFit;
  std::string out = "% attnbench report (" + table.kind + "); needs \\usepackage{booktabs}" +
                    (scaled ? std::string(" and \\usepackage{graphicx}") : "") + "\n";
  std::string alignment;
  std::vector<std::string> header;
  for (const Column& column : table.columns) {
    alignment += column.type == Column::Type::text ? 'l' : 'r';
    header.push_back(latex_escape(column.title));
  }
  for (const TableGroup& group : table.groups) {
    const std::string caption = table.title + (group.title.empty() ? "" : ": " + group.title);
    out += "\\begin{table}[htbp]\n\\centering\n\\caption{" + latex_escape(caption) + "}\n";
    if (scaled) out += "\\resizebox{\\linewidth}{!}{%\n";
    out += "\\begin{tabular}{" + alignment + "}\n\\toprule\n" + latex_row(header) + "\\midrule\n";
    for (const auto& row : group.rows) {
      std::vector<std::string> cells;
      for (std::size_t i = 0; i < table.columns.size(); ++i) {
        cells.push_back(latex_number(latex_escape(cell_text(table.columns[i], row[i]))));
      }
      out += latex_row(cells);
    }
    out += "\\bottomrule\n\\end{tabular}" + std::string(scaled ? "}" : "") + "\n\\end{table}\n";
  }
  if (!table.notes.empty()) {
    out += "\\begin{flushleft}\\footnotesize\n";
    for (std::size_t i = 0; i < table.notes.size(); ++i) {
      out += latex_escape(table.notes[i]) + (i + 1 < table.notes.size() ? "\\\\\n" : "\n");
    }
    out += "\\end{flushleft}\n";
  }
  return out;
}

std::string render_json(const Table& table) {
  Json out{{"schema", kReportSchemaId}, {"table", table.kind}, {"title", table.title}};
  for (const auto& [key, value] : table.metadata.items()) out[key] = value;
  Json columns = Json::array();
  for (const Column& column : table.columns) columns.push_back(json_column(column));
  out["columns"] = columns;
  Json groups = Json::array();
  for (const TableGroup& group : table.groups) {
    Json rows = Json::array();
    for (const auto& row : group.rows) {
      Json cells = Json::array();
      for (std::size_t i = 0; i < table.columns.size(); ++i) cells.push_back(json_cell(table.columns[i], row[i]));
      rows.push_back(cells);
    }
    groups.push_back(Json{{"title", group.title}, {"fields", group.fields}, {"rows", rows}});
  }
  out["groups"] = groups;
  out["notes"] = table.notes;
  return out.dump(2) + "\n";
}

const std::vector<TableFormat>& table_formats() {
  static const std::vector<TableFormat> formats{
      {"md", render_markdown}, {"csv", render_csv}, {"latex", render_latex}, {"json", render_json}};
  return formats;
}

const TableFormat* find_table_format(const std::string& name) {
  for (const TableFormat& format : table_formats()) {
    if (name == format.name) return &format;
  }
  return nullptr;
}

}  // namespace attnbench
