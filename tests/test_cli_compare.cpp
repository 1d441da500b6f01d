// End to end: `attnbench compare` on results files written by `attnbench run`
// of a tiny CPU scenario and on hand-edited copies of them — exit codes, the
// Markdown, JUnit XML and JSON outputs, and that bad input or a refusal writes
// no output file.
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

std::size_t occurrences(const std::string& text, const std::string& pattern) {
  std::size_t count = 0;
  for (auto at = text.find(pattern); at != std::string::npos; at = text.find(pattern, at + 1)) ++count;
  return count;
}

// Two cases on three CPU implementations, exactly ten samples each.
const char* kTinyScenario = R"({
  "name": "tiny", "description": "two small cases",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 33, "seqlen_k": 20},
  "cases": [{"direction": "fwd"}, {"direction": "fwd+bwd", "causal": true}],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 10,
              "max_samples": 10, "min_seconds": 0, "max_seconds": 5}
})";

// Two real runs of the scenario, made once for every test.
class CliCompare : public TempDirectoryTest {
 protected:
  static void SetUpTestSuite() {
    // Per process: ctest runs each test in its own process, possibly in parallel.
    shared_ = fresh_temp_directory("cli_compare_runs");
    std::ofstream(shared_ / "tiny.json") << kTinyScenario;
    for (const char* name : {"run_a.json", "run_b.json"}) {
      // One thread: an OpenMP barrier on an oversubscribed machine can make a
      // tiny case hundreds of times slower.
      const CommandResult run = run_attnbench("run " + (shared_ / "tiny.json").string() + " --threads 1 -o " +
                                              (shared_ / name).string());
      ASSERT_EQ(run.exit_code, 0) << run.output;
      // These tests are about matching, statuses and tolerances; whether this
      // machine made the samples noisy is docs/compare.md's "Noise and rounds",
      // tested on synthetic samples. The files then read as written before
      // records carried a noise verdict.
      Json document = read_json((shared_ / name).string());
      for (Json& record : document["records"]) {
        if (record["timing"].is_object()) record["timing"].erase("noise");
      }
      write_json((shared_ / name).string(), document);
    }
  }
  static void TearDownTestSuite() { fs::remove_all(shared_); }

  static std::string run_a() { return (shared_ / "run_a.json").string(); }
  static std::string run_b() { return (shared_ / "run_b.json").string(); }
  static Json load(const std::string& path) { return read_json(path); }
  // This suite builds command lines from paths as strings.
  std::string path(const std::string& name) const { return TempDirectoryTest::path(name).string(); }
  std::string write(const std::string& name, const Json& document) const {
    write_json(path(name), document);
    return path(name);
  }
  std::string outputs() const {
    return " --markdown " + path("summary.md") + " --junit " + path("junit.xml") + " --json " + path("compare.json");
  }
  void expect_no_outputs() const {
    for (const char* name : {"summary.md", "junit.xml", "compare.json"}) EXPECT_FALSE(fs::exists(path(name))) << name;
  }

  static fs::path shared_;
};

fs::path CliCompare::shared_;

TEST_F(CliCompare, TwoRunsOfTheSameScenarioMatchEveryCell) {
  // The machine's load may change between the runs (other jobs share its
  // cores): time is judged very loosely here, the rest exactly.
  const CommandResult compare = run_attnbench("compare " + run_a() + " " + run_b() + " --time-threshold 50" + outputs());
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  const Json json = load(path("compare.json"));
  EXPECT_EQ(json["schema"], "attnbench.compare/1");
  EXPECT_EQ(json["summary"]["cells"], 6);
  EXPECT_EQ(json["summary"]["regression"], 0);
  EXPECT_EQ(json["summary"]["only_in_base"], 0);
  EXPECT_EQ(json["settings"]["defaults"]["time_threshold"], 50.0);
  for (const Json& cell : json["cells"]) {
    if (cell["implementation"] == "cpu.reference") {
      EXPECT_EQ(cell["metrics"]["time"]["summary"], "time: not judged (the fp64 oracle)");
    } else {
      EXPECT_TRUE(cell["metrics"]["time"]["ratio"].is_number()) << cell["case_key"];
    }
    EXPECT_EQ(cell["metrics"]["peak_memory"]["verdict"], "pass") << cell["implementation"];
  }
  EXPECT_NE(compare.output.find("6 cells compared: 0 regressions, 0 inconclusive"), std::string::npos) << compare.output;
  // 80 columns: a row of verdicts per cell, the cell itself (its case key alone
  // may be longer) on the indented line below; the input paths aside.
  std::istringstream lines(compare.output);
  std::size_t rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("pass ", 0) == 0) ++rows;
    if (line.rfind("  tiny/", 0) == 0 || line.rfind("attnbench compare: BASE ", 0) == 0) continue;
    EXPECT_LE(line.size(), 80u) << line;
  }
  EXPECT_EQ(rows, 6u) << compare.output;
}

