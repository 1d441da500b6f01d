// End to end: what users and scripts really type never crashes, hangs or
// exhausts the machine. Each test is a reproducer from issue 13, run through the
// binary in a child limited in time and address space: it must end by itself,
// with the documented exit code and a short message naming the file and key.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

// Far above what a well-behaved run needs, far below what the bugs took (their
// reproducers ran past 60 s or grew past 4 GB).
constexpr double kSeconds = 20;
// The address space of the runs whose point is bounded memory. A CUDA build of
// attnbench maps about 0.95 GiB before it reads its input (0.6 GiB reserved by
// the cuBLAS libraries, two 128 MiB OpenBLAS buffers, the binary and the other
// libraries; measured with strace), so 1.5 GiB leaves about half a GiB for the
// run: per-element arrays for the batch-2^20 sweep below (32 GB) still fail,
// and the refusals are asserted by their messages as well.
const rlim_t kBoundedAddressSpace = rlim_t{3} << 29;

const Json kQuickMeasure = {{"cache", "hot"},         {"warmup_min_iterations", 1}, {"warmup_min_seconds", 0},
                            {"min_samples", 3},       {"max_samples", 3},           {"min_seconds", 0},
                            {"max_seconds", 0.02}};

Json scenario_with(const Json& defaults) {
  return Json{{"name", "hostile"}, {"description", "a reproducer"}, {"defaults", defaults}, {"measure", kQuickMeasure}};
}

// A problem with one padded batch element per length.
Json padded_scenario(std::size_t batch) {
  return scenario_with(Json{{"batch", batch},
                            {"heads", 1},
                            {"seqlen", 2},
                            {"head_dim", 1},
                            {"padding", {{"lengths", std::vector<int>(batch, 1)}}}});
}

class HostileInput : public TempDirectoryTest {
 protected:
  std::string save(const std::string& name, const Json& document) const {
    write_json(path(name), document);
    return path(name).string();
  }
  // A finished results file of a tiny run.
  std::string tiny_results(const std::string& name) const {
    const std::string scenario = save(name + ".scenario.json", scenario_with(Json{{"batch", 1}, {"heads", 1},
                                                                                  {"seqlen", 4}, {"head_dim", 2}}));
    const std::string results = path(name).string();
    const BoundedResult run = run_attnbench_bounded({"run", scenario, "--impl", "cpu.standard", "-o", results});
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return results;
  }
};

void expect_refused(const BoundedResult& result, const std::string& expected_text, std::size_t max_bytes = 4000) {
  EXPECT_FALSE(result.timed_out) << "ran past the time limit";
  EXPECT_EQ(result.signal, 0) << "died by a signal";
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(expected_text), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("internal error"), std::string::npos) << result.output;
  EXPECT_LT(result.output.size(), max_bytes) << "messages stay short";
}

// ---- 13.1: one linear-time regular-expression engine ----

TEST_F(HostileInput, FilterOnAHugeCaseKeyNeitherCrashesNorHangs) {
  const std::string scenario = save("rx.json", padded_scenario(10000));
  expect_refused(run_attnbench_bounded({"run", scenario, "-o", path("o.json").string(), "--filter", "pad.*k=1$"}),
                 "matches no case");
  const std::string shorter = save("rx5k.json", padded_scenario(5000));
  expect_refused(run_attnbench_bounded({"run", shorter, "-o", path("o.json").string(), "--filter", ".*zzz"}),
                 "matches no case");
}

TEST_F(HostileInput, CompareOverrideOnAHugeCaseKeyDoesNotCrash) {
  const std::string results = tiny_results("a.json");
  Json document = read_json(results);
  const std::string long_key = "b1-pad(q=" + std::string(60000, '1') + ";k=1)";
  for (Json& record : document["records"]) record["case_key"] = long_key;
  write_json(results, document);
  const std::string config = save("cfg.json", Json{{"overrides", {{{"match", "pad.*k=1"}, {"time_threshold", 0.5}}}}});
  const BoundedResult compare = run_attnbench_bounded({"compare", results, results, "--config", config});
  EXPECT_FALSE(compare.timed_out);
  EXPECT_EQ(compare.signal, 0);
  EXPECT_NE(compare.exit_code, 2) << compare.output;
  EXPECT_EQ(compare.output.find("internal error"), std::string::npos) << compare.output;
}

