// `attnbench report` (docs/reports.md): paper-style tables built from one or several
// results files merged into one view. Each table kind is one builder function in
// table_kinds(); rendering is harness/report/table.hpp's. See docs/reports.md for the
// tables, what each reproduces from the FlashAttention papers, and the grouping
// rule.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/table.hpp"

namespace attnbench {

// One results file as read (load_results_file: schema-checked).
struct ResultsSource {
  std::string path;
  nlohmann::ordered_json document;
};

// A record of the merged view and where it came from.
struct RecordRef {
  const nlohmann::ordered_json* record;
  const std::string* file;
  std::size_t index;  // in the file's "records"
};

// Whether a view keeps the records of the fp64 oracle (cpu.reference): a
// report leaves them out unless asked (--with-oracle), for the oracle is the
// yardstick of accuracy, not a contender.
enum class OracleRecords { keep, leave_out };

// The records of several results files as one view. A cell (scenario, case_key,
// implementation) must come from one file only: two files holding the same cell
// are refused (InputError naming both), never silently resolved.
class MergedResults {
 public:
  explicit MergedResults(std::vector<ResultsSource> sources, OracleRecords oracle = OracleRecords::keep);
  MergedResults(const MergedResults&) = delete;
  MergedResults& operator=(const MergedResults&) = delete;
  MergedResults(MergedResults&&) = default;

  const std::vector<ResultsSource>& sources() const { return sources_; }
  const std::vector<RecordRef>& records() const { return records_; }
  // Implementation names in order of first appearance (files in the order given).
  const std::vector<std::string>& implementations() const { return implementations_; }
  // The oracle's records the view left out, and its name ("" when none).
  std::size_t oracle_records_left_out() const { return oracle_left_out_; }
  const std::string& oracle_name() const { return oracle_name_; }
  // The results file a record came from.
  const nlohmann::ordered_json& document_of(const RecordRef& ref) const;

 private:
  std::vector<ResultsSource> sources_;
  std::vector<RecordRef> records_;
  std::vector<std::string> implementations_;
  std::size_t oracle_left_out_ = 0;
  std::string oracle_name_;
};

// Reads and merges results files; throws InputError naming the file on a bad one.
// With `labels` (one per file, `report --label`), each file's implementations
// are named NAME@LABEL, so that two builds of one implementation (of a
// plug-in, of attnbench) stand side by side instead of clashing.
MergedResults load_merged_results(const std::vector<std::string>& paths, OracleRecords oracle = OracleRecords::keep,
                                  const std::vector<std::string>& labels = {});

struct ReportOptions {
  // The implementation speedups and memory reductions are relative to; empty:
  // cuda.cublas when the results have it, else cpu.standard, else none.
  std::string baseline;
  // What the rows of the sweep tables are ordered by and the figures put on
  // their x axis: "seqlen" (the default), "batch", a problem field of the
  // grouping rule (head_dim, block_q, dropout, ...) or "block" (block_q and
  // block_k together). A field on the x axis no longer splits groups.
  std::string x_axis = "seqlen";
};

// The values --x takes.
std::vector<std::string> x_axis_names();

using TableBuilder = Table (*)(const MergedResults& results, const ReportOptions& options);
struct TableKind {
  const char* name;  // the --table value
  const char* description;
  TableBuilder build;
};
// fig2, seqlen, memory, io, accuracy, roofline.
const std::vector<TableKind>& table_kinds();

// Builds the table `kind`; throws InputError for an unknown kind or a --baseline
// that no record names.
Table build_table(const std::string& kind, const MergedResults& results, const ReportOptions& options);

}  // namespace attnbench