TEST_F(CliCompare, AnIdenticalFilePassesWithExitZero) {
  const CommandResult compare = run_attnbench("compare " + run_a() + " " + write("copy.json", load(run_a())) + outputs());
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  EXPECT_NE(compare.output.find("result: pass (exit 0)"), std::string::npos) << compare.output;
  const std::string junit = read_text(path("junit.xml"));
  EXPECT_EQ(occurrences(junit, "<testcase "), 6u) << junit;
  EXPECT_EQ(occurrences(junit, "<failure "), 0u) << junit;
  EXPECT_NE(read_text(path("summary.md")).find("## attnbench compare: pass (exit 0)"), std::string::npos);
  EXPECT_EQ(load(path("compare.json"))["exit_code"], 0);
}

TEST_F(CliCompare, ACellSlowedByThirtyPercentFailsWithExitOneAndIsNamedInJUnit) {
  // On a loaded machine one cell's samples may spread by more than 30%; the
  // gate's power is tested on synthetic samples (test_compare_statistics), so
  // here the cell first gets ten tight samples around its median in both files.
  Json base = load(run_a());
  Json& timing = base["records"][0]["timing"];
  const double median = timing["statistics"]["p50"];
  for (std::size_t k = 0; k < timing["samples_seconds"].size(); ++k) {
    timing["samples_seconds"][k] = median * (1.0 + 0.001 * static_cast<double>(k));
  }
  Json slower = base;
  Json& record = slower["records"][0];
  for (Json& sample : record["timing"]["samples_seconds"]) sample = sample.get<double>() * 1.3;
  const std::string case_key = record["case_key"], implementation = record["implementation"];

  const CommandResult compare =
      run_attnbench("compare " + write("base.json", base) + " " + write("slower.json", slower) + outputs());
  EXPECT_EQ(compare.exit_code, 1) << compare.output;
  EXPECT_NE(compare.output.find("regression   +30.0% ["), std::string::npos) << compare.output;

  const std::string junit = read_text(path("junit.xml"));
  EXPECT_EQ(occurrences(junit, "<testcase "), 6u) << junit;
  ASSERT_EQ(occurrences(junit, "<failure "), 1u) << junit;
  const std::string failed_case = "<testcase classname=\"tiny." + implementation + "\" name=\"" + case_key + "\">\n" +
                                  "      <failure type=\"regression\" message=\"time +30.0% [";
  EXPECT_NE(junit.find(failed_case), std::string::npos) << junit;
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos);

  const std::string markdown = read_text(path("summary.md"));
  EXPECT_NE(markdown.find("**1 regression**"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("### Regressions"), std::string::npos);
  const Json json = load(path("compare.json"));
  EXPECT_EQ(json["exit_code"], 1);
  EXPECT_EQ(json["summary"]["regression"], 1);
  EXPECT_EQ(json["cells"][0]["verdict"], "regression");
  EXPECT_NEAR(json["cells"][0]["metrics"]["time"]["ratio"].get<double>(), 1.3, 1e-9);
}

