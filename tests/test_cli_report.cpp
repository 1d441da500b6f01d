// End to end: `attnbench report` on results files written by `attnbench run` of
// a tiny CPU sweep — every table in every format, -o, merged files, and bad
// input (exit 2, nothing written).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace attnbench::test;

// Two sequence lengths, the tiled and the materializing implementation, fwd+bwd.
const char* kSweep = R"({
  "name": "report_sweep", "description": "tiny sweep for report tests",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "direction": "fwd+bwd"},
  "sweep": {"seqlen": [32, 64]},
  "implementations": ["cpu.flash", "cpu.standard"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
              "max_samples": 3, "min_seconds": 0, "max_seconds": 0.05}
})";

class CliReport : public ::testing::Test {
 protected:
  // One run for the whole suite; a second, of cpu.reference only, to merge with it.
  static void SetUpTestSuite() {
    // Per process: CTest runs each test of the suite as a process of its own, in parallel.
    directory_ = fresh_temp_directory("cli_report");
    std::ofstream(directory_ / "sweep.json") << kSweep;
    const std::string scenario = (directory_ / "sweep.json").string();
    run_ = run_attnbench("run " + scenario + " -o " + results().string());
    reference_run_ = run_attnbench("run " + scenario + " --impl cpu.reference -o " + reference_results().string());
  }
  static void TearDownTestSuite() { fs::remove_all(directory_); }
  void SetUp() override {
    ASSERT_EQ(run_.exit_code, 0) << run_.output;
    ASSERT_EQ(reference_run_.exit_code, 0) << reference_run_.output;
  }

  static fs::path results() { return directory_ / "results.json"; }
  static fs::path reference_results() { return directory_ / "reference.json"; }
  static fs::path path(const std::string& name) { return directory_ / name; }

  static inline fs::path directory_;
  static inline CommandResult run_, reference_run_;
};

TEST_F(CliReport, EveryTableInEveryFormat) {
  for (const char* table : {"fig2", "seqlen", "memory", "io", "accuracy", "roofline"}) {
    for (const char* format : {"md", "csv", "latex", "json"}) {
      SCOPED_TRACE(std::string(table) + " " + format);
      const CommandResult report = run_attnbench(
          "report " + results().string() + " --table " + table + " --format " + format, Capture::stdout_only);
      ASSERT_EQ(report.exit_code, 0) << report.output;
      ASSERT_FALSE(report.output.empty());
      if (std::string(format) == "json") {
        const Json parsed = Json::parse(report.output);
        EXPECT_EQ(parsed["schema"], "attnbench.report/1");
        EXPECT_EQ(parsed["table"], table);
        EXPECT_FALSE(parsed["groups"].empty());
      } else if (std::string(format) == "md") {
        EXPECT_EQ(report.output.rfind("## ", 0), 0u);
        EXPECT_NE(report.output.find("cpu.flash"), std::string::npos);
      } else if (std::string(format) == "latex") {
        EXPECT_NE(report.output.find("\\toprule"), std::string::npos);
      } else {
        EXPECT_EQ(report.output.rfind("group,", 0), 0u);
      }
    }
  }
}

TEST_F(CliReport, MarkdownIsTheDefaultAndRowsFollowTheSweep) {
  const CommandResult report =
      run_attnbench("report " + results().string() + " --table seqlen", Capture::stdout_only);
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("cpu.flash speedup"), std::string::npos) << "cpu.standard is the default baseline";
  EXPECT_NE(report.output.find("\n|  32 |"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("\n|  64 |"), std::string::npos) << report.output;
}

TEST_F(CliReport, OutputFileHoldsWhatStandardOutputWould) {
  const fs::path output = path("out/seqlen.csv");
  const CommandResult written =
      run_attnbench("report " + results().string() + " --table seqlen --format csv -o " + output.string());
  ASSERT_EQ(written.exit_code, 0) << written.output;
  EXPECT_TRUE(written.output.empty()) << written.output;
  const CommandResult printed =
      run_attnbench("report " + results().string() + " --table seqlen --format csv", Capture::stdout_only);
  EXPECT_EQ(read_text(output), printed.output);
}

