// merge_results on results files built in memory: shards join into the whole
// run (complete, in scenario/case/implementation order, schema-valid, with
// merged_from); missing shards and unfinished inputs give an incomplete merge;
// every refusal rule, and what --allow-mixed-* lets through.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "harness/scenario/json_schema.hpp"
#include "harness/results/derived_figures.hpp"
#include "harness/results/merge.hpp"
#include "harness/common/problem_json.hpp"
#include "harness/results/document.hpp"
#include "harness/measure/statistics.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string> kImplementations = {"cpu.standard", "cpu.flash"};
constexpr int kCases = 5;

Json scenario_entry(const std::string& name) {
  return Json{{"path", name + ".json"},
              {"name", name},
              {"description", "in-memory test scenario"},
              {"source", {{"name", name},
                          {"description", "in-memory test scenario"},
                          {"defaults", {{"batch", 1}, {"heads", 1}, {"head_dim", 64}}},
                          {"sweep", {{"seqlen", {16, 17, 18, 19, 20}}}}}},
              {"implementations", kImplementations},
              {"measure", {{"warmup_min_iterations", 1}, {"warmup_min_seconds", 0}, {"min_samples", 1},
                           {"max_samples", 2}, {"min_seconds", 0}, {"max_seconds", 1}, {"target_ci_width", 0.02},
                           {"cache", "hot"}}},
              {"accuracy", {{"check", false}, {"max_oracle_macs", 1e6}, {"seed", 0}, {"floor_factor", 2},
                            {"bound", {{"fp64", 1e-12}, {"fp32", 1e-4}, {"fp16", 1e-2}, {"bf16", 5e-2}}}}},
              {"case_count", kCases}};
}

Json record(const std::string& scenario, int case_index, const std::string& implementation) {
  Problem problem;
  problem.seqlen_q = problem.seqlen_k = 16 + case_index;
  resolve_lengths(problem);
  const ByteCount compulsory = compulsory_bytes(problem);
  return Json{{"scenario", scenario},
              {"case_index", case_index},
              {"case_key", case_key(problem)},
              {"case_origin", "sweep"},
              {"implementation", implementation},
              {"device", "cpu"},
              {"problem", problem_to_json(problem)},
              {"status", "skipped"},
              {"reason", "made by the test"},
              {"configuration", Json::object()},
              {"flops", flops_to_json(problem)},
              {"timing", nullptr},
              {"memory", nullptr},
              {"traffic", {{"compulsory", {{"read_bytes", compulsory.read}, {"write_bytes", compulsory.write}}},
                           {"counted", nullptr},
                           {"measured", nullptr}}},
              {"accuracy", nullptr}};
}

Json cpu_device(const std::string& name = "Test CPU") {
  return Json{{"kind", "cpu"}, {"name", name}, {"logical_cpus", 8}, {"last_level_cache_bytes", 1 << 20},
              {"memory_bytes", 1 << 30}};
}

// A finished results file of scenario "tiny" holding `cases`, as `run --shard`
// writes it (shard null for a whole run). Records go in run order: case, then
// implementation.
Json results_file(const std::vector<int>& cases, const Json& shard, const std::string& started_at) {
  Json document = ResultsDocument({"attnbench", "run"}, 4).json();
  document["started_at"] = started_at;
  document["finished_at"] = started_at;
  document["complete"] = true;
  document["devices"].push_back(cpu_device());
  document["shard"] = shard;
  document["scenarios"].push_back(scenario_entry("tiny"));
  for (int case_index : cases) {
    for (const std::string& implementation : kImplementations) {
      document["records"].push_back(record("tiny", case_index, implementation));
    }
  }
  return document;
}

Json shard(int index, int count) { return Json{{"index", index}, {"count", count}}; }

// Shards of five cases in three: {0, 3}, {1, 4}, {2}.
std::vector<MergeInput> three_shards() {
  return {{"part-1.json", results_file({0, 3}, shard(1, 3), "2026-01-01T10:00:02Z")},
          {"part-2.json", results_file({1, 4}, shard(2, 3), "2026-01-01T10:00:01Z")},
          {"part-3.json", results_file({2}, shard(3, 3), "2026-01-01T10:00:03Z")}};
}