TEST_F(HostileInput, PatternsBeyondALinearEngineAreRefusedByName) {
  const std::string scenario = save("s.json", scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4},
                                                                 {"head_dim", 2}}));
  expect_refused(run_attnbench_bounded({"run", scenario, "--filter", "(a)\\1"}), "--filter: \"(a)\\\\1\" uses a backreference");
  expect_refused(run_attnbench_bounded({"list", scenario, "--filter", "b(?=1)"}), "\"b(?=1)\" uses a lookahead");

  const std::string results = tiny_results("a.json");
  const std::string config = save("cfg.json", Json{{"overrides", {{{"match", "(?<!x)y"}, {"time_threshold", 0.5}}}}});
  expect_refused(run_attnbench_bounded({"compare", results, results, "--config", config}),
                 "cfg.json: overrides[0].match: \"(?<!x)y\" uses a lookbehind");
}

// ---- 13.2: limits before allocation ----

TEST_F(HostileInput, TokensCannotPushBatchPastItsLimit) {
  for (const std::int64_t tokens : {std::int64_t{1} << 40, std::int64_t{1} << 28}) {
    SCOPED_TRACE(tokens);
    const std::string scenario = save("t.json", scenario_with(Json{{"tokens", tokens}, {"seqlen", 1}, {"heads", 1},
                                                                   {"head_dim", 1}}));
    expect_refused(run_attnbench_bounded({"validate", scenario}), "defaults.tokens: gives batch = tokens / seqlen_q");
  }
  const std::string scenario = save("t.json", scenario_with(Json{{"tokens", 67108864}, {"seqlen", 1}, {"heads", 1},
                                                                 {"head_dim", 1}}));
  expect_refused(run_attnbench_bounded({"run", scenario, "-o", path("o.json").string()}), "more than the 1048576");
  EXPECT_FALSE(fs::exists(path("o.json")));
}

TEST_F(HostileInput, LargeBatchesOverManyCasesValidateInBoundedMemory) {
  // 2,000 cases of batch 2^20: per-element arrays would be 32 GB.
  std::vector<int> seqlens;
  for (int n = 1; n <= 2000; ++n) seqlens.push_back(n);
  Json document = scenario_with(Json{{"batch", 1 << 20}, {"heads", 1}, {"head_dim", 1}});
  document["sweep"] = Json{{"seqlen", seqlens}};
  const BoundedResult validate = run_attnbench_bounded({"validate", save("wide.json", document)}, kSeconds,
                                                       kBoundedAddressSpace);
  EXPECT_FALSE(validate.timed_out);
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("ok (scenario \"hostile\", 2000 cases)"), std::string::npos) << validate.output;

  document["defaults"]["padding"] = Json{{"shortfall", {0, 20}}, {"seed", 1}};
  const BoundedResult padded = run_attnbench_bounded({"validate", save("padded.json", document)}, kSeconds,
                                                     kBoundedAddressSpace);
  EXPECT_EQ(padded.exit_code, 0) << padded.output;
}

TEST_F(HostileInput, ExplicitLengthsAcrossASweepAreBounded) {
  Json document = padded_scenario(100000);
  std::vector<int> seqlens;
  for (int n = 2; n <= 200; ++n) seqlens.push_back(n);
  document["defaults"].erase("seqlen");
  document["sweep"] = Json{{"seqlen", seqlens}};  // 199 copies of 100,000 lengths
  expect_refused(run_attnbench_bounded({"validate", save("lengths.json", document)}, kSeconds, kBoundedAddressSpace),
                 "explicit padding lengths in all");
}

TEST_F(HostileInput, AProblemThatCannotFitIsSkippedWithoutWalkingItsTiles) {
  // Valid (Q holds 2^40 elements, the scores 2^60), far beyond any memory: the
  // traffic models and FLOPs of the record cost O(log N), then the pre-flight skips it.
  const std::string scenario = save("big.json", scenario_with(Json{{"batch", 1 << 20}, {"heads", 1},
                                                                   {"seqlen", 1 << 20}, {"head_dim", 1}}));
  const BoundedResult run = run_attnbench_bounded(
      {"run", scenario, "--impl", "cpu.flash,cpu.standard", "-o", path("o.json").string()}, kSeconds);
  ASSERT_FALSE(run.timed_out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(path("o.json"));
  ASSERT_EQ(results["records"].size(), 2u);
  for (const Json& record : results["records"]) {
    EXPECT_EQ(record["status"], "skipped") << record["reason"];
    EXPECT_EQ(record["flops"]["visible_pairs"], std::int64_t{1} << 60);
    EXPECT_FALSE(record["traffic"]["modelled"].is_null());
    EXPECT_EQ(record["problem"]["padding"], Json({{"kind", "none"}})) << "no per-element lengths without padding";
  }
}

// ---- 13.3: short messages that name the right quantity ----

TEST_F(HostileInput, AHugeUnknownKeyIsQuotedShortAndGetsNoSuggestion) {
  Json document = scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4}, {"head_dim", 2}});
  document["defaults"][std::string(10 << 20, 'x')] = 1;
  const BoundedResult validate = run_attnbench_bounded({"validate", save("key.json", document)});
  expect_refused(validate, "unknown key");
  EXPECT_NE(validate.output.find("(10485760 bytes)"), std::string::npos) << validate.output;
  EXPECT_EQ(validate.output.find("did you mean"), std::string::npos) << validate.output;
}

