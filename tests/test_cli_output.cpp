// End to end: what a first run shows. validate keeps the "ok" of sound files
// and skips JSON Schemas; list shows the cases of scenarios whose
// implementations cannot run here; parser errors carry the attnbench prefix;
// help shows no raw defaults; the run summary fits 80 columns, counts every
// status, prints throughput that does not round to zero and one path per
// output; info aligns its names; counts agree with their nouns.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "cli_test_support.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

using Output = TempDirectoryTest;

const char* kOneCase = R"({
  "name": "one", "description": "one tiny case",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 33, "seqlen_k": 20},
  "implementations": ["cpu.flash"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
              "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05}
})";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST_F(Output, ValidateKeepsTheOkOfSoundFilesAndSkipsJsonSchemas) {
  const fs::path bad = write("bad.json", R"({"name": "bad", "description": "d",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "head_dim": 8, "dtype": "fp8"}})");
  const std::string schema = scenario_path("scenario.schema.json");
  const CommandResult validate = run_attnbench("validate " + scenario_path("quick.json") + " " + bad.string() + " " +
                                               schema + " " + scenario_path("edge_cases.json"));
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_NE(validate.output.find("quick.json: ok (scenario \"quick\", 8 cases)"), std::string::npos) << validate.output;
  EXPECT_NE(validate.output.find("edge_cases.json: ok"), std::string::npos) << validate.output;
  EXPECT_NE(validate.output.find(schema + ": skipped (a JSON Schema, not a scenario)"), std::string::npos)
      << validate.output;
  EXPECT_NE(validate.output.find("bad.json: defaults.dtype"), std::string::npos) << validate.output;
  EXPECT_EQ(occurrences(validate.output, "attnbench: error:"), 1u) << "the schema file adds no errors:\n"
                                                                   << validate.output;

  const CommandResult schemas = run_attnbench("validate " + scenario_path("quick.json") + " " + schema + " " +
                                              scenario_path("results.schema.json") + " " +
                                              scenario_path("compare.schema.json"));
  EXPECT_EQ(schemas.exit_code, 0) << schemas.output;

  const CommandResult run = run_attnbench("run " + schema + " -o " + path("x.json").string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(occurrences(run.output, "attnbench: error:"), 1u) << run.output;
  EXPECT_NE(run.output.find("is a JSON Schema"), std::string::npos) << run.output;
}

TEST_F(Output, ABadKeyInDefaultsIsReportedOnceAtItsKey) {
  const fs::path bad = write("gqa.json", R"({"name": "gqa", "description": "d",
    "defaults": {"batch": 1, "heads": 4, "kv_heads": 3, "seqlen": 16, "head_dim": 8},
    "cases": [{"direction": "fwd"}, {"direction": "bwd"}, {"direction": "fwd+bwd"}],
    "sweep": {"causal": [false, true]}})");
  const CommandResult validate = run_attnbench("validate " + bad.string());
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_EQ(occurrences(validate.output, "kv_heads"), 1u) << validate.output;
  EXPECT_NE(validate.output.find("gqa.json: defaults.kv_heads: must divide heads (4), got 3 (in all 6 cases)"),
            std::string::npos)
      << validate.output;
}

