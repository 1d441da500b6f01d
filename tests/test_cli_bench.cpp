// End to end: `attnbench bench`, one shape or a sweep from flags. The results
// file is the same as `run`'s (schema-valid) and records the scenario the flags
// built; bad flags are named; `bench` has every option `run` has.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

// Few samples, hot cache: the tests are about what runs, not how fast.
const std::string kQuickMeasure = " --hot";

class Bench : public TempDirectoryTest {};

TEST_F(Bench, CausalGqaBf16ForwardAndBackwardRunsEndToEnd) {
  const fs::path output = path("bench.json");
  const CommandResult run = run_attnbench(
      "bench --batch 2 --heads 4 --kv-heads 2 --seqlen 48 --head-dim 16 --causal --dtype bf16 --direction fwd+bwd "
      "--impl cpu.flash,cpu.standard -o " + output.string() + kQuickMeasure);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(output);
  expect_results_schema_valid(results);
  EXPECT_TRUE(results["complete"].get<bool>());

  ASSERT_EQ(results["scenarios"].size(), 1u);
  const Json& scenario = results["scenarios"][0];
  EXPECT_EQ(scenario["name"], "bench");
  EXPECT_EQ(scenario["path"], "(command line)");
  EXPECT_EQ(scenario["source"]["defaults"],
            (Json{{"batch", 2}, {"heads", 4}, {"kv_heads", 2}, {"seqlen", 48}, {"head_dim", 16}, {"dtype", "bf16"},
                  {"causal", true}, {"direction", "fwd+bwd"}}))
      << "the scenario the flags built is recorded";
  EXPECT_EQ(scenario["implementations"], (Json{"cpu.flash", "cpu.standard"}));

  ASSERT_EQ(results["records"].size(), 2u);
  for (const Json& record : results["records"]) {
    SCOPED_TRACE(record["implementation"].get<std::string>());
    EXPECT_EQ(record["status"], "ok") << record["reason"];
    const Json& p = record["problem"];
    EXPECT_EQ(p["heads"], 4);
    EXPECT_EQ(p["kv_heads"], 2);
    EXPECT_EQ(p["dtype"], "bf16");
    EXPECT_EQ(p["direction"], "fwd+bwd");
    EXPECT_TRUE(p["causal"].get<bool>());
    EXPECT_EQ(record["accuracy"]["status"], "passed");
    EXPECT_TRUE(record["accuracy"]["tensors"].contains("dK"));
  }
}

TEST_F(Bench, AListOfValuesMakesASweepAxis) {
  const fs::path output = path("sweep.json");
  const CommandResult run = run_attnbench("bench --batch 1 --heads 2 --head-dim 16 --seqlen 16 --causal false,true "
                                          "--window [4,0],[8,0] --impl cpu.flash --name tiny_sweep -o " +
                                          output.string() + kQuickMeasure);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(output);
  expect_results_schema_valid(results);
  EXPECT_EQ(results["scenarios"][0]["name"], "tiny_sweep");
  EXPECT_EQ(results["scenarios"][0]["source"]["sweep"], (Json{{"causal", {false, true}}, {"window", {{4, 0}, {8, 0}}}}));
  EXPECT_EQ(results["scenarios"][0]["source"]["defaults"]["seqlen"], 16);
  std::set<std::string> keys;
  for (const Json& record : results["records"]) keys.insert(record["case_key"].get<std::string>());
  EXPECT_EQ(keys.size(), 4u) << "2 causal x 2 windows";
  EXPECT_NE(run.output.find("tiny_sweep#3"), std::string::npos) << run.output;
}

TEST_F(Bench, PrintScenarioWritesAScenarioFileThatValidates) {
  const CommandResult printed = run_attnbench(
      "bench --tokens 64 --hidden 32 --head-dim 16 --seqlen 16,32 --dropout 0.1 --print-scenario", Capture::stdout_only);
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  const Json scenario = Json::parse(printed.output);  // nothing else on stdout: nothing ran
  EXPECT_EQ(scenario["defaults"]["dropout"], 0.1);
  EXPECT_EQ(scenario["sweep"]["seqlen"], (Json{16, 32}));
  const fs::path file = write("printed.json", printed.output);
  const CommandResult validate = run_attnbench("validate " + file.string());
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("ok (scenario \"bench\", 2 cases)"), std::string::npos) << validate.output;
}