TEST_F(CliReport, MergesFilesIntoOneViewLeavingTheOracleOutUnlessAsked) {
  const auto columns_of_the_oracle = [&](const std::string& flags) {
    const CommandResult report =
        run_attnbench("report " + results().string() + " " + reference_results().string() +
                          " --table seqlen --format json" + flags,
                      Capture::stdout_only);
    EXPECT_EQ(report.exit_code, 0) << report.output;
    const Json parsed = Json::parse(report.output);
    EXPECT_EQ(parsed["sources"].size(), 2u);
    std::size_t columns = 0;
    for (const Json& column : parsed["columns"]) columns += column.value("implementation", "") == "cpu.reference";
    bool noted = false;
    for (const Json& note : parsed["notes"]) noted = noted || note.get<std::string>().find("--with-oracle") != std::string::npos;
    EXPECT_EQ(noted, columns == 0) << "a note says the oracle was left out";
    return columns;
  };
  EXPECT_EQ(columns_of_the_oracle(""), 0u) << "the fp64 oracle is no contender";
  EXPECT_GT(columns_of_the_oracle(" --with-oracle"), 0u) << "the second file's implementation has columns";
}

TEST_F(CliReport, BadInputExitsTwoAndWritesNothing) {
  std::ofstream(path("broken.json")) << "{\"schema\": \"attnbench.results/1\",";
  const fs::path output = path("never.md");
  const CommandResult broken = run_attnbench("report " + results().string() + " " + path("broken.json").string() +
                                             " --table seqlen -o " + output.string());
  EXPECT_EQ(broken.exit_code, 2) << broken.output;
  EXPECT_NE(broken.output.find("broken.json"), std::string::npos) << broken.output;
  EXPECT_FALSE(fs::exists(output));

  std::ofstream(path("not_results.json")) << R"({"schema": "attnbench.results/1", "records": []})";
  const CommandResult invalid = run_attnbench("report " + path("not_results.json").string() + " --table fig2");
  EXPECT_EQ(invalid.exit_code, 2) << invalid.output;
  EXPECT_NE(invalid.output.find("not_results.json"), std::string::npos) << invalid.output;

  const CommandResult missing = run_attnbench("report " + path("absent.json").string() + " --table fig2");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("absent.json"), std::string::npos) << missing.output;

  const CommandResult twice =
      run_attnbench("report " + results().string() + " " + results().string() + " --table fig2 -o " + output.string());
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("is also in"), std::string::npos) << twice.output;
  EXPECT_FALSE(fs::exists(output));

  fs::copy_file(results(), path("input_copy.json"), fs::copy_options::overwrite_existing);
  const CommandResult onto_input = run_attnbench("report " + path("input_copy.json").string() +
                                                 " --table fig2 -o " + directory_.string() + "/./input_copy.json");
  EXPECT_EQ(onto_input.exit_code, 2) << onto_input.output;
  EXPECT_NO_THROW(attnbench::load_results_file(path("input_copy.json").string())) << "the input is intact";
}

TEST_F(CliReport, BadUsageExitsTwo) {
  const std::string file = results().string();
  const CommandResult table = run_attnbench("report " + file + " --table fig3");
  EXPECT_EQ(table.exit_code, 2) << table.output;
  EXPECT_NE(table.output.find("fig3"), std::string::npos) << table.output;
  EXPECT_EQ(run_attnbench("report " + file + " --table seqlen --format html").exit_code, 2);
  EXPECT_EQ(run_attnbench("report " + file).exit_code, 2) << "--table is required";
  const fs::path output = path("never.md");
  const CommandResult baseline =
      run_attnbench("report " + file + " --table seqlen --baseline cuda.cublas -o " + output.string());
  EXPECT_EQ(baseline.exit_code, 2) << baseline.output;
  EXPECT_NE(baseline.output.find("--baseline cuda.cublas"), std::string::npos) << baseline.output;
  EXPECT_FALSE(fs::exists(output));
}