TEST_F(Output, ScenariosOfImplementationsThatCannotRunHereAreListed) {
  const Json info = Json::parse(run_attnbench("info --json", Capture::stdout_only).output);
  std::string unavailable;
  for (const Json& entry : info["implementations"]) {
    if (!entry["available"].get<bool>()) unavailable = entry["name"];
  }
  if (unavailable.empty()) GTEST_SKIP() << "every implementation of this build can run here";

  std::string text = kOneCase;
  text.replace(text.find("\"cpu.flash\""), 11, "\"cpu.flash\", \"" + unavailable + "\"");
  const fs::path scenario = write("mixed.json", text);
  const CommandResult list = run_attnbench("list " + scenario.string());
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find(unavailable + " cannot run here: "), std::string::npos) << list.output;
  EXPECT_TRUE(std::regex_search(list.output, std::regex("\n +cpu\\.flash +runs\n"))) << list.output;
  const std::string escaped = std::regex_replace(unavailable, std::regex("\\."), "\\.");
  EXPECT_TRUE(std::regex_search(list.output, std::regex("\n +" + escaped + " +cannot run here\n"))) << list.output;

  const Json listing = Json::parse(run_attnbench("list --json " + scenario.string(), Capture::stdout_only).output);
  const Json& verdict = listing["scenarios"][0]["cases"][0]["implementations"][unavailable];
  EXPECT_FALSE(verdict["runs"].get<bool>());
  EXPECT_FALSE(verdict["available"].get<bool>());
  EXPECT_FALSE(verdict["reason"].get<std::string>().empty());
  EXPECT_EQ(listing["scenarios"][0]["cases"].size(), 1u) << "the same cases as where it can run";

  // Running it here is still refused before anything is written.
  const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("r.json").string());
  EXPECT_EQ(run.exit_code, 4) << run.output;
  EXPECT_FALSE(fs::exists(path("r.json")));
}

TEST_F(Output, TheShippedGpuScenariosListWhereverTheirNamesAreKnown) {
  const Json info = Json::parse(run_attnbench("info --json", Capture::stdout_only).output);
  if (!info["tool"]["cuda_built"].get<bool>()) GTEST_SKIP() << "built without CUDA: cuda.* names are unknown here";
  for (const char* name : {"fa2/bwd.json", "paper/table21_memory.json"}) {
    const CommandResult list = run_attnbench("list " + scenario_path(name));
    EXPECT_EQ(list.exit_code, 0) << name << "\n" << list.output;
    const CommandResult validate = run_attnbench("validate " + scenario_path(name));
    ASSERT_EQ(validate.exit_code, 0) << validate.output;
    const std::size_t cases = std::stoul(validate.output.substr(validate.output.rfind(", ") + 2));
    EXPECT_NE(list.output.find(": " + std::to_string(cases) + " cases"), std::string::npos) << list.output;
  }
}