TEST_F(HostileInput, ARepeatedProblemIsReportedOnceWithACount) {
  std::vector<int> seqlens;
  for (int n = 1; n <= 4000; ++n) seqlens.push_back(n);
  Json document = scenario_with(Json{{"batch", 1}, {"heads", 6}, {"kv_heads", 4}, {"head_dim", 2}});
  document["sweep"] = Json{{"seqlen", seqlens}};
  const BoundedResult validate = run_attnbench_bounded({"validate", save("sweep.json", document)});
  expect_refused(validate, "defaults.kv_heads: must divide heads (6), got 4 (in all 4000 cases)");
}

TEST_F(HostileInput, ThousandsOfDistinctProblemsPrintAFewAndACount) {
  std::vector<int> seqlens;
  for (int n = 2; n <= 4001; ++n) seqlens.push_back(n);
  Json document = scenario_with(Json{{"tokens", 7919}, {"heads", 1}, {"head_dim", 2}});  // a prime: no seqlen divides it
  document["sweep"] = Json{{"seqlen", seqlens}};
  const BoundedResult validate = run_attnbench_bounded({"validate", save("many.json", document)});
  expect_refused(validate, "many.json: 3950 more problems not shown", 10000);
}

TEST_F(HostileInput, AHugeBrokenFileIsCheckedUpToALimit) {
  Json document = scenario_with(Json{{"batch", 1}, {"heads", 1}, {"head_dim", 1}});
  document["sweep"] = Json{{"seqlen", std::vector<int>(300000, 0)}};  // 900 kB, every value out of range
  const BoundedResult validate = run_attnbench_bounded({"validate", save("broken.json", document)}, kSeconds,
                                                       kBoundedAddressSpace);
  expect_refused(validate, "broken.json: has more problems than the 1000 below", 10000);
  EXPECT_NE(validate.output.find("broken.json: 952 more problems not shown"), std::string::npos) << validate.output;
}

TEST_F(HostileInput, AnOversizedProblemNamesTheLimitItExceeds) {
  const std::string scenario = save("scores.json", scenario_with(Json{{"batch", 1024}, {"heads", 1024},
                                                                      {"seqlen", 16777216}, {"head_dim", 1}}));
  const BoundedResult validate = run_attnbench_bounded({"validate", scenario});
  expect_refused(validate, "the score matrices (batch x heads x seqlen_q x seqlen_k) would hold "
                           "295147905179352825856 (2^68) elements, more than the 1152921504606846976 (2^60) allowed");
  EXPECT_EQ(validate.output.find("Q and O"), std::string::npos) << "Q holds 2^44 elements, under its limit";
}

TEST_F(HostileInput, AHundredThousandDistinctCaseProblemsAreFoundInLinearTime) {
  // Each of the 100,000 cases (a 900 kB file) is too large by a different score
  // count, so none is a repeat of another; collecting them once scanned every
  // earlier problem (quadratic: past 60 s in a release build). Now under 2 s
  // in a release build; the limit leaves room for an unoptimised sanitizer build.
  std::vector<std::int64_t> seqlens;
  for (std::int64_t n = 16777216 - 100000; n < 16777216; ++n) seqlens.push_back(n);
  Json document = scenario_with(Json{{"batch", 1 << 20}, {"heads", 1}, {"head_dim", 1}});
  document["sweep"] = Json{{"seqlen", seqlens}};
  expect_refused(run_attnbench_bounded({"validate", save("distinct.json", document)}, 60, rlim_t{4} << 30),
                 "distinct.json: 99950 more problems not shown", 20000);

  // Every sweep value out of range, then the cases past the schema's first
  // 1,000 errors: each case looked for its values among the broken paths.
  document["sweep"]["seqlen"] = std::vector<int>(100000, 0);
  expect_refused(run_attnbench_bounded({"validate", save("zeros.json", document)}, 60, rlim_t{4} << 30),
                 "zeros.json: has more problems than the 1000 below", 20000);
}

