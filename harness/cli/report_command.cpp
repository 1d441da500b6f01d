// `attnbench report RESULTS… --table KIND [--format md|csv|latex|json]
// [--baseline IMPLEMENTATION] [-o FILE]`: see harness/report/table_kinds.hpp and
// docs/reports.md. Everything is read and built before anything is written, so a
// bad input leaves no output file.
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/report/table_kinds.hpp"
#include "harness/results/document.hpp"
#include "harness/report/table.hpp"
#include "harness/user_paths.hpp"

namespace attnbench {

Subcommand add_report_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> results;
    std::string table;
    std::string format = "md";
    ReportOptions report;
    std::string output;
    std::vector<std::string> labels;
    bool with_oracle = false;
  };
  auto options = std::make_shared<Options>();
  std::vector<std::string> tables, formats;
  std::string table_help = "Table:";
  for (const TableKind& kind : table_kinds()) {
    tables.push_back(kind.name);
    table_help += std::string("\n  ") + kind.name + ": " + kind.description;
  }
  for (const TableFormat& format : table_formats()) formats.push_back(format.name);

  CLI::App* command = app.add_subcommand("report", "Render paper-style tables from results files");
  command->add_option("results", options->results, "Results files (merged into one view)")->required()->check(file_name_check());
  command->add_option("--table", options->table, table_help)->required()->check(CLI::IsMember(tables));
  command->add_option("--format", options->format, "Output format (default md)")->check(CLI::IsMember(formats));
  command->add_option("--baseline", options->report.baseline,
                      "Implementation that speedups and memory reductions are relative to "
                      "(default: cuda.cublas, else cpu.standard)");
  command->add_option("--x", options->report.x_axis,
                      "What the rows are ordered by, and no longer grouped by: seqlen (default), batch, block "
                      "(block_q and block_k together) or a problem field such as block_q, head_dim, dropout")
      ->check(CLI::IsMember(x_axis_names()));
  command->add_option("--label", options->labels,
                      "One per results file, in order: its implementations are shown as NAME@LABEL, so two builds "
                      "of one implementation stand side by side (then --baseline NAME@LABEL)");
  command->add_flag("--with-oracle", options->with_oracle,
                    "Show the fp64 oracle (cpu.reference) too; it is left out otherwise");
  command->add_option("-o,--output", options->output, "Write the report here (default: standard output)")
      ->check(output_name_check());
  return {command, [options](const std::vector<std::string>&) {
            for (const std::string& input : options->results) {
              if (!options->output.empty() && same_file(options->output, input)) {
                throw InputError("-o " + options->output + ": is one of the results files read; give another file");
              }
            }
            const MergedResults results = load_merged_results(
                options->results, options->with_oracle ? OracleRecords::keep : OracleRecords::leave_out,
                options->labels);
            const Table table = build_table(options->table, results, options->report);
            const std::string text = find_table_format(options->format)->render(table);
            if (options->output.empty()) {
              std::fwrite(text.data(), 1, text.size(), stdout);
              return kExitSuccess;
            }
            prepare_output_directory(options->output, "-o");
            try {
              write_file_atomically(options->output, text);
            } catch (const std::runtime_error& error) {
              throw InputError(std::string("-o: ") + error.what());
            }
            return kExitSuccess;
          }};
}

}  // namespace attnbench