TEST_F(CliCompare, AnInterruptedRunDoesNotPassUnlessMissingCellsAreAllowed) {
  // What Ctrl-C after the first case leaves: complete false, the records of one case.
  Json interrupted = load(run_a());
  interrupted["complete"] = false;
  interrupted["finished_at"] = nullptr;
  interrupted["records"].erase(interrupted["records"].begin() + 3, interrupted["records"].end());
  const std::string partial = write("interrupted.json", interrupted);
  CommandResult compare = run_attnbench("compare " + run_a() + " " + partial + " --time-threshold 50" + outputs());
  EXPECT_EQ(compare.exit_code, 3) << compare.output;
  EXPECT_NE(compare.output.find("3 cells that ran in BASE are missing from NEW:"), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("result: not comparable: NEW is an unfinished run"), std::string::npos)
      << compare.output;
  EXPECT_NE(read_text(path("summary.md")).find("## attnbench compare: not comparable: NEW is an unfinished run"),
            std::string::npos);
  EXPECT_EQ(occurrences(read_text(path("junit.xml")), "<error "), 4u) << "the unfinished file and 3 missing cells";
  Json json = load(path("compare.json"));
  EXPECT_EQ(json["exit_code"], 3);
  EXPECT_EQ(json["summary"]["missing"], 3);

  // BASE unfinished: the cells only in NEW are reported, not failed; the file is.
  compare = run_attnbench("compare " + partial + " " + run_a() + " --time-threshold 50");
  EXPECT_EQ(compare.exit_code, 3) << compare.output;
  EXPECT_NE(compare.output.find("result: not comparable: BASE is an unfinished run (exit 3)"), std::string::npos)
      << compare.output;

  compare = run_attnbench("compare " + run_a() + " " + partial + " --time-threshold 50 --allow-missing" + outputs());
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  json = load(path("compare.json"));
  EXPECT_TRUE(json["settings"]["allow_missing"].get<bool>());
  EXPECT_EQ(json["missing"].size(), 3u);
}

TEST_F(CliCompare, MalformedInputExitsTwoAndWritesNothing) {
  std::ofstream(path("broken.json")) << R"({"schema": "attnbench.results/1", "records": [)";
  CommandResult compare = run_attnbench("compare " + run_a() + " " + path("broken.json") + outputs());
  EXPECT_EQ(compare.exit_code, 2) << compare.output;
  EXPECT_NE(compare.output.find(path("broken.json") + ": not valid JSON"), std::string::npos) << compare.output;
  expect_no_outputs();

  Json invalid = load(run_a());
  invalid["records"][0]["timing"]["samples_seconds"] = Json::array();
  compare = run_attnbench("compare " + write("invalid.json", invalid) + " /nonexistent.json" + outputs());
  EXPECT_EQ(compare.exit_code, 2) << compare.output;
  EXPECT_NE(compare.output.find("records[0].timing"), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("/nonexistent.json: cannot read the file"), std::string::npos) << "both files' problems";
  expect_no_outputs();
}

TEST_F(CliCompare, BadSettingsExitTwoNamingTheKeyOrFlag) {
  std::ofstream(path("gate.json")) << R"({"overrides": [{"match": "fwd", "time_treshold": 0.1}]})";
  CommandResult compare = run_attnbench("compare " + run_a() + " " + run_a() + " --config " + path("gate.json") + outputs());
  EXPECT_EQ(compare.exit_code, 2) << compare.output;
  EXPECT_NE(compare.output.find(path("gate.json") + ": overrides[0].time_treshold: unknown key"), std::string::npos)
      << compare.output;
  compare = run_attnbench("compare " + run_a() + " " + run_a() + " --alpha 0.9" + outputs());
  EXPECT_EQ(compare.exit_code, 2) << compare.output;
  EXPECT_NE(compare.output.find("--alpha: "), std::string::npos) << compare.output;
  const CommandResult negative = run_attnbench("compare " + run_a() + " " + run_a() + " --memory-slack -1");
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.output.find("--memory-slack: must be >= 0, got -1"), std::string::npos) << negative.output;
  EXPECT_EQ(run_attnbench("compare " + run_a()).exit_code, 2) << "NEW is required";
  const CommandResult overwrite = run_attnbench("compare " + run_a() + " " + run_a() + " --json " + run_a());
  EXPECT_EQ(overwrite.exit_code, 2) << overwrite.output;
  EXPECT_NO_THROW(load(run_a())) << "the input is intact";
  std::ofstream(path("settings.json")) << R"({"time_threshold": 0.1})";
  const CommandResult onto_config = run_attnbench("compare " + run_a() + " " + run_a() + " --config " +
                                                  path("settings.json") + " --json " + path("settings.json"));
  EXPECT_EQ(onto_config.exit_code, 2) << onto_config.output;
  const CommandResult same_output = run_attnbench("compare " + run_a() + " " + run_a() + " --markdown " +
                                                  path("o1.md") + " --junit " + TempDirectoryTest::path(".").string() + "/./o1.md");
  EXPECT_EQ(same_output.exit_code, 2) << same_output.output;
  EXPECT_FALSE(fs::exists(path("o1.md")));
  fs::create_directories(path("a_directory"));
  EXPECT_EQ(run_attnbench("compare " + run_a() + " " + run_a() + " --junit " + path("a_directory")).exit_code, 2);
  EXPECT_EQ(run_attnbench("compare " + run_a() + " " + run_a() + " --junit - --json -").exit_code, 2);
  expect_no_outputs();
}

