// End to end: `attnbench merge` on the shards of real runs — a complete,
// schema-valid merge of every case once; each refusal with its exit code and no
// output; a missing shard giving an incomplete merge that `run --resume` completes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

// Three cases of different cost, so each of three shards gets one.
const char* kScenario = R"({
  "name": "shards", "description": "three small cases",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "direction": "fwd"},
  "sweep": {"seqlen": [24, 40, 56]},
  "implementations": ["cpu.flash", "cpu.standard"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 2,
              "max_samples": 3, "min_seconds": 0, "max_seconds": 0.05}
})";

class CliMerge : public TempDirectoryTest {
 protected:
  void SetUp() override {
    TempDirectoryTest::SetUp();
    std::ofstream(path("shards.json")) << kScenario;
    for (int k = 1; k <= 3; ++k) {
      const CommandResult run = run_attnbench("run " + path("shards.json") + " --shard " + std::to_string(k) +
                                              "/3 -o " + part(k));
      ASSERT_EQ(run.exit_code, 0) << run.output;
    }
  }
  // This suite builds command lines from paths as strings.
  std::string path(const std::string& name) const { return TempDirectoryTest::path(name).string(); }
  std::string part(int k) const { return path("part-" + std::to_string(k) + ".json"); }
  std::string all_parts() const { return part(1) + " " + part(2) + " " + part(3); }
};

TEST_F(CliMerge, ShardsMergeIntoOneCompleteValidFileWithEveryCaseOnce) {
  const CommandResult merge = run_attnbench("merge " + all_parts() + " -o " + path("merged.json"));
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_NE(merge.output.find("Merged 3 files: 6 records, complete."), std::string::npos) << merge.output;

  const Json merged = load_results_file(path("merged.json"));  // throws unless schema-valid
  EXPECT_TRUE(merged["complete"].get<bool>());
  EXPECT_TRUE(merged["shard"].is_null());
  std::multiset<std::string> union_of_shards;
  for (int k = 1; k <= 3; ++k) {
    const Json shard = read_json(part(k));
    for (const Json& record : shard["records"]) union_of_shards.insert(record.dump());
    EXPECT_EQ(merged["merged_from"][k - 1]["path"], part(k));
    EXPECT_EQ(merged["merged_from"][k - 1]["shard"], (Json{{"index", k}, {"count", 3}}));
  }
  std::multiset<std::string> merged_records;
  std::set<std::pair<std::string, std::string>> cells;
  std::size_t previous_case = 0;
  for (const Json& record : merged["records"]) {
    merged_records.insert(record.dump());
    cells.emplace(record["case_key"].get<std::string>(), record["implementation"].get<std::string>());
    EXPECT_GE(record["case_index"].get<std::size_t>(), previous_case) << "records in case order";
    previous_case = record["case_index"].get<std::size_t>();
  }
  EXPECT_EQ(merged_records, union_of_shards);
  EXPECT_EQ(cells.size(), 6u) << "3 cases x 2 implementations, each once";
  for (const auto& entry : fs::directory_iterator(directory_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "stray temporary " << entry.path();
  }
}

TEST_F(CliMerge, EachRefusalExitsAsDocumentedAndWritesNothing) {
  const std::string output = path("merged.json");

  Json other_device = read_json(part(2));
  other_device["devices"][0]["name"] = "Another CPU";
  write_json(path("other-device.json"), other_device);
  const CommandResult devices =
      run_attnbench("merge " + part(1) + " " + path("other-device.json") + " " + part(3) + " -o " + output);
  EXPECT_EQ(devices.exit_code, 3) << devices.output;
  EXPECT_NE(devices.output.find("not comparable: " + path("other-device.json") + ": devices: its cpu device differs"),
            std::string::npos)
      << devices.output;

  Json other_scenario = read_json(part(2));
  other_scenario["scenarios"][0]["source"]["description"] = "edited";
  write_json(path("other-scenario.json"), other_scenario);
  const CommandResult scenarios =
      run_attnbench("merge " + part(1) + " " + path("other-scenario.json") + " " + part(3) + " -o " + output);
  EXPECT_EQ(scenarios.exit_code, 2) << scenarios.output;
  EXPECT_NE(scenarios.output.find("differs from " + part(1) + "'s in source"), std::string::npos) << scenarios.output;

  fs::copy_file(part(1), path("copy-of-part-1.json"));
  const CommandResult twice = run_attnbench("merge " + all_parts() + " " + path("copy-of-part-1.json") + " -o " + output);
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("is shard 1/3, and so is " + part(1)), std::string::npos) << twice.output;
  EXPECT_NE(twice.output.find("are also in " + part(1)), std::string::npos) << twice.output;

  std::ofstream(path("not-results.json")) << R"({"schema": "something else"})";
  const CommandResult bad = run_attnbench("merge " + part(1) + " " + path("not-results.json") + " " +
                                          path("absent.json") + " -o " + output);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find(path("not-results.json") + ": schema: not an attnbench results file"), std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find(path("absent.json")), std::string::npos) << bad.output;

  const std::string before = read_json(part(3)).dump();
  const CommandResult onto_input = run_attnbench("merge " + all_parts() + " -o " + part(3));
  EXPECT_EQ(onto_input.exit_code, 2) << onto_input.output;
  EXPECT_NE(onto_input.output.find("is also the output"), std::string::npos) << onto_input.output;
  EXPECT_EQ(read_json(part(3)).dump(), before);

  const CommandResult required = run_attnbench("merge " + part(1) + " " + part(3) + " --require-complete -o " + output);
  EXPECT_EQ(required.exit_code, 2) << required.output;
  EXPECT_NE(required.output.find("--require-complete: shard 2/3 is missing; nothing written"), std::string::npos)
      << required.output;

  EXPECT_FALSE(fs::exists(output)) << "no refusal writes the output";
  for (const auto& entry : fs::directory_iterator(directory_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "stray temporary " << entry.path();
  }

  const CommandResult allowed = run_attnbench("merge " + part(1) + " " + path("other-device.json") + " " + part(3) +
                                              " --allow-mixed-devices -o " + output);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_EQ(read_json(output)["devices"].size(), 2u);
}