std::vector<std::tuple<std::string, std::int64_t, std::string>> identities(const Json& document) {
  std::vector<std::tuple<std::string, std::int64_t, std::string>> result;
  for (const Json& r : document["records"]) {
    result.emplace_back(r["scenario"].get<std::string>(), r["case_index"].get<std::int64_t>(),
                        r["implementation"].get<std::string>());
  }
  return result;
}

std::string all_messages(const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const Diagnostic& d : diagnostics) text += d.format() + "\n";
  return text;
}

// The diagnostics of the InputError that merging `inputs` throws ("" if none).
std::string input_error(const std::vector<MergeInput>& inputs, const MergeOptions& options = {}) {
  try {
    merge_results(inputs, options, {"attnbench", "merge"});
  } catch (const InputError& error) {
    return all_messages(error.diagnostics());
  }
  return "";
}

TEST(Merge, ShardsJoinIntoTheWholeRunInScenarioAndCaseOrder) {
  const MergeOutcome merged = merge_results(three_shards(), {}, {"attnbench", "merge"});
  const Json& document = merged.document;
  const Json whole = results_file({0, 1, 2, 3, 4}, nullptr, "2026-01-01T10:00:00Z");

  EXPECT_EQ(identities(document), identities(whole));
  EXPECT_EQ(document["records"], whole["records"]) << "records are copied unchanged";
  EXPECT_TRUE(document["complete"].get<bool>());
  EXPECT_TRUE(merged.incomplete.empty());
  EXPECT_TRUE(document["shard"].is_null());
  EXPECT_EQ(document["started_at"], "2026-01-01T10:00:01Z") << "the earliest start";
  EXPECT_EQ(document["finished_at"], "2026-01-01T10:00:03Z") << "the latest finish";
  EXPECT_EQ(document["command_line"], (Json{"attnbench", "merge"}));
  EXPECT_EQ(document["devices"], Json::array({cpu_device()}));
  ASSERT_EQ(document["scenarios"].size(), 1u);
  EXPECT_EQ(document["scenarios"][0], scenario_entry("tiny"));

  ASSERT_EQ(document["merged_from"].size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const Json& entry = document["merged_from"][k];
    EXPECT_EQ(entry["path"], "part-" + std::to_string(k + 1) + ".json");
    EXPECT_EQ(entry["shard"], shard(k + 1, 3));
    EXPECT_TRUE(entry["complete"].get<bool>());
    EXPECT_EQ(entry["records"], three_shards()[k].document["records"].size());
    EXPECT_EQ(entry["git_revision"], three_shards()[k].document["tool"]["git_revision"]);
  }

  static const JsonSchema schema(results_schema());
  std::string errors;
  for (const SchemaError& error : schema.validate(document)) errors += format_error(error) + "\n";
  EXPECT_TRUE(errors.empty()) << errors;
}

TEST(Merge, TheOrderOfTheInputsDoesNotChangeTheRecords) {
  std::vector<MergeInput> shuffled = three_shards();
  std::swap(shuffled[0], shuffled[2]);
  EXPECT_EQ(merge_results(shuffled, {}, {}).document["records"], merge_results(three_shards(), {}, {}).document["records"]);
}

TEST(Merge, AMissingShardGivesAnIncompleteMergeThatSaysWhich) {
  std::vector<MergeInput> inputs = three_shards();
  inputs.erase(inputs.begin() + 1);
  const MergeOutcome merged = merge_results(inputs, {}, {});
  EXPECT_FALSE(merged.document["complete"].get<bool>());
  EXPECT_TRUE(merged.document["finished_at"].is_null());
  EXPECT_EQ(merged.incomplete, (std::vector<std::string>{
                                   "shard 2/3 is missing",
                                   "scenario tiny: 4 of 10 (case, implementation) records are missing"}));
  EXPECT_EQ(merged.document["records"].size(), 6u);
}

