// End to end: the attnbench binary on real scenario files — exit codes, the
// results file (schema-valid, complete, checkpointed, resumable), --dump, list,
// validate and info.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

class Cli : public TempDirectoryTest {};

// A tiny, fast scenario: one dense case and one masked backward case.
const char* kTinyScenario = R"({
  "name": "tiny", "description": "two small cases",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 33, "seqlen_k": 20},
  "cases": [{"direction": "fwd"}, {"direction": "fwd+bwd", "causal": true, "dropout": 0.1}],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
              "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05}
})";

TEST_F(Cli, QuickScenarioWritesAValidCompleteResultsFile) {
  const fs::path output = path("quick.json");
  const CommandResult run = run_attnbench("run " + scenario_path("quick.json") + " -o " + output.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("[8/8]"), std::string::npos) << "plain progress lines when not on a terminal";
  EXPECT_NE(run.output.find("24 records: 24 ok, 0 skipped, 0 failed"), std::string::npos) << run.output;

  const Json results = read_json(output);
  expect_results_schema_valid(results);
  EXPECT_EQ(results["schema"], "attnbench.results/1");
  EXPECT_TRUE(results["complete"].get<bool>());
  EXPECT_FALSE(results["finished_at"].is_null());
  ASSERT_EQ(results["records"].size(), 24u);
  for (const Json& record : results["records"]) {
    const std::string name = record["implementation"];
    SCOPED_TRACE(name + " " + record["case_key"].get<std::string>());
    EXPECT_EQ(record["status"], "ok") << record["reason"];
    EXPECT_GE(record["timing"]["samples_seconds"].size(), 1u);
    EXPECT_GT(record["flops"]["total"].get<double>(), 0);
    if (name == "cpu.reference") {
      EXPECT_EQ(record["accuracy"]["status"], "oracle");
      EXPECT_TRUE(record["traffic"]["counted"].is_null());
    } else {
      EXPECT_EQ(record["accuracy"]["status"], "passed");
      EXPECT_GT(record["traffic"]["counted"]["read_bytes"].get<double>(), 0);
    }
    if (name == "cpu.flash") {
      EXPECT_TRUE(record["accuracy"]["rule_applied"].get<bool>());
    }
  }
}

// The fused implementation's tile buffers are a constant of a few hundred KiB,
// so the materializing one's N^2 dominates from N 2048 on.
TEST_F(Cli, MaterializingExtraMemoryGrowsWithNSquaredAndFlashDoesNot) {
  const fs::path scenario = write("grow.json", R"({
    "name": "grow", "description": "memory against N",
    "defaults": {"batch": 1, "heads": 1, "head_dim": 16},
    "sweep": {"seqlen": [512, 2048]},
    "implementations": ["cpu.flash", "cpu.standard"],
    "accuracy": {"check": false},
    "measure": {"cache": "hot", "warmup_min_iterations": 0, "warmup_min_seconds": 0, "min_samples": 1,
                "max_samples": 1, "min_seconds": 0, "max_seconds": 1}})");
  const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("grow_results.json").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, std::vector<double>> extra;
  const Json results = read_json(path("grow_results.json"));
  for (const Json& record : results["records"]) {
    extra[record["implementation"].get<std::string>()].push_back(record["memory"]["extra_bytes"].get<double>());
  }
  ASSERT_EQ(extra["cpu.standard"].size(), 2u);
  EXPECT_GT(extra["cpu.standard"][1] / extra["cpu.standard"][0], 10.0);  // (2048/512)^2 = 16
  EXPECT_LT(extra["cpu.flash"][1] / extra["cpu.flash"][0], 2.0);
  EXPECT_GT(extra["cpu.standard"][1], 10 * extra["cpu.flash"][1]);
}