// ---- 13.4: bounded input files ----

TEST_F(HostileInput, OnlyRegularFilesOfBoundedSizeAreRead) {
  expect_refused(run_attnbench_bounded({"validate", "/dev/zero"}), "/dev/zero: is not a regular file (a device)");
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  expect_refused(run_attnbench_bounded({"validate", path("fifo").string()}), "is not a regular file (a FIFO)");
  expect_refused(run_attnbench_bounded({"validate", directory_.string()}), "is a directory");

  const fs::path huge = path("huge.json");
  std::ofstream(huge).close();
  fs::resize_file(huge, (std::uintmax_t{64} << 20) + 1);  // sparse: no disk used
  const std::string limit = "huge.json: is larger than 64 MiB, the most an input file may hold";
  expect_refused(run_attnbench_bounded({"validate", huge.string()}), limit);
  const std::string results = tiny_results("a.json");
  expect_refused(run_attnbench_bounded({"compare", results, results, "--config", huge.string()}), limit);
  expect_refused(run_attnbench_bounded({"compare", "/dev/zero", results}), "is not a regular file");
  // Results files are files attnbench writes itself: bounded at 16 GiB, and
  // one that is no JSON is refused at its first byte, not read whole.
  expect_refused(run_attnbench_bounded({"report", huge.string(), "--table", "fig2"}), "huge.json: not valid JSON");
  const fs::path larger = path("larger.json");
  std::ofstream(larger).close();
  fs::resize_file(larger, (std::uintmax_t{16} << 30) + 1);
  const std::string results_limit = "larger.json: is larger than 16 GiB, the most a results file may hold";
  expect_refused(run_attnbench_bounded({"report", larger.string(), "--table", "fig2"}), results_limit);
  expect_refused(run_attnbench_bounded({"compare", results, larger.string()}), results_limit);
}

// ---- 13.5: malformed results files ----

TEST_F(HostileInput, MalformedResultsFilesAreBadInputForEveryReader) {
  const std::string scenario_file = path("a.json.scenario.json").string();
  const Json good = read_json(tiny_results("a.json"));
  const std::vector<std::pair<std::string, Json>> corruptions = {
      {"schema", nullptr}, {"schema", 5}, {"schema", Json::array()}, {"complete", "no"}};
  for (const auto& [key, value] : corruptions) {
    SCOPED_TRACE(key + " = " + value.dump());
    Json bad = good;
    bad[key] = value;
    const std::string file = save("bad.json", bad);
    const std::string named = "bad.json: " + key + ": ";
    expect_refused(run_attnbench_bounded({"compare", file, file}), named);
    expect_refused(run_attnbench_bounded({"report", file, "--table", "fig2"}), named);
    expect_refused(run_attnbench_bounded({"merge", file, "-o", path("m.json").string()}), named);
    expect_refused(run_attnbench_bounded({"run", scenario_file, "--impl", "cpu.standard", "-o", file, "--resume"}), named);
    expect_refused(run_attnbench_bounded({"run", scenario_file, "--impl", "cpu.standard", "-o", file}), named);
    EXPECT_EQ(read_json(file), bad) << "the file is left as it was";
  }
}

TEST_F(HostileInput, AValidUnfinishedRunIsOnlyContinued) {
  const std::string file = tiny_results("a.json");
  Json unfinished = read_json(file);
  unfinished["complete"] = false;
  unfinished["finished_at"] = nullptr;
  write_json(file, unfinished);
  expect_refused(run_attnbench_bounded({"run", path("a.json.scenario.json").string(), "-o", file}),
                 "holds an unfinished run (1 record); continue it with --resume");
  EXPECT_EQ(read_json(file), unfinished);
}

// ---- 13.7: paths and option values ----