TEST_F(Output, ParserErrorsCarryThePrefixAndExitTwo) {
  for (const std::string& arguments : {std::string("frobnicate"), std::string("run --bogus x.json"),
                                       std::string("run"), std::string("report")}) {
    const CommandResult result = run_attnbench(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments;
    EXPECT_EQ(result.output.rfind("attnbench: error: ", 0), 0u) << arguments << ":\n" << result.output;
    EXPECT_NE(result.output.find("--help"), std::string::npos) << result.output;
  }
  EXPECT_NE(run_attnbench("run --bogus x.json").output.find("attnbench run --help"), std::string::npos);
}

TEST_F(Output, UnknownCommandsAndFlagsAreNamedWithTheNearestOne) {
  const auto error_of = [](const std::string& arguments) {
    const CommandResult result = run_attnbench(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments;
    return result.output;
  };
  EXPECT_NE(error_of("rn x.json").find("attnbench: error: unknown command \"rn\" (did you mean \"run\"?); the "
                                       "commands are run, bench, list"),
            std::string::npos);
  EXPECT_NE(error_of("run x.json --impls cpu.flash").find("unknown flag \"--impls\" for run (did you mean \"--impl\"?)"),
            std::string::npos);
  EXPECT_NE(error_of("bench --seq-len 128").find("unknown flag \"--seq-len\" for bench (did you mean \"--seqlen\"?)"),
            std::string::npos);
  const std::string threshold = error_of("compare a.json b.json --time-treshold 0.1");
  EXPECT_NE(threshold.find("unknown flag \"--time-treshold\" for compare (did you mean \"--time-threshold\"?)"),
            std::string::npos)
      << threshold;
  EXPECT_EQ(threshold.find("were not expected"), std::string::npos) << threshold;
  EXPECT_NE(error_of("bench --batch 1 --heads 1 --seqlen 16 --head-dim 16 --window 32,0")
                .find("--window: got \"32,0\", read as 2 separate values; one value is a JSON array: write "
                      "--window '[32,0]'"),
            std::string::npos);
}

TEST_F(Output, HotAndColdAreExclusiveWithoutGarblingTheHelp) {
  const std::string help = run_attnbench("run --help").output;
  EXPECT_EQ(help.find("Excludes"), std::string::npos) << help;
  EXPECT_NE(help.find("  --hot "), std::string::npos) << help;
  const CommandResult both = run_attnbench("run x.json --hot --cold");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.output.find("--hot and --cold: give one of them, not both"), std::string::npos) << both.output;
}

TEST_F(Output, EveryWriterCreatesMissingDirectoriesAndRefusesOnlyWhereItCannot) {
  const fs::path scenario = write("one.json", kOneCase);
  const std::string results = path("new/run/r.json").string();
  const CommandResult run = run_attnbench("run " + scenario.string() + " --threads 1 -o " + results);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<std::pair<std::string, std::string>> writers = {
      {"report " + results + " --table seqlen -o ", "report/a/t.md"},
      {"merge " + results + " -o ", "merge/a/m.json"},
      {"compare " + results + " " + results + " --allow-noisy --markdown ", "compare/md/s.md"},
      {"compare " + results + " " + results + " --allow-noisy --junit ", "compare/junit/j.xml"},
      {"compare " + results + " " + results + " --allow-noisy --json ", "compare/json/c.json"}};
  for (const auto& [command, output] : writers) {
    const CommandResult written = run_attnbench(command + path(output).string());
    EXPECT_EQ(written.exit_code, 0) << command << output << "\n" << written.output;
    EXPECT_TRUE(fs::is_regular_file(path(output))) << output;
  }
  // Under a file no directory can be made: exit 2, naming the flag and the directory.
  write("plain", "a file");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"run " + scenario.string() + " -o ", "-o: cannot create the directory"},
      {"report " + results + " --table seqlen -o ", "-o: cannot create the directory"},
      {"merge " + results + " -o ", "-o: cannot create the directory"},
      {"compare " + results + " " + results + " --markdown ", "--markdown: cannot create the directory"}};
  for (const auto& [command, message] : refused) {
    const CommandResult result = run_attnbench(command + path("plain/out").string());
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_NE(result.output.find(message + " \"" + path("plain").string() + "\""), std::string::npos)
        << command << "\n" << result.output;
  }
}

TEST_F(Output, DoctorListsEachCheckWithItsLevelAndFix) {
  const CommandResult doctor = run_attnbench("doctor --threads 1 --json");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.output;
  const nlohmann::ordered_json findings = nlohmann::ordered_json::parse(doctor.output);
  ASSERT_TRUE(findings.is_array());
  std::set<std::string> checks;
  for (const auto& finding : findings) {
    checks.insert(finding["check"].get<std::string>());
    EXPECT_TRUE(finding["level"] == "ok" || finding["level"] == "note" || finding["level"] == "warn") << finding;
    if (finding["level"] == "warn") EXPECT_FALSE(finding["fix"].get<std::string>().empty()) << finding;
  }
  for (const char* check : {"load", "steal", "governor"}) EXPECT_TRUE(checks.count(check)) << check;
  const CommandResult text = run_attnbench("doctor --threads 1");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_TRUE(text.output.find("fit for benchmarking") != std::string::npos ||
              text.output.find("finding(s) can change timings") != std::string::npos)
      << text.output;
  EXPECT_EQ(run_attnbench("doctor --threads 0").exit_code, 2);
}