// Table 21 on any machine: --memory-only measures the memory of a case it can
// afford with one checked call and plans the rest (a case of 3e13 FLOP, minutes
// on one thread of any CPU, in 30 MiB), and the report marks which.
TEST(CliMemoryOnly, MeasuredWhereAffordablePlannedElsewhereAndTheReportSaysWhich) {
  const fs::path directory = fresh_temp_directory("cli_memory_only");
  std::ofstream(directory / "memory.json") << R"({
    "name": "memory", "description": "one small case and one of hours",
    "defaults": {"batch": 1, "heads": 8, "head_dim": 64, "direction": "fwd+bwd"},
    "cases": [{"seqlen": 64}, {"seqlen": 65536}],
    "implementations": ["cpu.flash"]})";
  const fs::path results = directory / "results.json";
  const CommandResult run = run_attnbench("run " + (directory / "memory.json").string() +
                                          " --memory-only --threads 1 -o " + results.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("peak mem p: planned"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("throughput"), std::string::npos) << "no timing columns without timing:\n" << run.output;
  EXPECT_NE(run.output.find("implementation    status   peak mem rel. error"), std::string::npos) << run.output;
  const Json document = attnbench::load_results_file(results.string());
  ASSERT_EQ(document["records"].size(), 2u);
  const Json& small = document["records"][0];
  const Json& huge = document["records"][1];
  EXPECT_EQ(small["status"], "ok");
  EXPECT_EQ(small["memory"]["source"], "measured");
  EXPECT_TRUE(small["timing"].is_null()) << "no timing loop";
  EXPECT_EQ(small["accuracy"]["status"], "passed") << "run once, with its checks";
  EXPECT_EQ(small["settings"]["memory_only"], true);
  EXPECT_EQ(huge["memory"]["source"], "planned");
  EXPECT_TRUE(huge["timing"].is_null());
  EXPECT_EQ(huge["accuracy"]["status"], "not_checked");
  // At cpu.flash's own rate, on a small case of the same kind measured first (the N 64 case is too small to
  // say), not the GEMM's.
  EXPECT_EQ(huge["reason"].get<std::string>().rfind("memory planned, not run: one call would take about ", 0), 0u)
      << huge["reason"];
  EXPECT_NE(huge["reason"].get<std::string>().find("its rate on a small case of the same kind (b1 h8 q"),
            std::string::npos)
      << huge["reason"];
  EXPECT_GT(huge["memory"]["peak_bytes"].get<double>(), small["memory"]["peak_bytes"].get<double>() * 100);
  EXPECT_TRUE(document["host"]["calibration"].is_object()) << "the estimate that planned it needs the host's rate";

  const CommandResult report = run_attnbench("report " + results.string() + " --table memory");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find(" p |"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("p: planned"), std::string::npos) << report.output;
  fs::remove_all(directory);
}

// The shipped Table 21 planned without a GPU (run --memory-only): the paper's
// PyTorch OOM from 8k shows as OOM, small footprints read as numbers (not
// 1.97e-02, in LaTeX neither), the title names no paper the run did not
// reproduce, and the report says the memory was planned for a device that did
// not run rather than "no device".
TEST(CliMemoryOnly, TheShippedTable21PlannedHereShowsThePapersOomAndReadableNumbers) {
  const Json info = Json::parse(run_attnbench("info --json", Capture::stdout_only).output);
  if (!info["tool"]["cuda_built"].get<bool>()) GTEST_SKIP() << "built without CUDA: cuda.* names are unknown here";
  const fs::path directory = fresh_temp_directory("cli_table21");
  const fs::path results = directory / "t21.json";
  const CommandResult run = run_attnbench("run " + scenario_path("paper/table21_memory.json") +
                                          " --memory-only --impl cuda.flash,cuda.cublas -o " + results.string());
  if (run.output.find("memory planned, not run: its device is not here") == std::string::npos &&
      attnbench::load_results_file(results.string())["devices"].size() > 0) {
    GTEST_SKIP() << "a GPU is here: the records are measured, not planned";
  }
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const CommandResult report = run_attnbench("report " + results.string() + " --table memory");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_EQ(report.output.find("e-0"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("|             0.020 p |"), std::string::npos) << "cuda.flash at N 128, 0.0197 GiB:\n"
                                                                  << report.output;
  EXPECT_EQ(report.output.find("Table 21)"), std::string::npos) << report.output;
  // The PyTorch column (the second published one) says OOM from 8k on, and has numbers before.
  std::istringstream lines(report.output);
  std::size_t oom_rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("|  8192 ", 0) == 0 || line.rfind("| 65536 ", 0) == 0) {
      EXPECT_NE(line.find("OOM"), std::string::npos) << line;
      ++oom_rows;
    }
    if (line.rfind("|  4096 ", 0) == 0) EXPECT_EQ(line.find("OOM"), std::string::npos) << line;
  }
  EXPECT_EQ(oom_rows, 2u) << report.output;
  EXPECT_NE(report.output.find("OOM: PyTorch (A100)"), std::string::npos) << "the marker's reason:\n" << report.output;

  const CommandResult latex = run_attnbench("report " + results.string() + " --table memory --format latex");
  ASSERT_EQ(latex.exit_code, 0) << latex.output;
  EXPECT_EQ(latex.output.find("e-0"), std::string::npos) << latex.output;
  const Json json =
      Json::parse(run_attnbench("report " + results.string() + " --table memory --format json", Capture::stdout_only)
                      .output);
  EXPECT_EQ(json["ran_on"], Json::array({"cuda (planned, not run)"})) << json["ran_on"];
  fs::remove_all(directory);
}

}  // namespace