TEST_F(CliCompare, DifferentDevicesAreRefusedWithTheReasonAndNoOutputs) {
  Json other = load(run_a());
  other["devices"][0]["name"] = "Another CPU";
  const std::string other_path = write("other.json", other);
  CommandResult compare = run_attnbench("compare " + run_a() + " " + other_path + outputs());
  EXPECT_EQ(compare.exit_code, 3) << compare.output;
  EXPECT_NE(compare.output.find("cpu name: "), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("\"Another CPU\" (NEW)"), std::string::npos) << compare.output;
  expect_no_outputs();

  compare = run_attnbench("compare " + run_a() + " " + other_path + " --allow-different-devices" + outputs());
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  EXPECT_FALSE(load(path("compare.json"))["devices"]["comparable"].get<bool>());
}

TEST_F(CliCompare, DifferentRunSettingsAreRefusedWithTheReasonAndNoOutputs) {
  Json other = load(run_a());  // run with --threads 1
  other["threads"] = 2;
  other["scenarios"][0]["measure"]["min_samples"] = 20;
  const std::string other_path = write("other.json", other);
  CommandResult compare = run_attnbench("compare " + run_a() + " " + other_path + outputs());
  EXPECT_EQ(compare.exit_code, 3) << compare.output;
  EXPECT_NE(compare.output.find("  threads: 1 (BASE) vs 2 (NEW)"), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("  tiny measure.min_samples: 10 (BASE) vs 20 (NEW)"), std::string::npos)
      << compare.output;
  EXPECT_NE(compare.output.find("--allow-different-settings"), std::string::npos) << compare.output;
  expect_no_outputs();

  compare = run_attnbench("compare " + run_a() + " " + other_path + " --allow-different-settings" + outputs());
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  EXPECT_NE(compare.output.find("run settings differ (allowed): threads: 1 (BASE) vs 2 (NEW)"), std::string::npos)
      << compare.output;
  EXPECT_NE(compare.output.find("time NEW/BASE geometric mean over 4 cells: +0.0% (ratio 1.0000)"),
            std::string::npos)
      << compare.output;
  const Json json = load(path("compare.json"));
  EXPECT_FALSE(json["run_settings"]["comparable"].get<bool>());
  EXPECT_TRUE(json["settings"]["allow_different_settings"].get<bool>());
  EXPECT_DOUBLE_EQ(json["summary"]["time_ratio_geometric_mean"].get<double>(), 1.0);
}

TEST_F(CliCompare, AThrottledRecordExitsThreeAndAConfigOverrideAppliesByRegex) {
  Json throttled = load(run_a());
  ASSERT_EQ(throttled["records"][2]["implementation"], "cpu.standard");
  throttled["records"][2]["timing"]["throttled"] = true;
  CommandResult compare = run_attnbench("compare " + run_a() + " " + write("throttled.json", throttled));
  EXPECT_EQ(compare.exit_code, 3) << compare.output;
  EXPECT_NE(compare.output.find("throttled (NEW)"), std::string::npos) << compare.output;

  Json slower = load(run_a());
  for (Json& record : slower["records"]) {
    if (record["implementation"] != "cpu.standard") continue;
    for (Json& sample : record["timing"]["samples_seconds"]) sample = sample.get<double>() * 1.3;
  }
  std::ofstream(path("gate.json")) << R"({
    // the materializing baseline may be slower by half
    "overrides": [{"match": "/cpu\\.standard$", "time_threshold": 0.5}]})";
  compare = run_attnbench("compare " + run_a() + " " + write("slower.json", slower) + " --config " + path("gate.json") +
                          " --json -",
                          Capture::stdout_only);
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  const Json json = Json::parse(compare.output);  // stdout holds only the JSON
  EXPECT_EQ(json["summary"]["pass"], 6);
  EXPECT_EQ(json["settings"]["overrides"][0]["time_threshold"], 0.5);
}

}  // namespace
}  // namespace attnbench