TEST_F(Bench, BadFlagsAreNamedAtOnceAndNothingIsWritten) {
  const fs::path output = path("never.json");
  const CommandResult bad = run_attnbench("bench --batch 0 --heads 4 --kv-heads 3 --seqlen 16 --dtype fp8 -o " +
                                          output.string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("attnbench: error: --head-dim: required"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("attnbench: error: --batch: must be >= 1"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("attnbench: error: --dtype: \"fp8\" is not allowed; allowed values: \"fp16\", \"bf16\""),
            std::string::npos)
      << bad.output;
  EXPECT_FALSE(fs::exists(output));

  const CommandResult divide = run_attnbench("bench --batch 1 --heads 4 --kv-heads 3 --seqlen 16 --head-dim 8 -o " +
                                             output.string());
  EXPECT_EQ(divide.exit_code, 2) << divide.output;
  EXPECT_NE(divide.output.find("--kv-heads: must divide heads (4), got 3"), std::string::npos) << divide.output;

  const CommandResult point = run_attnbench("bench --batch 1 --heads 2 --seqlen 16,abc --head-dim 8 -o " +
                                            output.string());
  EXPECT_EQ(point.exit_code, 2) << point.output;
  EXPECT_NE(point.output.find("--seqlen (value 2): expected an integer"), std::string::npos) << point.output;

  const CommandResult unknown = run_attnbench("bench --batch 1 --heads 2 --seqlen 16 --head-dim 8 --impl cpu.nope -o " +
                                              output.string());
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_FALSE(fs::exists(output));
}

// The long option names of a subcommand's --help.
std::set<std::string> options_in_help(const std::string& subcommand) {
  const CommandResult help = run_attnbench(subcommand + " --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  std::set<std::string> names;
  const std::regex option(R"((?:^|[\s,])(--[a-z][a-z0-9-]*))");
  for (std::sregex_iterator it(help.output.begin(), help.output.end(), option), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

TEST_F(Bench, ACaseOfMinutesIsAnnouncedBeforeItStarts) {
  // The README's GPU-sized case, longer still: 13 calls of 3.8e12 FLOP take
  // minutes on one thread of any CPU; the run calibrates the host (it has that
  // much host work), measures cpu.flash on a small case of the same kind (the
  // host's GEMM rate would promise far less than attention reaches) and says
  // so before the case, then the test stops it.
  const BoundedResult run = run_attnbench_bounded(
      {"bench", "--batch", "1", "--heads", "16", "--kv-heads", "4", "--seqlen", "16384", "--head-dim", "64",
       "--direction", "fwd+bwd", "--impl", "cpu.flash", "--threads", "1", "-o", path("long.json").string()},
      60, rlim_t{4} << 30, "Ctrl-C stops the run");
  EXPECT_FALSE(run.timed_out) << run.output;
  const std::regex note(
      "attnbench: note: bench#0 on cpu.flash will take about [0-9]+ (min|h [0-9]+ min|days [0-9]+ h): 13 calls of "
      "3\\.85e\\+12 FLOP at [0-9.]+ [GMT]FLOP/s, its rate on a small case of the same kind \\(b1 h16/4 q[0-9]+ k[0-9]+ "
      "d64 fp16 fwd\\+bwd, measured first\\)");
  EXPECT_TRUE(std::regex_search(run.output, note)) << run.output;
}

TEST_F(Bench, HasEveryOptionOfRunAndAFlagPerProblemKey) {
  const std::set<std::string> run = options_in_help("run");
  const std::set<std::string> bench = options_in_help("bench");
  ASSERT_GT(run.size(), 10u);
  for (const std::string& option : run) EXPECT_TRUE(bench.count(option)) << "bench lacks run's " << option;
  const Json schema = read_json(std::string(ATTNBENCH_SOURCE_DIR) + "/scenarios/scenario.schema.json");
  for (const auto& [key, definition] : schema["$defs"]["problem"]["properties"].items()) {
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_TRUE(bench.count(flag)) << "no flag for the problem key " << key;
  }
}

}  // namespace
}  // namespace attnbench