TEST(Merge, CompletenessIsCoverageNotShardIndices) {
  // An earlier merge of shards 1 and 2 with shard 3 covers every record.
  std::vector<MergeInput> shards = three_shards();
  MergeInput first_two{"m12.json", merge_results({shards[0], shards[1]}, {}, {}).document};
  EXPECT_FALSE(first_two.document["complete"].get<bool>());
  first_two.document["complete"] = true;  // as if written by a finished merge of a whole run
  const MergeOutcome all = merge_results({first_two, shards[2]}, {}, {});
  EXPECT_TRUE(all.document["complete"].get<bool>()) << (all.incomplete.empty() ? "" : all.incomplete[0]);

  // Shards run with a narrower --impl leave records out although every index is there.
  shards[1].document["scenarios"][0]["implementations"] = {"cpu.flash"};
  Json kept = Json::array();
  for (const Json& r : shards[1].document["records"]) {
    if (r["implementation"] == "cpu.flash") kept.push_back(r);
  }
  shards[1].document["records"] = kept;
  const MergeOutcome narrow = merge_results(shards, {}, {});
  EXPECT_FALSE(narrow.document["complete"].get<bool>());
  EXPECT_EQ(narrow.incomplete, std::vector<std::string>{
                                   "scenario tiny: 2 of 10 (case, implementation) records are missing"});
}

TEST(Merge, AnUnfinishedInputGivesAnIncompleteMerge) {
  std::vector<MergeInput> inputs = three_shards();
  inputs[2].document["complete"] = false;
  inputs[2].document["finished_at"] = nullptr;
  const MergeOutcome merged = merge_results(inputs, {}, {});
  EXPECT_FALSE(merged.document["complete"].get<bool>());
  EXPECT_EQ(merged.incomplete, std::vector<std::string>{"part-3.json is an unfinished run"});
  EXPECT_FALSE(merged.document["merged_from"][2]["complete"].get<bool>());
}

TEST(Merge, DifferentDevicesAreNotComparableUnlessAllowed) {
  std::vector<MergeInput> inputs = three_shards();
  inputs[1].document["devices"][0] = cpu_device("Other CPU");
  try {
    merge_results(inputs, {}, {});
    ADD_FAILURE() << "merged different devices";
  } catch (const DevicesDifferError& error) {
    ASSERT_EQ(error.diagnostics().size(), 1u);
    EXPECT_EQ(error.diagnostics()[0].file, "part-2.json");
    EXPECT_NE(error.diagnostics()[0].message.find("name (\"Other CPU\" vs \"Test CPU\")"), std::string::npos)
        << error.diagnostics()[0].message;
    EXPECT_NE(error.diagnostics()[0].message.find("part-1.json"), std::string::npos);
  }
  const MergeOutcome allowed = merge_results(inputs, MergeOptions{true, false}, {});
  EXPECT_EQ(allowed.document["devices"], Json::array({cpu_device(), cpu_device("Other CPU")}));
}

TEST(Merge, DevicesAreMatchedOnTheirIdentityAsCompareMatchesThem) {
  std::vector<MergeInput> inputs = three_shards();
  inputs[1].document["devices"][0]["logical_cpus"] = 64;  // not an identity field
  EXPECT_EQ(merge_results(inputs, {}, {}).document["devices"], Json::array({cpu_device()}))
      << "one description per identity: the first input's";
  inputs[2].document["devices"][0]["memory_bytes"] = 1 << 29;  // an identity field
  EXPECT_THROW(merge_results(inputs, {}, {}), DevicesDifferError);
}

TEST(Merge, AnInputWithNoDeviceAgreesWithAny) {
  std::vector<MergeInput> inputs = three_shards();
  inputs[1].document["devices"] = Json::array();  // every record of that shard was skipped
  EXPECT_EQ(merge_results(inputs, {}, {}).document["devices"], Json::array({cpu_device()}));
}