TEST_F(Cli, EdgeCasesPassWithoutNaN) {
  const fs::path output = path("edge.json");
  const CommandResult run = run_attnbench("run " + scenario_path("edge_cases.json") + " -o " + output.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(output);
  expect_results_schema_valid(results);
  for (const Json& record : results["records"]) {
    EXPECT_EQ(record["status"], "ok") << record["case_key"] << " " << record["implementation"] << ": " << record["reason"];
    for (const auto& [tensor, error] : record["accuracy"]["tensors"].items()) {
      EXPECT_EQ(error["nan"], 0) << tensor;
      EXPECT_EQ(error["inf"], 0) << tensor;
    }
  }
}

TEST_F(Cli, MalformedScenarioExitsTwoNamingEveryProblemAndWritesNothing) {
  const fs::path bad = write("bad.json", R"({"name": "bad", "description": "typos",
    "defaults": {"batch": 1, "heads": 2, "seqlen": 16, "hed_dim": 8, "dtype": "fp8"}})");
  const fs::path output = path("never.json");
  const CommandResult run = run_attnbench("run " + bad.string() + " -o " + output.string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(bad.string() + ": defaults.hed_dim: unknown key"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(bad.string() + ": defaults.dtype: \"fp8\" is not allowed; allowed values: \"fp16\", \"bf16\""),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_FALSE(fs::exists("results")) << "no default results directory either";

  const CommandResult validate = run_attnbench("validate " + bad.string());
  EXPECT_EQ(validate.exit_code, 2);
  EXPECT_NE(validate.output.find("hed_dim"), std::string::npos);
}

TEST_F(Cli, ACaseTooLargeForTheMachineIsSkippedWithTheNumbers) {
  // Possible in principle (Q has 2^41 elements), impossible on this machine.
  const fs::path scenario = write("huge.json", R"({"name": "huge", "description": "does not fit",
    "defaults": {"batch": 4096, "heads": 64, "seqlen": 65536, "head_dim": 128}})");
  const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("huge_results.json").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(path("huge_results.json"));
  expect_results_schema_valid(results);
  ASSERT_EQ(results["records"].size(), 3u);
  for (const Json& record : results["records"]) {
    EXPECT_EQ(record["status"], "skipped");
    const std::string reason = record["reason"];
    EXPECT_NE(reason.find("needs "), std::string::npos) << reason;
    EXPECT_NE(reason.find(" TiB"), std::string::npos) << reason;
    EXPECT_NE(reason.find("available"), std::string::npos) << reason;
    EXPECT_TRUE(record["timing"].is_null());
  }
}

TEST_F(Cli, BadRequestsExitTwo) {
  const fs::path tiny = write("tiny.json", kTinyScenario);
  EXPECT_EQ(run_attnbench("run /nonexistent.json -o " + path("x.json").string()).exit_code, 2);
  const CommandResult unknown = run_attnbench("run " + tiny.string() + " --impl cpu.nope -o " + path("x.json").string());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("unknown implementation \"cpu.nope\"; known: cpu.flash"), std::string::npos);
  EXPECT_EQ(run_attnbench("run " + tiny.string() + " --filter 'q9999' -o " + path("x.json").string()).exit_code, 2);
  EXPECT_EQ(run_attnbench("run " + tiny.string() + " --filter '(' -o " + path("x.json").string()).exit_code, 2);
  EXPECT_EQ(run_attnbench("run " + tiny.string() + " --resume").exit_code, 2);
  EXPECT_EQ(run_attnbench("run " + tiny.string() + " --threads 0").exit_code, 2);
  EXPECT_EQ(run_attnbench("frobnicate").exit_code, 2);
  EXPECT_FALSE(fs::exists(path("x.json")));
}