TEST_F(Output, HelpShowsNoRawFlagDefaults) {
  for (const char* subcommand : {"run", "bench", "list", "validate", "info", "doctor", "compare", "report", "merge"}) {
    const CommandResult help = run_attnbench(std::string(subcommand) + " --help");
    EXPECT_EQ(help.exit_code, 0) << subcommand;
    EXPECT_EQ(help.output.find("{false}"), std::string::npos) << subcommand << ":\n" << help.output;
    EXPECT_EQ(help.output.find("{true}"), std::string::npos) << subcommand << ":\n" << help.output;
  }
  EXPECT_NE(run_attnbench("run --help").output.find("--no-profile "), std::string::npos);
}

TEST_F(Output, TheRunSummaryFitsEightyColumnsAndCountsEveryStatus) {
  // One case that runs and one far too large for the machine (skipped with the numbers).
  const fs::path scenario = write("mixed.json", R"({"name": "mixed", "description": "ok and skipped",
    "defaults": {"heads": 2, "head_dim": 16},
    "cases": [{"batch": 1, "seqlen": 24}, {"batch": 4096, "heads": 64, "seqlen": 65536, "head_dim": 128}],
    "implementations": ["cpu.flash", "cpu.standard"],
    "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
                "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05}})");
  const fs::path dump = path("arrays");
  const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("r.json").string() +
                                              " --dump " + dump.string() + "/",
                                          Capture::stdout_only);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const std::string& line : lines_of(run.output)) {
    if (line.find(directory_.string()) != std::string::npos) continue;  // paths aside
    EXPECT_LE(line.size(), 80u) << line;
  }
  EXPECT_NE(run.output.find("4 records: 2 ok, 2 skipped, 0 failed. Results: "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("FLOP/s"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(" 0.0000"), std::string::npos) << "no throughput rounded to zero:\n" << run.output;
  EXPECT_NE(run.output.find("Arrays: " + dump.string() + "/index.json\n"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("//"), std::string::npos) << run.output;
}

TEST_F(Output, CountsAgreeWithTheirNouns) {
  const fs::path scenario = write("one.json", kOneCase);
  const CommandResult validate = run_attnbench("validate " + scenario.string());
  EXPECT_NE(validate.output.find("ok (scenario \"one\", 1 case)"), std::string::npos) << validate.output;
  const CommandResult list = run_attnbench("list " + scenario.string());
  EXPECT_NE(list.output.find("): 1 case\n"), std::string::npos) << list.output;
  const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("one_results.json").string());
  EXPECT_NE(run.output.find("1 record: 1 ok, 0 skipped, 0 failed"), std::string::npos) << run.output;
  const CommandResult merge = run_attnbench("merge " + path("one_results.json").string() + " -o " +
                                            path("merged.json").string());
  EXPECT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_NE(merge.output.find("Merged 1 file: 1 record, complete."), std::string::npos) << merge.output;
}

TEST_F(Output, InfoAlignsImplementationNamesWithinEightyColumns) {
  const CommandResult info = run_attnbench("info", Capture::stdout_only);
  ASSERT_EQ(info.exit_code, 0) << info.output;
  const Json parsed = Json::parse(run_attnbench("info --json", Capture::stdout_only).output);
  std::size_t longest = 0;
  for (const Json& entry : parsed["implementations"]) longest = std::max(longest, entry["name"].get<std::string>().size());
  const std::vector<std::string> lines = lines_of(info.output);
  const auto section = std::find(lines.begin(), lines.end(), "implementations:");
  ASSERT_NE(section, lines.end()) << info.output;
  std::size_t named = 0;
  for (auto line = section + 1; line != lines.end(); ++line) {
    EXPECT_LE(line->size(), 80u) << *line;
    // Every summary (and every continuation line) starts in the column after the longest name.
    ASSERT_GT(line->size(), 2 + longest + 2) << *line;
    EXPECT_EQ(line->substr(2 + longest, 2), "  ") << *line;
    EXPECT_NE((*line)[2 + longest + 2], ' ') << *line;
    named += (*line)[2] != ' ' ? 1 : 0;
  }
  EXPECT_EQ(named, parsed["implementations"].size());
}

}  // namespace
}  // namespace attnbench