TEST(Merge, DifferentScenariosAreRefusedUnlessAllowed) {
  std::vector<MergeInput> edited = three_shards();
  edited[1].document["scenarios"][0]["source"]["sweep"]["seqlen"].push_back(21);
  EXPECT_NE(input_error(edited).find("part-2.json: scenarios: scenario \"tiny\" differs from part-1.json's in source"),
            std::string::npos)
      << input_error(edited);

  std::vector<MergeInput> hot_and_cold = three_shards();
  hot_and_cold[2].document["scenarios"][0]["measure"]["cache"] = "cold";
  EXPECT_NE(input_error(hot_and_cold).find("part-3.json: scenarios: scenario \"tiny\" differs from part-1.json's in "
                                           "measure"),
            std::string::npos)
      << input_error(hot_and_cold);

  std::vector<MergeInput> other_method = three_shards();
  other_method[1].document["scenarios"][0]["measure"]["timing"] = Json::array({"graph"});
  EXPECT_NE(input_error(other_method).find("part-2.json: scenarios: scenario \"tiny\" differs from part-1.json's in "
                                           "measure.timing"),
            std::string::npos)
      << input_error(other_method);

  std::vector<MergeInput> renamed = three_shards();
  renamed[1].document["scenarios"][0] = scenario_entry("other");
  for (Json& r : renamed[1].document["records"]) r["scenario"] = "other";
  EXPECT_NE(input_error(renamed).find("part-2.json: scenarios: holds \"other\" but part-1.json holds \"tiny\""),
            std::string::npos)
      << input_error(renamed);

  const MergeOptions allow{false, true};
  EXPECT_EQ(input_error(renamed, allow), "");
  const Json merged = merge_results(renamed, allow, {}).document;
  ASSERT_EQ(merged["scenarios"].size(), 2u);
  EXPECT_EQ(merged["scenarios"][1]["name"], "other");
  EXPECT_EQ(merged["records"].back()["scenario"], "other") << "records follow the order of the scenarios";
  EXPECT_EQ(merge_results(edited, allow, {}).document["scenarios"].size(), 2u) << "each distinct definition is kept";
}

TEST(Merge, ImplementationsOfTheSameScenarioAreJoined) {
  Json flash = results_file({0, 1, 2, 3, 4}, nullptr, "2026-01-01T10:00:00Z");
  Json standard = flash;
  flash["scenarios"][0]["implementations"] = {"cpu.flash"};
  standard["scenarios"][0]["implementations"] = {"cpu.standard"};
  for (Json* document : {&flash, &standard}) {
    const std::string keep = (*document)["scenarios"][0]["implementations"][0];
    Json kept = Json::array();
    for (const Json& r : (*document)["records"]) {
      if (r["implementation"] == keep) kept.push_back(r);
    }
    (*document)["records"] = kept;
  }
  const Json merged = merge_results({{"flash.json", flash}, {"standard.json", standard}}, {}, {}).document;
  EXPECT_EQ(merged["scenarios"][0]["implementations"], (Json{"cpu.flash", "cpu.standard"}));
  std::vector<std::tuple<std::string, std::int64_t, std::string>> expected;
  for (std::int64_t case_index = 0; case_index < 5; ++case_index) {
    expected.emplace_back("tiny", case_index, "cpu.flash");
    expected.emplace_back("tiny", case_index, "cpu.standard");
  }
  EXPECT_EQ(identities(merged), expected);
  EXPECT_TRUE(merged["complete"].get<bool>());
}

TEST(Merge, ARecordInTwoFilesIsRefused) {
  const std::vector<MergeInput> inputs = {{"whole.json", results_file({0, 1, 2, 3, 4}, nullptr, "2026-01-01T10:00:00Z")},
                                          three_shards()[1]};
  const std::string errors = input_error(inputs);
  EXPECT_NE(errors.find("part-2.json: records: 4 record(s) of the same (scenario, case_key, implementation) are also "
                        "in whole.json, e.g. tiny / " + inputs[1].document["records"][0]["case_key"].get<std::string>() +
                        " / cpu.standard"),
            std::string::npos)
      << errors;
  EXPECT_NE(input_error(inputs, MergeOptions{true, true}), "") << "no option lets duplicates through";
}