TEST_F(Cli, UnusableOutputsAreBadInputFoundBeforeAnythingIsWritten) {
  const fs::path tiny = write("tiny.json", kTinyScenario);
  fs::create_directories(path("a_directory"));
  const CommandResult directory = run_attnbench("run " + tiny.string() + " -o " + path("a_directory").string());
  EXPECT_EQ(directory.exit_code, 2) << directory.output;
  EXPECT_NE(directory.output.find("is a directory"), std::string::npos) << directory.output;

  const CommandResult unwritable = run_attnbench("run " + tiny.string() + " -o /proc/attnbench/out.json");
  EXPECT_EQ(unwritable.exit_code, 2) << unwritable.output;
  const CommandResult dump = run_attnbench("run " + tiny.string() + " -o " + path("r.json").string() +
                                           " --dump /proc/attnbench_dump");
  EXPECT_EQ(dump.exit_code, 2) << dump.output;
  EXPECT_FALSE(fs::exists(path("r.json")));

  // A file that is not a whole results file is never overwritten…
  write("unfinished.json", R"({"schema": "attnbench.results/1", "complete": false})");
  const CommandResult overwrite = run_attnbench("run " + tiny.string() + " -o " + path("unfinished.json").string());
  EXPECT_EQ(overwrite.exit_code, 2) << overwrite.output;
  EXPECT_NE(overwrite.output.find("exists and is not a finished results file; it is left as it is"), std::string::npos)
      << overwrite.output;
  // …and --resume refuses it when it is not a whole results file.
  const CommandResult corrupt =
      run_attnbench("run " + tiny.string() + " -o " + path("unfinished.json").string() + " --resume");
  EXPECT_EQ(corrupt.exit_code, 2) << corrupt.output;
  EXPECT_NE(corrupt.output.find("missing required key \"records\""), std::string::npos) << corrupt.output;
  for (const auto& entry : fs::directory_iterator(directory_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "stray temporary " << entry.path();
  }
}

TEST_F(Cli, AnAccuracyFailureFailsTheRunWithExitOne) {
  std::string text = kTinyScenario;
  text.insert(text.rfind('}'), R"(, "accuracy": {"bound": {"fp32": 1e-300}})");
  const fs::path scenario = write("strict.json", text);
  const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("strict_results.json").string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const Json results = read_json(path("strict_results.json"));
  expect_results_schema_valid(results);
  bool flash_failed = false;
  for (const Json& record : results["records"]) {
    if (record["implementation"] == "cpu.flash") {
      flash_failed = record["status"] == "failed" && record["reason"].get<std::string>().rfind("accuracy: O:", 0) == 0;
    }
  }
  EXPECT_TRUE(flash_failed);
}

TEST_F(Cli, ResumeKeepsFinishedRecordsAndRunsTheRest) {
  const fs::path tiny = write("tiny.json", kTinyScenario);
  const fs::path output = path("resume.json");
  ASSERT_EQ(run_attnbench("run " + tiny.string() + " -o " + output.string()).exit_code, 0);
  Json full = read_json(output);
  ASSERT_EQ(full["records"].size(), 6u);

  // Simulate a run interrupted after the first case: a checkpoint with 3 records.
  Json partial = full;
  partial["complete"] = false;
  partial["finished_at"] = nullptr;
  partial["records"].erase(partial["records"].begin() + 3, partial["records"].end());
  write_file_atomically(output.string(), partial.dump(1));

  const CommandResult resumed = run_attnbench("run " + tiny.string() + " -o " + output.string() + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("already in the results file"), std::string::npos) << resumed.output;
  const Json result = read_json(output);
  expect_results_schema_valid(result);
  EXPECT_TRUE(result["complete"].get<bool>());
  ASSERT_EQ(result["records"].size(), 6u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(result["records"][i]["timing"]["samples_seconds"], full["records"][i]["timing"]["samples_seconds"])
        << "finished records are kept, not rerun";
  }
  EXPECT_EQ(result["started_at"], full["started_at"]);

  const fs::path other = write("other.json", std::string(kTinyScenario).replace(11, 4, "othr"));
  EXPECT_EQ(run_attnbench("run " + other.string() + " -o " + output.string() + " --resume").exit_code, 2);
}

TEST_F(Cli, DumpWritesNumpyArraysWithAnIndex) {
  const fs::path tiny = write("tiny.json", kTinyScenario);
  const fs::path dump = path("arrays");
  const CommandResult run = run_attnbench("run " + tiny.string() + " --filter fwd\\\\+bwd --impl cpu.flash -o " +
                                          path("d.json").string() + " --dump " + dump.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json index = read_json(dump / "index.json");
  std::set<std::string> tensors;
  for (const Json& entry : index["arrays"]) {
    tensors.insert(entry["implementation"].get<std::string>() + ":" + entry["tensor"].get<std::string>());
    const fs::path file = dump / entry["file"].get<std::string>();
    ASSERT_TRUE(fs::exists(file)) << file;
    std::ifstream in(file, std::ios::binary);
    std::string head(128, '\0');
    in.read(head.data(), 128);
    EXPECT_EQ(head.substr(0, 6), "\x93NUMPY");
    EXPECT_NE(head.find("'descr': '" + entry["npy_descr"].get<std::string>() + "'"), std::string::npos);
    std::size_t elements = 1;
    for (const Json& extent : entry["shape"]) elements *= extent.get<std::size_t>();
    const std::size_t width = entry["dtype"] == "fp32" ? 4 : entry["dtype"] == "fp64" ? 8 : 2;
    const auto header = static_cast<std::size_t>(static_cast<unsigned char>(head[8]) | (static_cast<unsigned char>(head[9]) << 8));
    EXPECT_EQ(fs::file_size(file), 10 + header + elements * width) << file;
  }
  EXPECT_EQ(tensors, (std::set<std::string>{"inputs:Q", "inputs:K", "inputs:V", "inputs:dO", "cpu.flash:O",
                                            "cpu.flash:LSE", "cpu.flash:dQ", "cpu.flash:dK", "cpu.flash:dV"}));

  // Resuming the finished run with --dump keeps the index it wrote.
  const CommandResult resumed = run_attnbench("run " + tiny.string() + " --filter fwd\\\\+bwd --impl cpu.flash -o " +
                                              path("d.json").string() + " --dump " + dump.string() + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(read_json(dump / "index.json")["arrays"].size(), index["arrays"].size());
}

// A symbolic link planted where the run would write (the results file, its
// journal, a --dump subdirectory) is refused before anything is written, and
// what it points at is not touched.
TEST_F(Cli, ASymbolicLinkWhereTheRunWouldWriteIsRefusedBeforeAnythingIsWritten) {
  const fs::path tiny = write("tiny.json", kTinyScenario);
  const fs::path victim = write("victim.txt", "precious");
  const fs::path victim_directory = path("elsewhere");
  fs::create_directories(victim_directory);
  const fs::path output = path("out.json"), dump = path("arrays");
  fs::create_directories(dump);
  const std::string run = "run " + tiny.string() + " --impl cpu.flash -o " + output.string();
  const auto refused = [&](const fs::path& link, const fs::path& target, const std::string& command) {
    fs::create_symlink(target, link);
    const CommandResult result = run_attnbench(command);
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find(link.string() + " is a symbolic link to " + target.string() +
                                 "; attnbench never writes through a link"),
              std::string::npos)
        << result.output;
    EXPECT_EQ(read_text(victim), "precious");
    EXPECT_TRUE(fs::is_empty(victim_directory));
    fs::remove(link);
    EXPECT_FALSE(fs::exists(journal_path(output.string()))) << "nothing was written";
    EXPECT_FALSE(fs::exists(output)) << "nothing was written";
  };
  refused(output, victim, run);
  refused(fs::path(journal_path(output.string())), victim, run);
  refused(dump / "tiny", victim_directory, run + " --dump " + dump.string());
  EXPECT_EQ(run_attnbench(run + " --dump " + dump.string()).exit_code, 0);
}

TEST_F(Cli, ShardsSplitTheCasesDisjointlyAndCoverThemAll) {
  std::multiset<std::size_t> cases;
  for (int k = 1; k <= 3; ++k) {
    const fs::path output = path("shard" + std::to_string(k) + ".json");
    const CommandResult run = run_attnbench("run " + scenario_path("quick.json") + " --impl cpu.flash --shard " +
                                            std::to_string(k) + "/3 -o " + output.string());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const Json results = read_json(output);
    expect_results_schema_valid(results);
    EXPECT_EQ(results["shard"], (Json{{"index", k}, {"count", 3}}));
    EXPECT_FALSE(results["records"].empty());
    for (const Json& record : results["records"]) cases.insert(record["case_index"].get<std::size_t>());
  }
  EXPECT_EQ(cases, (std::multiset<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const CommandResult other = run_attnbench("run " + scenario_path("quick.json") + " --impl cpu.flash --shard 2/3 -o " +
                                            path("shard1.json").string() + " --resume");
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_EQ(run_attnbench("run " + scenario_path("quick.json") + " --shard 4/3").exit_code, 2);
}

TEST_F(Cli, ListJsonGivesTheExpandedCasesAndWhoRunsThem) {
  const CommandResult list = run_attnbench("list --json " + scenario_path("quick.json"));
  ASSERT_EQ(list.exit_code, 0) << list.output;
  const Json listing = Json::parse(list.output);
  EXPECT_EQ(listing["schema"], "attnbench.cases/1");
  ASSERT_EQ(listing["scenarios"].size(), 1u);
  const Json& cases = listing["scenarios"][0]["cases"];
  ASSERT_EQ(cases.size(), 8u);
  EXPECT_EQ(cases[0]["problem"]["seqlen_q"], 129);
  EXPECT_TRUE(cases[0]["implementations"]["cpu.flash"]["runs"].get<bool>());
  EXPECT_GT(cases[0]["flops"]["forward"].get<double>(), 0);

  const CommandResult text = run_attnbench("list " + scenario_path("quick.json") + " --impl cpu.flash");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("cpu.flash        runs"), std::string::npos) << text.output;
  EXPECT_EQ(text.output.find("cpu.standard"), std::string::npos);
}

TEST_F(Cli, ValidateAndInfo) {
  const CommandResult validate =
      run_attnbench("validate " + scenario_path("quick.json") + " " + scenario_path("edge_cases.json"));
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("quick.json: ok (scenario \"quick\", 8 cases)"), std::string::npos);
  const CommandResult info = run_attnbench("info --json");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  const Json parsed = Json::parse(info.output);
  std::size_t cpu_implementations = 0;  // CUDA ones join them when CUDA is built
  for (const Json& entry : parsed["implementations"]) cpu_implementations += entry["device"] == "cpu" ? 1 : 0;
  EXPECT_EQ(cpu_implementations, 3u);
  EXPECT_EQ(parsed["devices"][0]["device"], "cpu");
}

}  // namespace
}  // namespace attnbench