TEST_F(CliMerge, AnExistingOutputIsReplacedOnlyWhenItIsAnEarlierMerge) {
  const std::string output = path("merged.json");
  ASSERT_EQ(run_attnbench("run " + path("shards.json") + " -o " + output).exit_code, 0);
  const std::string run_results = read_text(output);
  const CommandResult refused = run_attnbench("merge " + all_parts() + " -o " + output);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("-o " + output + ": holds the results of a run, not of an earlier merge"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(read_text(output), run_results);

  const CommandResult overwritten = run_attnbench("merge " + all_parts() + " --overwrite -o " + output);
  ASSERT_EQ(overwritten.exit_code, 0) << overwritten.output;
  const CommandResult again = run_attnbench("merge " + part(1) + " " + part(2) + " -o " + output);
  EXPECT_EQ(again.exit_code, 0) << "an earlier merge is replaced, as shards arrive\n" << again.output;
  EXPECT_EQ(read_json(output)["merged_from"].size(), 2u);
  EXPECT_FALSE(fs::exists(output + ".lock"));
}

TEST_F(CliMerge, AMissingShardGivesAnIncompleteMergeThatRunResumeCompletes) {
  const std::string output = path("merged.json");
  const CommandResult merge = run_attnbench("merge " + part(1) + " " + part(3) + " -o " + output);
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_NE(merge.output.find("warning: incomplete merge: shard 2/3 is missing"), std::string::npos) << merge.output;
  const Json incomplete = load_results_file(output);
  EXPECT_FALSE(incomplete["complete"].get<bool>());
  ASSERT_EQ(incomplete["records"].size(), 4u);

  // The merged file is a results file of the whole scenario: --resume runs only what is missing.
  const CommandResult resumed = run_attnbench("run " + path("shards.json") + " -o " + output + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const Json completed = load_results_file(output);
  EXPECT_TRUE(completed["complete"].get<bool>());
  ASSERT_EQ(completed["records"].size(), 6u);
  std::set<std::string> kept, shard_two_keys, new_keys;
  for (const Json& record : incomplete["records"]) kept.insert(record.dump());
  const Json shard_two = read_json(part(2));
  for (const Json& record : shard_two["records"]) shard_two_keys.insert(record["case_key"].get<std::string>());
  std::size_t merged_records_kept = 0;
  for (const Json& record : completed["records"]) {
    if (kept.count(record.dump())) {
      ++merged_records_kept;
    } else {
      new_keys.insert(record["case_key"].get<std::string>());
    }
  }
  EXPECT_EQ(merged_records_kept, 4u) << "merged records are kept, not rerun";
  EXPECT_EQ(new_keys, shard_two_keys) << "only the missing shard's case ran";
  std::vector<std::size_t> order;
  for (const Json& record : completed["records"]) order.push_back(record["case_index"].get<std::size_t>());
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << "the finished file is in case order";
}

}  // namespace
}  // namespace attnbench