TEST(Merge, ARecordThatBelongsToNoCaseOfItsScenarioIsRefused) {
  // The cases are those the file's own scenario source expands to.
  const auto refusal = [](const std::function<void(Json& records)>& edit) {
    std::vector<MergeInput> inputs = three_shards();
    edit(inputs[1].document["records"]);
    return input_error(inputs);
  };
  EXPECT_NE(refusal([](Json& records) { records[0]["case_key"] = "invented"; })
                .find("part-2.json: records[0]: case_key \"invented\" is no case of scenario \"tiny\""),
            std::string::npos);
  EXPECT_NE(refusal([](Json& records) { records[1]["scenario"] = "not_a_scenario"; })
                .find("part-2.json: records[1]: is a record of scenario \"not_a_scenario\""),
            std::string::npos);
  EXPECT_NE(refusal([](Json& records) { records[0]["implementation"] = "cpu.nope"; })
                .find("part-2.json: records[0]: implementation \"cpu.nope\" is not one"),
            std::string::npos);
  EXPECT_NE(refusal([](Json& records) { records[0]["case_index"] = 4; })
                .find("part-2.json: records[0]: case_index 4, but case_key"),
            std::string::npos);
  EXPECT_NE(refusal([](Json& records) { records.push_back(records[0]); })
                .find("part-2.json: records[4]: is a second record of"),
            std::string::npos);
  const std::string other_settings = refusal([](Json& records) {
    records[0]["settings"] = Json{{"measure", {{"cache", "cold"}}}, {"accuracy", records[0]["accuracy"]}};
  });
  EXPECT_NE(other_settings.find("part-2.json: records[0]: was measured with other settings (the record's vs this run's): "
                                "settings.measure.cache (\"cold\" vs \"hot\")"),
            std::string::npos)
      << other_settings;
  EXPECT_EQ(input_error(three_shards()), "") << "records without settings (older files) merge as before";
}

TEST(Merge, TheFilterOfTheRunIsKept) {
  std::vector<MergeInput> inputs = three_shards();
  for (MergeInput& input : inputs) input.document["filter"] = "seqlen";
  EXPECT_EQ(merge_results(inputs, {}, {}).document["filter"], "seqlen") << "a merged file resumes like its shards";
  inputs[2].document["filter"] = nullptr;
  const MergeOutcome merged = merge_results(inputs, {}, {});
  ASSERT_EQ(merged.notes.size(), 1u);
  EXPECT_NE(merged.notes[0].find("--filter"), std::string::npos);
}

TEST(Merge, ShardsOfDifferentCountsOrTheSameIndexTwiceAreRefused) {
  std::vector<MergeInput> counts = three_shards();
  counts[2].document["shard"] = shard(3, 4);
  EXPECT_NE(input_error(counts).find("part-3.json: shard: is shard 3/4 but part-1.json is shard 1/3: shards of runs "
                                     "split into different counts"),
            std::string::npos)
      << input_error(counts);

  std::vector<MergeInput> twice = three_shards();
  twice[2].document["shard"] = shard(1, 3);
  EXPECT_NE(input_error(twice).find("part-3.json: shard: is shard 1/3, and so is part-1.json"), std::string::npos)
      << input_error(twice);
}

TEST(Merge, EveryProblemIsReportedAtOnce) {
  std::vector<MergeInput> inputs = three_shards();
  inputs[1].document["scenarios"][0]["source"]["extra"] = true;
  inputs[2].document["shard"] = shard(3, 4);
  inputs[2].document["records"].push_back(inputs[0].document["records"][0]);
  const std::string errors = input_error(inputs);
  EXPECT_NE(errors.find("differs from part-1.json's in source"), std::string::npos) << errors;
  EXPECT_NE(errors.find("different counts"), std::string::npos) << errors;
  EXPECT_NE(errors.find("also in part-1.json"), std::string::npos) << errors;
}