TEST_F(HostileInput, AFileNameTooLongForTheFileSystemIsBadInput) {
  const std::string scenario = save("s.json", scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4},
                                                                 {"head_dim", 2}}));
  const std::string long_name = path(std::string(300, 'n') + ".json").string();
  const std::string message = "is longer than 255 bytes";
  expect_refused(run_attnbench_bounded({"validate", long_name}), message);
  expect_refused(run_attnbench_bounded({"run", long_name}), message);
  expect_refused(run_attnbench_bounded({"run", scenario, "-o", long_name}), message);
  expect_refused(run_attnbench_bounded({"run", scenario, "--dump", long_name}), message);
  expect_refused(run_attnbench_bounded({"compare", long_name, long_name}), message);
  expect_refused(run_attnbench_bounded({"report", long_name, "--table", "fig2"}), message);
  expect_refused(run_attnbench_bounded({"merge", scenario, "-o", long_name}), message);
}

TEST_F(HostileInput, PathsThatAreNotUtf8AreRecordedEscaped) {
  const std::string scenario = save("s\xff.json", scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4},
                                                                     {"head_dim", 2}}));
  const std::string output = path("out.json").string();
  const BoundedResult run = run_attnbench_bounded({"run", scenario, "--impl", "cpu.standard", "-o", output});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = load_results_file(output);  // parses: valid UTF-8 throughout
  const std::string escaped = path("s\\xFF.json").string();
  EXPECT_EQ(results["scenarios"][0]["path"], escaped);
  EXPECT_EQ(results["command_line"][2], escaped);
}

TEST_F(HostileInput, OutputsThatAreNotUtf8AreWrittenAndRead) {
  // The journal's header, a merge's command line and a report's source note
  // held the raw bytes, which JSON cannot (internal error, exit 1).
  const std::string scenario = save("s.json", scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4},
                                                                 {"head_dim", 2}}));
  const std::string output = path("o\xff.json").string();
  const BoundedResult run = run_attnbench_bounded({"run", scenario, "--impl", "cpu.standard", "-o", output});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(load_results_file(output)["command_line"][6], path("o\\xFF.json").string());
  EXPECT_FALSE(fs::exists(output + ".journal"));

  const std::string merged = path("m\xff.json").string();
  const BoundedResult merge = run_attnbench_bounded({"merge", output, "-o", merged});
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_EQ(load_results_file(merged)["command_line"][4], path("m\\xFF.json").string());

  const BoundedResult report = run_attnbench_bounded({"report", output, "--table", "fig2", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("Source: " + path("o\\\\xFF.json").string()), std::string::npos) << report.output;
}

TEST_F(HostileInput, AnOutputNameLeavesRoomForTheFilesBesideIt) {
  // 250 bytes fit a file system, but not with ".tmp.<pid>" or ".journal"
  // after them: the run ended with exit 4 ("File name too long"), the merge
  // with an internal error.
  const std::string scenario = save("s.json", scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4},
                                                                 {"head_dim", 2}}));
  const std::string results = tiny_results("a.json");
  const std::string long_name = path(std::string(245, 'n') + ".json").string();
  const std::string message = "is longer than 243 bytes, the most an output may have";
  expect_refused(run_attnbench_bounded({"run", scenario, "--impl", "cpu.standard", "-o", long_name}), message);
  expect_refused(run_attnbench_bounded({"merge", results, "-o", long_name}), message);
  expect_refused(run_attnbench_bounded({"report", results, "--table", "fig2", "-o", long_name}), message);
  expect_refused(run_attnbench_bounded({"compare", results, results, "--json", long_name}), message);
  EXPECT_FALSE(fs::exists(long_name));

  const std::string longest = path(std::string(238, 'n') + ".json").string();  // 243 bytes
  const BoundedResult run = run_attnbench_bounded({"run", scenario, "--impl", "cpu.standard", "-o", longest});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::exists(longest));
}

TEST_F(HostileInput, AnEmptyImplementationListIsBadUsage) {
  const std::string scenario = save("s.json", scenario_with(Json{{"batch", 1}, {"heads", 1}, {"seqlen", 4},
                                                                 {"head_dim", 2}}));
  for (const std::string list : {"", ",,,"}) {
    SCOPED_TRACE("--impl '" + list + "'");
    expect_refused(run_attnbench_bounded({"run", scenario, "--impl", list, "-o", path("o.json").string()}),
                   "names no implementation");
    expect_refused(run_attnbench_bounded({"list", scenario, "--impl", list}), "names no implementation");
    EXPECT_FALSE(fs::exists(path("o.json")));
  }
}

}  // namespace
}  // namespace attnbench