TEST(Merge, DifferentBuildsAndThreadCountsAreNotedNotRefused) {
  std::vector<MergeInput> inputs = three_shards();
  inputs[0].document["tool"]["git_revision"] = "aaaaaaa";
  inputs[1].document["tool"]["git_revision"] = "bbbbbbb";
  inputs[2].document["threads"] = 2;
  const MergeOutcome merged = merge_results(inputs, {}, {});
  ASSERT_EQ(merged.notes.size(), 2u);
  EXPECT_NE(merged.notes[0].find("aaaaaaa"), std::string::npos);
  EXPECT_NE(merged.notes[0].find("bbbbbbb"), std::string::npos);
  EXPECT_NE(merged.notes[1].find("--threads"), std::string::npos);
  EXPECT_EQ(merged.document["tool"]["git_revision"], "aaaaaaa") << "tool comes from the first input";
  EXPECT_EQ(merged.document["threads"], 4) << "threads come from the first input";
  EXPECT_EQ(merged.document["merged_from"][2]["threads"], 2);
}

// Makes `record` ok, timed by `samples`, with the noise verdict `noisy` (or "ok").
void timed(Json& record, const std::vector<double>& samples, const std::string& noisy = "") {
  record["status"] = "ok";
  record["reason"] = "";
  record["timing"] = Json{{"clock", "host"}, {"cache", "hot"}, {"cache_flush_bytes", 0}, {"warmup_iterations", 1},
                          {"warmup_seconds", 0.001}, {"samples_seconds", samples}, {"converged", noisy.empty()},
                          {"stop_reason", noisy.empty() ? "converged" : "max_seconds"}, {"wall_seconds", 0.1},
                          {"throttled", nullptr}, {"statistics", statistics_json(summarize(samples))},
                          {"tflops", 0.1}, {"compulsory_bandwidth_gb_per_s", 1.0}};
  record["timing"]["noise"] = {{"verdict", noisy.empty() ? "ok" : noisy}, {"noisy", !noisy.empty()},
                               {"judged", true}, {"resolution_seconds", nullptr}, {"findings", Json::array()}};
  refresh_timing_figures(record);  // TFLOP/s and bandwidth as a run derives them from the median
}

TEST(MergeRounds, RoundsOfOneTimingMethodJoinTheirCompanionsAndMixedMethodsAreRefused) {
  Json first = results_file({0}, nullptr, "2026-01-01T10:00:00Z")["records"][0], second = first;
  timed(first, {10e-6, 12e-6});
  timed(second, {11e-6});
  for (Json* record : {&first, &second}) {
    (*record)["timing"]["method"] = "cupti";
    (*record)["timing"]["sm_clock_mhz"] = Json::array();
    (*record)["timing"]["clock_marks"] = {{"share", 0.85}, {"highest_mhz", 1980}, {"threshold_mhz", 1683},
                                          {"marked", Json::array()}, {"read", 0}};
  }
  first["timing"]["cupti"] = {{"events_samples_seconds", {15e-6, 16e-6}}, {"events_p50", 15.5e-6},
                              {"launch_overhead_seconds", 4.5e-6}};
  second["timing"]["cupti"] = {{"events_samples_seconds", {21e-6}}, {"events_p50", 21e-6},
                               {"launch_overhead_seconds", 10e-6}};
  first["timing"]["sm_clock_mhz"] = {1980, 1500};
  first["timing"]["clock_marks"]["marked"] = {1};
  first["timing"]["clock_marks"]["read"] = 2;
  second["timing"]["sm_clock_mhz"] = {1400};
  second["timing"]["clock_marks"]["marked"] = {0};
  second["timing"]["clock_marks"]["read"] = 1;
  const Json joined = join_rounds({{1, &first}, {2, &second}}, {"r1.json", "r2.json"})["timing"];
  EXPECT_EQ(joined["cupti"]["events_samples_seconds"], Json({15e-6, 16e-6, 21e-6}));
  EXPECT_DOUBLE_EQ(joined["cupti"]["events_p50"].get<double>(), 16e-6);
  EXPECT_DOUBLE_EQ(joined["cupti"]["launch_overhead_seconds"].get<double>(), 5e-6) << "median of 5, 4 and 10 us";
  EXPECT_EQ(joined["sm_clock_mhz"], Json({1980, 1500, 1400}));
  EXPECT_EQ(joined["clock_marks"]["marked"], Json({1, 2})) << "the second round's mark follows the first's samples";
  EXPECT_EQ(joined["clock_marks"]["read"], 3);

  second["timing"]["method"] = "events";
  try {
    join_rounds({{1, &first}, {2, &second}}, {"r1.json", "r2.json"});
    ADD_FAILURE() << "rounds of two methods were joined";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("r2.json: records: tiny/"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("was timed by events, round 1 by cupti"), std::string::npos) << error.what();
  }
}

TEST(MergeRounds, EachCellsRoundsJoinIntoOneRecordThatKeepsThem) {
  std::vector<MergeInput> rounds = {{"round-1.json", results_file({0, 1, 2, 3, 4}, nullptr, "2026-01-01T10:00:00Z")},
                                    {"round-2.json", results_file({0, 1, 2, 3, 4}, nullptr, "2026-01-01T10:01:00Z")},
                                    {"round-3.json", results_file({0, 1, 2, 3, 4}, nullptr, "2026-01-01T10:02:00Z")}};
  for (MergeInput& round : rounds) {
    round.document["load_average"] = {{"run_start", {1.0, 1.0, 1.0}}, {"run_end", {1.5, 1.0, 1.0}}};
  }
  rounds[1].document["load_average"]["run_end"] = {6.5, 2.0, 1.0};
  timed(rounds[0].document["records"][0], {1e-3, 1.1e-3, 1.2e-3});
  timed(rounds[1].document["records"][0], {2e-3, 2.1e-3}, "noisy: quantised at ~4.000 ms");
  timed(rounds[2].document["records"][0], {1e-3, 1.05e-3});
  timed(rounds[0].document["records"][1], {1e-3, 1e-3});
  rounds[1].document["records"][1]["status"] = "failed";  // a round that failed keeps its record
  rounds[1].document["records"][1]["reason"] = "accuracy: made by the test";
  EXPECT_NE(input_error(rounds), "") << "without --rounds a cell twice is refused";

  MergeOptions options;
  options.rounds = true;
  const MergeOutcome merged = merge_results(rounds, options, {"attnbench", "merge", "--rounds"});
  EXPECT_TRUE(merged.incomplete.empty());
  const Json& records = merged.document["records"];
  ASSERT_EQ(records.size(), 2u * kCases);
  const Json& joined = records[0]["timing"];
  EXPECT_EQ(joined["samples_seconds"], Json({1e-3, 1.1e-3, 1.2e-3, 2e-3, 2.1e-3, 1e-3, 1.05e-3}));
  EXPECT_EQ(joined["statistics"]["count"], 7);
  EXPECT_DOUBLE_EQ(joined["tflops"].get<double>(),
                   records[0]["flops"]["total"].get<double>() / joined["statistics"]["p50"].get<double>() / 1e12)
      << "the joined median's throughput, not the first round's";
  ASSERT_EQ(joined["rounds"].size(), 3u);
  Json second = joined["rounds"][1];
  EXPECT_NEAR(second["p50"].get<double>(), 2.05e-3, 1e-12);
  second.erase("p50");
  EXPECT_EQ(second, Json({{"round", 2}, {"source", "round-2.json"}, {"samples", 2}, {"noisy", true},
                          {"noise", "noisy: quantised at ~4.000 ms"}}));
  // One noisy round of three: named, but the record is not noisy.
  EXPECT_FALSE(joined["noise"]["noisy"].get<bool>());
  EXPECT_NE(joined["noise"]["verdict"].get<std::string>().find("round 2 noisy: quantised"), std::string::npos)
      << joined["noise"]["verdict"];
  EXPECT_EQ(records[1]["status"], "failed");
  EXPECT_EQ(merged.document["load_average"]["run_end"][0], 6.5) << "the highest load of the rounds";
  EXPECT_EQ(merged.document["merged_from"][1]["load_average"]["run_end"][0], 6.5);
  static const JsonSchema schema(results_schema());
  std::string errors;
  for (const SchemaError& error : schema.validate(merged.document)) errors += format_error(error) + "\n";
  EXPECT_TRUE(errors.empty()) << errors;
}

}  // namespace
}  // namespace attnbench
