// The regression gate on synthetic results documents (valid against the results
// schema): matching and unmatched cells, device identity, each metric's
// tolerance, record statuses, throttling, the cell verdict and exit codes, the
// configuration file with its overrides, and the rendered outputs.
#include "harness/compare/gate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>

#include "harness/compare/outputs.hpp"
#include "harness/compare/statistics.hpp"
#include "harness/errors.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// A results file with no records, on one CPU.
Json results_document() {
  return Json::parse(R"({
    "schema": "attnbench.results/1",
    "tool": {"name": "attnbench", "version": "0.1.0", "git_revision": "abc1234", "build_type": "Release",
             "compiler": "GNU-13.2.0", "cuda_built": false},
    "command_line": ["attnbench", "run", "synthetic.json"],
    "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:00Z", "complete": true,
    "host": {"hostname": "bench", "os": "Linux", "cpu_model": "Test CPU", "logical_cpus": 2, "memory_bytes": 1073741824},
    "devices": [{"kind": "cpu", "name": "Test CPU", "logical_cpus": 2, "last_level_cache_bytes": 1048576,
                 "memory_bytes": 1073741824}],
    "threads": 2, "shard": null, "scenarios": [], "records": []})");
}

// `count` samples around `median` seconds with 1% lognormal noise, seeded.
std::vector<double> samples(double median, std::uint64_t seed, std::size_t count = 20) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> values(count);
  for (double& value : values) value = median * std::exp(noise(random));
  return values;
}

// One ok record of cpu.flash for case `case_key`, timed by `timing_samples`.
Json record(const std::string& case_key, const std::vector<double>& timing_samples,
            const std::string& implementation = "cpu.flash") {
  Json r = Json::parse(R"({
    "scenario": "synthetic", "case_index": 0, "case_key": "", "case_origin": "cases[0]",
    "implementation": "", "device": "cpu",
    "problem": {"batch": 1, "heads": 1, "kv_heads": 1, "seqlen_q": 64, "seqlen_k": 64, "head_dim": 16, "dtype": "fp16",
                "layout": "bshd", "causal": false, "window": null, "align": "bottom_right",
                "padding": {"kind": "none", "lengths_q": [64], "lengths_k": [64]},
                "dropout": {"p": 0, "seed": 0, "offset": 0}, "scale": 0.25, "scale_is_default": true,
                "direction": "fwd", "input": {"distribution": "normal", "mean": 0, "std": 1, "seed": 0},
                "block_q": null, "block_k": null},
    "status": "ok", "reason": "", "configuration": {},
    "flops": {"visible_pairs": 4096, "forward": 262144, "backward": 655360, "total": 262144},
    "timing": {"clock": "host", "cache": "hot", "cache_flush_bytes": 0, "warmup_iterations": 1, "warmup_seconds": 0.001,
               "samples_seconds": [], "converged": true, "stop_reason": "converged", "wall_seconds": 0.1,
               "throttled": null,
               "statistics": {"count": 20, "min": 0.001, "p10": 0.001, "p25": 0.001, "p50": 0.001, "p75": 0.001,
                              "p90": 0.001, "p99": 0.001, "max": 0.001, "mean": 0.001, "stddev": 0.00001,
                              "median_ci_low": 0.001, "median_ci_high": 0.001, "median_ci_confidence": 0.95,
                              "median_ci_defined": true},
               "tflops": 0.26, "compulsory_bandwidth_gb_per_s": 8.2},
    "memory": {"peak_bytes": 1048576, "input_bytes": 6144, "output_bytes": 2048, "workspace_bytes": 0,
               "extra_bytes": 1040384},
    "traffic": {"compulsory": {"read_bytes": 6144, "write_bytes": 2048},
                "counted": {"read_bytes": 800000, "write_bytes": 200000}, "measured": null},
    "accuracy": {"status": "passed", "reason": "", "oracle": "cpu.reference",
                 "sample": {"complete": true, "query_heads": 1, "query_rows": 64, "kv_heads": 1,
                            "key_side_checked": true, "oracle_macs": 65536},
                 "baseline": "cpu.standard", "rule_applied": true,
                 "tensors": {"O": {"checked": 1024, "max_abs_error": 0.001, "mean_abs_error": 0.0001,
                                   "relative_l2_error": 0.0001, "oracle_max_abs": 2.0, "nan": 0, "inf": 0,
                                   "infinity_mismatch": 0, "oracle_nonfinite": 0, "bound": 0.02,
                                   "rule_limit": 0.003, "passed": true}}}})");
  r["case_key"] = case_key;
  r["implementation"] = implementation;
  r["timing"]["samples_seconds"] = timing_samples;
  return r;
}

// BASE and NEW with the same three cells, timed alike (different seeds).
struct Pair {
  Json base = results_document();
  Json next = results_document();
  Pair() {
    for (int i = 0; i < 3; ++i) {
      const std::string key = "case" + std::to_string(i);
      base["records"].push_back(record(key, samples(1e-3, 10 + i)));
      next["records"].push_back(record(key, samples(1e-3, 20 + i)));
    }
  }
  Json& new_record(int i) { return next["records"][i]; }
  Json& base_record(int i) { return base["records"][i]; }
  CompareReport compare(const CompareSettings& settings = {}) const {
    expect_valid(base);
    expect_valid(next);
    return compare_results(base, next, settings, "base.json", "new.json");
  }
  static void expect_valid(const Json& document) {
    static const JsonSchema schema(results_schema());
    std::string all;
    for (const SchemaError& error : schema.validate(document)) all += format_error(error) + "\n";
    EXPECT_TRUE(all.empty()) << all;
  }
};

const CellComparison& cell(const CompareReport& report, const std::string& case_key) {
  for (const CellComparison& c : report.cells) {
    if (c.case_key == case_key) return c;
  }
  throw std::runtime_error("no cell " + case_key);
}

TEST(Compare, TheSameMeasurementsTwicePass) {
  const Pair pair;
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 0);
  ASSERT_EQ(report.cells.size(), 3u);
  for (const CellComparison& c : report.cells) {
    EXPECT_EQ(c.verdict, CompareVerdict::pass) << c.case_key;
    ASSERT_NE(c.metric("time"), nullptr);
    ASSERT_NE(c.metric("hbm_bytes"), nullptr);
    ASSERT_NE(c.metric("peak_memory"), nullptr);
    ASSERT_NE(c.metric("accuracy"), nullptr);
  }
  EXPECT_TRUE(report.only_in_base.empty());
  EXPECT_TRUE(report.only_in_new.empty());
}

TEST(Compare, ASlowerCellRegressesAndAFasterOneImprovesWithoutFailing) {
  Pair slower;
  slower.new_record(1)["timing"]["samples_seconds"] = samples(1.3e-3, 21);
  const CompareReport regressed = slower.compare();
  EXPECT_EQ(regressed.exit_code, 1);
  EXPECT_EQ(cell(regressed, "case1").verdict, CompareVerdict::regression);
  EXPECT_EQ(cell(regressed, "case0").verdict, CompareVerdict::pass);

  Pair faster;
  faster.new_record(1)["timing"]["samples_seconds"] = samples(0.7e-3, 21);
  const CompareReport improved = faster.compare();
  EXPECT_EQ(improved.exit_code, 0);
  EXPECT_EQ(cell(improved, "case1").verdict, CompareVerdict::improvement);
}

TEST(Compare, HbmBytesBeyondTheirToleranceRegress) {
  Pair pair;
  pair.new_record(0)["traffic"]["counted"]["read_bytes"] = 800000 + 20000;  // +2% of 1e6
  pair.new_record(1)["traffic"]["counted"]["read_bytes"] = 800000 + 5000;   // +0.5%
  pair.new_record(2)["traffic"]["counted"]["read_bytes"] = 800000 - 20000;  // -2%
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::regression);
  EXPECT_EQ(cell(report, "case0").metric("hbm_bytes")->summary, "HBM bytes (counted) +2.0% > 1.00% (976.56 KiB -> 996.09 KiB)");
  EXPECT_NEAR(cell(report, "case0").metric("hbm_bytes")->details["relative_change"].get<double>(), 0.02, 1e-12);
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::pass);
  EXPECT_EQ(cell(report, "case2").verdict, CompareVerdict::improvement);

  CompareSettings looser;
  looser.defaults.hbm_tolerance = 0.03;
  EXPECT_EQ(pair.compare(looser).exit_code, 0);
}

TEST(Compare, PeakMemoryBeyondItsSlackRegresses) {
  Pair pair;
  pair.new_record(0)["memory"]["peak_bytes"] = 1048576 + 4096;
  pair.new_record(1)["memory"]["peak_bytes"] = 1048576 - 4096;
  CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::regression);
  EXPECT_EQ(cell(report, "case0").metric("peak_memory")->summary,
            "peak memory +4.00 KiB > slack 0 B (1.00 MiB -> 1.00 MiB)");
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::improvement);

  CompareSettings slack;
  slack.defaults.memory_slack = 4096;
  report = pair.compare(slack);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::pass) << "within the slack";
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::pass);
}

TEST(Compare, AccuracyBeyondTheFactorOfBasesErrorRegresses) {
  // BASE's O error is 1e-3 at magnitude 2: the limit is 2 x 1e-3 + 16 x 2^-24 x 2.
  const double floor = 16.0 * std::ldexp(1.0, -24) * 2.0;
  Pair pair;
  pair.new_record(0)["accuracy"]["tensors"]["O"]["max_abs_error"] = 0.002 + 2 * floor;
  pair.new_record(1)["accuracy"]["tensors"]["O"]["max_abs_error"] = 0.002 + floor / 2;
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 1);
  const CellComparison& worse = cell(report, "case0");
  EXPECT_EQ(worse.verdict, CompareVerdict::regression);
  EXPECT_NE(worse.metric("accuracy")->summary.find("O max abs error 2.00e-03 > 2.0 x 1.00e-03 + 1.91e-06"), std::string::npos)
      << worse.metric("accuracy")->summary;
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::pass);

  CompareSettings factor;
  factor.defaults.accuracy_factor = 3;
  EXPECT_EQ(pair.compare(factor).exit_code, 0);
}

TEST(Compare, AFailedRecordOrFailedAccuracyInNewRegresses) {
  Pair pair;
  pair.new_record(0)["status"] = "failed";
  pair.new_record(0)["reason"] = "accuracy: O: max abs error 5e-02 > bound";
  pair.new_record(0)["accuracy"]["status"] = "failed";
  pair.new_record(1)["accuracy"]["status"] = "failed";  // a status "ok" record with failed accuracy
  pair.new_record(1)["accuracy"]["reason"] = "O: too large";
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::regression);
  EXPECT_EQ(cell(report, "case0").metric("status")->summary, "NEW failed: accuracy: O: max abs error 5e-02 > bound");
  EXPECT_EQ(cell(report, "case1").metric("accuracy")->verdict, CompareVerdict::regression);

  // Failed in both: a failed accuracy in NEW still regresses; another failure is inconclusive.
  Pair both;
  for (Json* r : {&both.base_record(0), &both.new_record(0), &both.base_record(1), &both.new_record(1)}) {
    (*r)["status"] = "failed";
    (*r)["reason"] = "error";
  }
  both.new_record(0)["accuracy"]["status"] = "failed";
  const CompareReport failed = both.compare();
  EXPECT_EQ(cell(failed, "case0").verdict, CompareVerdict::regression);
  EXPECT_EQ(cell(failed, "case1").verdict, CompareVerdict::inconclusive);
}

TEST(Compare, StatusTransitions) {
  Pair pair;
  pair.new_record(0)["status"] = "skipped";  // NEW skipped where BASE ran
  pair.new_record(0)["reason"] = "would not fit";
  pair.new_record(0)["timing"] = nullptr;
  for (Json* r : {&pair.base_record(1), &pair.new_record(1)}) {  // skipped in both
    (*r)["status"] = "skipped";
    (*r)["timing"] = nullptr;
  }
  pair.base_record(2)["status"] = "failed";  // fixed in NEW
  pair.base_record(0)["status"] = "failed";  // failed in BASE, skipped in NEW: not a missing cell
  CompareReport report = pair.compare();
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::inconclusive);
  EXPECT_EQ(cell(report, "case0").metric("status")->summary, "NEW skipped: would not fit");
  EXPECT_TRUE(report.missing.empty());
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::pass);
  EXPECT_EQ(cell(report, "case1").metric("status")->summary, "skipped in BASE and NEW: nothing to compare");
  EXPECT_EQ(cell(report, "case2").verdict, CompareVerdict::improvement);
  EXPECT_EQ(report.exit_code, 3) << "inconclusive and nothing regressed";

  Pair untimed;
  untimed.base_record(0)["timing"] = nullptr;  // an ok record without timing
  report = untimed.compare();
  EXPECT_EQ(cell(report, "case0").metric("time")->verdict, CompareVerdict::inconclusive);
  EXPECT_EQ(cell(report, "case0").metric("time")->summary, "time: no timing in BASE");
  EXPECT_EQ(report.exit_code, 3);
}

TEST(Compare, AThrottledRecordMakesTimeInconclusive) {
  Pair pair;
  pair.new_record(0)["timing"]["throttled"] = true;
  pair.new_record(0)["timing"]["samples_seconds"] = samples(1.5e-3, 3);  // would be a regression
  pair.base_record(1)["timing"]["throttled"] = false;
  pair.new_record(1)["timing"]["throttled"] = false;
  CompareReport report = pair.compare();
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::inconclusive);
  EXPECT_EQ(cell(report, "case0").metric("time")->summary, "time: throttled (NEW)");
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::pass) << "false: monitored and not throttled";
  EXPECT_EQ(cell(report, "case2").verdict, CompareVerdict::pass) << "null: not monitored";
  EXPECT_EQ(report.exit_code, 3);

  pair.new_record(1)["memory"]["peak_bytes"] = 2 * 1048576;  // a regression elsewhere wins
  EXPECT_EQ(pair.compare().exit_code, 1);
}

TEST(Compare, SimulatedTimesGetNoVerdictWhileMemoryAndAccuracyStillDo) {
  Pair pair;
  for (int i = 0; i < 3; ++i) {
    pair.base_record(i)["timing"]["simulated"] = true;
    pair.new_record(i)["timing"]["simulated"] = true;
    pair.base_record(i)["timing"]["samples_seconds"] = samples(1e-3, 30 + i, 1);
  }
  pair.new_record(0)["timing"]["samples_seconds"] = samples(5e-3, 40, 1);  // five times slower: no matter
  pair.new_record(1)["memory"]["peak_bytes"] = 2 * 1048576;
  const CompareReport report = pair.compare();
  const MetricComparison* time = cell(report, "case0").metric("time");
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->verdict, CompareVerdict::pass);
  EXPECT_EQ(time->summary, "time: not judged (simulated on the CPU)");
  EXPECT_FALSE(report.time_summary().geometric_mean_ratio) << "no simulated time in the geometric mean";
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::regression) << "peak memory is still judged";
  EXPECT_EQ(report.exit_code, 1);
}

TEST(Compare, DifferentDevicesAreRefusedUnlessAllowed) {
  Pair pair;
  pair.next["devices"][0]["name"] = "Other CPU";
  pair.next["devices"][0]["free_memory_bytes"] = 12345;  // volatile: ignored
  CompareReport report = pair.compare();
  EXPECT_TRUE(report.refused);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_TRUE(report.cells.empty());
  ASSERT_EQ(report.device_differences.size(), 1u);
  EXPECT_EQ(report.device_differences[0].format(), "cpu name: \"Test CPU\" (BASE) vs \"Other CPU\" (NEW)");
  EXPECT_NE(render_compare_refusal(report).find("--allow-different-devices"), std::string::npos);

  CompareSettings allowed;
  allowed.allow_different_devices = true;
  report = pair.compare(allowed);
  EXPECT_FALSE(report.refused);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(report.device_differences.size(), 1u) << "still reported";

  Pair volatile_only;
  volatile_only.next["devices"][0]["sm_clock_mhz"] = 1410;
  volatile_only.next["devices"][0]["logical_cpus"] = 4;
  EXPECT_EQ(volatile_only.compare().exit_code, 0) << "only identity fields count";
  Pair undescribed;  // no cpu device in NEW: its cpu records were all skipped
  undescribed.next["devices"] = Json::array();
  for (Json& r : undescribed.next["records"]) {
    r["status"] = "skipped";
    r["timing"] = nullptr;
  }
  EXPECT_FALSE(undescribed.compare().refused);
  Pair driver;
  driver.next["devices"][0]["driver"] = "550.54";
  report = driver.compare();
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(report.device_differences.at(0).format(), "cpu driver: (absent) (BASE) vs \"550.54\" (NEW)");
  Pair clocks;  // the clock state: locked clocks against default ones
  clocks.base["devices"][0]["clock_policy"] = "default";
  clocks.next["devices"][0]["clock_policy"] = "locked sm 1980 MHz, memory 2619 MHz";
  report = clocks.compare();
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(report.device_differences.at(0).field, "clock_policy");
}

// A scenarios entry for "synthetic" with the given effective measure settings.
Json synthetic_scenario(const std::string& cache = "hot", int min_samples = 10) {
  Json scenario = Json::parse(R"({"path": "synthetic.json", "name": "synthetic", "description": "", "source": {},
    "implementations": ["cpu.flash"],
    "measure": {"warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 10, "max_samples": 100,
                "min_seconds": 0, "max_seconds": 1, "target_ci_width": 0.02, "cache": "hot"},
    "accuracy": {"check": true, "max_oracle_macs": 4e9, "seed": 0, "floor_factor": 2,
                 "bound": {"fp64": 1e-12, "fp32": 1e-4, "fp16": 1e-2, "bf16": 5e-2}},
    "case_count": 3})");
  scenario["measure"]["cache"] = cache;
  scenario["measure"]["min_samples"] = min_samples;
  return scenario;
}

TEST(Compare, DifferentThreadsAreRefusedUnlessAllowed) {
  Pair pair;
  pair.next["threads"] = 1;
  CompareReport report = pair.compare();
  EXPECT_TRUE(report.refused);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_TRUE(report.cells.empty());
  ASSERT_EQ(report.setting_differences.size(), 1u);
  EXPECT_EQ(report.setting_differences[0].format(), "threads: 2 (BASE) vs 1 (NEW)");
  const std::string refusal = render_compare_refusal(report);
  EXPECT_NE(refusal.find("run settings of base.json (BASE) and new.json (NEW) differ"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("--allow-different-settings"), std::string::npos) << refusal;

  CompareSettings allowed;
  allowed.allow_different_settings = true;
  report = pair.compare(allowed);
  EXPECT_FALSE(report.refused);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_NE(render_compare_terminal(report).find("run settings differ (allowed): threads: 2 (BASE) vs 1 (NEW)"),
            std::string::npos);
  EXPECT_EQ(compare_report_json(report)["run_settings"]["differences"][0]["setting"], "threads");

  Pair devices_too;  // both refusals at once
  devices_too.next["threads"] = 1;
  devices_too.next["devices"][0]["name"] = "Other CPU";
  EXPECT_NE(render_compare_terminal(devices_too.compare()).find("the devices and the run settings differ"),
            std::string::npos);
  CompareSettings devices_allowed;
  devices_allowed.allow_different_devices = true;
  EXPECT_TRUE(devices_too.compare(devices_allowed).refused) << "allowing devices does not allow settings";

  Pair device_records;  // threads do not shape records of another device
  for (Json* document : {&device_records.base, &device_records.next}) {
    (*document)["devices"][0]["kind"] = "cuda";
    for (Json& r : (*document)["records"]) r["device"] = "cuda";
  }
  device_records.next["threads"] = 8;
  EXPECT_TRUE(device_records.compare().setting_differences.empty());
}

TEST(Compare, DifferentMeasureSettingsOrCacheModesAreRefused) {
  Pair pair;
  pair.base["scenarios"].push_back(synthetic_scenario("cold", 10));
  pair.next["scenarios"].push_back(synthetic_scenario("hot", 20));
  CompareReport report = pair.compare();
  EXPECT_TRUE(report.refused);
  ASSERT_EQ(report.setting_differences.size(), 2u);
  EXPECT_EQ(report.setting_differences[0].format(), "synthetic measure.cache: \"cold\" (BASE) vs \"hot\" (NEW)");
  EXPECT_EQ(report.setting_differences[1].format(), "synthetic measure.min_samples: 10 (BASE) vs 20 (NEW)");

  Pair same;
  same.base["scenarios"].push_back(synthetic_scenario());
  same.next["scenarios"].push_back(synthetic_scenario());
  EXPECT_FALSE(same.compare().refused);

  // Scenarios agree, but one record was measured in another cache mode (a run
  // continued with --cold): refused too, naming a record.
  same.new_record(1)["timing"]["cache"] = "cold";
  report = same.compare();
  EXPECT_TRUE(report.refused);
  ASSERT_EQ(report.setting_differences.size(), 1u);
  EXPECT_EQ(report.setting_differences[0].format(),
            "timing.cache of 1 record(s), e.g. synthetic/case1 cpu.flash: \"hot\" (BASE) vs \"cold\" (NEW)");
}

TEST(Compare, RunsTimedByDifferentMethodsAreRefusedUnlessAllowed) {
  Pair methods;
  methods.base["scenarios"].push_back(synthetic_scenario());
  methods.next["scenarios"].push_back(synthetic_scenario());
  methods.next["scenarios"][0]["measure"]["timing"] = Json::array({"cupti"});
  CompareReport report = methods.compare();
  EXPECT_TRUE(report.refused);
  ASSERT_EQ(report.setting_differences.size(), 1u) << "the records' own timing.method is not named twice";
  EXPECT_EQ(report.setting_differences[0].format(), "synthetic measure.timing: [\"events\"] (BASE) vs [\"cupti\"] (NEW)");
  CompareSettings allowed;
  allowed.allow_different_settings = true;
  EXPECT_FALSE(methods.compare(allowed).refused);

  // A file from before the timing methods was timed by events: it compares
  // with one that says so, whatever graph and clock-mark defaults it names.
  Pair older;
  older.base["scenarios"].push_back(synthetic_scenario());
  older.next["scenarios"].push_back(synthetic_scenario());
  older.next["scenarios"][0]["measure"]["timing"] = Json::array({"events"});
  older.next["scenarios"][0]["measure"]["graph_calls"] = 10;
  older.next["scenarios"][0]["measure"]["clock_mark_share"] = 0.85;
  for (Json& record : older.next["records"]) record["timing"]["method"] = "events";
  EXPECT_FALSE(older.compare().refused) << older.compare().setting_differences.size();

  // The same fallback order, but one record fell back on one side only.
  Pair fallback;
  fallback.base["scenarios"].push_back(synthetic_scenario());
  fallback.next["scenarios"].push_back(synthetic_scenario());
  for (Json* document : {&fallback.base, &fallback.next}) {
    (*document)["scenarios"][0]["measure"]["timing"] = Json::array({"cupti", "events"});
    for (Json& record : (*document)["records"]) record["timing"]["method"] = "cupti";
  }
  fallback.new_record(1)["timing"]["method"] = "events";
  report = fallback.compare();
  EXPECT_TRUE(report.refused);
  ASSERT_EQ(report.setting_differences.size(), 1u);
  EXPECT_EQ(report.setting_differences[0].format(),
            "timing.method of 1 record(s), e.g. synthetic/case1 cpu.flash: \"cupti\" (BASE) vs \"events\" (NEW)");
}

TEST(CompareOutputs, TimeAndMemoryHaveTheirOwnVerdictColumns) {
  // Slower but within the threshold, with less peak memory: the cell is an
  // improvement, and the row must not read as a faster time.
  Pair pair;
  pair.new_record(0)["timing"]["samples_seconds"] = samples(1.02e-3, 20);
  pair.new_record(0)["memory"]["peak_bytes"] = 1048576 - 4096;
  const CompareReport report = pair.compare();
  ASSERT_EQ(cell(report, "case0").verdict, CompareVerdict::improvement);
  ASSERT_EQ(cell(report, "case0").metric("time")->verdict, CompareVerdict::pass);
  const std::string terminal = render_compare_terminal(report);
  std::istringstream lines(terminal);
  std::string header, row, previous;
  for (std::string line; std::getline(lines, line); previous = line) {
    if (line.rfind("verdict", 0) == 0) header = line;
    // The row of verdicts, then the cell indented on the line below it.
    if (line == "  synthetic/case0 cpu.flash") row = previous;
  }
  ASSERT_FALSE(row.empty()) << terminal;
  const auto column = [&](const std::string& name) { return header.find(name); };
  ASSERT_NE(column("time NEW/BASE"), std::string::npos) << header;
  ASSERT_NE(column("peak memory"), std::string::npos) << header;
  EXPECT_EQ(row.substr(0, 11), "improvement");
  EXPECT_EQ(row.substr(column("time "), 4), "pass") << row;
  EXPECT_EQ(row.at(column("time NEW/BASE")), '+') << row;
  EXPECT_EQ(row.substr(column("memory"), 11), "improvement") << row;
  EXPECT_EQ(row.substr(column("peak memory"), 9), "-4.00 KiB") << row;

  const std::string markdown = render_compare_markdown(report);
  EXPECT_NE(markdown.find("| verdict | cell | implementation | time | time NEW/BASE | memory | peak memory |"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| improvement | `synthetic/case0` | `cpu.flash` | pass | +"), std::string::npos) << markdown;
}

TEST(CompareOutputs, AGeometricMeanOfTheTimeRatiosSummarizesTheCells) {
  Pair pair;
  pair.new_record(0)["timing"]["samples_seconds"] = samples(2e-3, 20);    // x2
  pair.new_record(1)["timing"]["samples_seconds"] = samples(0.5e-3, 21);  // x0.5
  const CompareReport report = pair.compare();
  double log_sum = 0;
  for (const CellComparison& c : report.cells) log_sum += std::log(c.metric("time")->details["ratio"].get<double>());
  const double expected = std::exp(log_sum / 3);
  const CompareReport::TimeSummary summary = report.time_summary();
  EXPECT_EQ(summary.cells, 3u);
  ASSERT_TRUE(summary.geometric_mean_ratio);
  EXPECT_DOUBLE_EQ(*summary.geometric_mean_ratio, expected);
  EXPECT_NEAR(*summary.geometric_mean_ratio, 1.0, 0.02);
  const std::string line = "time NEW/BASE geometric mean over 3 cells: ";
  EXPECT_NE(render_compare_terminal(report).find(line), std::string::npos);
  EXPECT_NE(render_compare_markdown(report).find("Time NEW/BASE geometric mean over 3 cells: "), std::string::npos);
  const Json json = compare_report_json(report);
  EXPECT_EQ(json["summary"]["time_ratio_cells"], 3);
  EXPECT_DOUBLE_EQ(json["summary"]["time_ratio_geometric_mean"].get<double>(), expected);

  Pair untimed;  // cells without a ratio are left out; none at all: no line, null
  for (int i = 0; i < 3; ++i) untimed.new_record(i)["timing"]["throttled"] = true;
  const CompareReport inconclusive = untimed.compare();
  EXPECT_EQ(inconclusive.time_summary().cells, 0u);
  EXPECT_EQ(render_compare_terminal(inconclusive).find("geometric mean"), std::string::npos);
  EXPECT_TRUE(compare_report_json(inconclusive)["summary"]["time_ratio_geometric_mean"].is_null());
}

TEST(Compare, InconclusiveForLackOfSamplesSaysHowManyToTake) {
  // 24 cells, like the quick scenario: Holm's smallest level is 0.05 / 24,
  // which 6 + 6 samples reach (1 / C(12, 6) = 1/924) and 5 + 6 do not.
  EXPECT_EQ(samples_for_an_interval(0.05 / 24), 6u);
  EXPECT_EQ(samples_for_an_interval(0.05), 3u);  // 1 / C(6, 3) = 0.05
  EXPECT_EQ(samples_for_an_interval(1.0 / 184756), 10u);
  std::vector<TimeSamples> cells(24, TimeSamples{samples(1e-3, 1), samples(1e-3, 2), 0.05, 0.10, {}});
  cells[0].new_seconds.resize(4);
  cells[1].base_seconds.resize(5);
  cells[1].new_seconds.resize(5);
  const std::vector<MetricComparison> times = compare_times(cells, 0.05);
  EXPECT_EQ(times[0].verdict, CompareVerdict::inconclusive);
  EXPECT_EQ(times[0].summary,
            "time: 20 and 4 samples; at least 5 on each side are needed; rerun both with --min-samples 6 "
            "(measure.min_samples) or more");
  EXPECT_EQ(times[0].details["samples_needed"], 6);
  EXPECT_EQ(times[1].verdict, CompareVerdict::inconclusive);
  EXPECT_NE(times[1].summary.find("5 and 5 samples give no interval"), std::string::npos) << times[1].summary;
  EXPECT_NE(times[1].summary.find("rerun both with --min-samples 6"), std::string::npos) << times[1].summary;
  for (std::size_t i = 2; i < cells.size(); ++i) EXPECT_NE(times[i].verdict, CompareVerdict::inconclusive);
}

TEST(Compare, CellsThatDidNotRunInBaseOrOnlyInNewAreListedAndDoNotChangeTheExitCode) {
  Pair pair;
  Json gone = record("gone", samples(1e-3, 1));
  gone["status"] = "skipped";  // nothing was lost: it did not run in BASE either
  gone["timing"] = nullptr;
  pair.base["records"].push_back(gone);
  pair.next["records"].push_back(record("case0", samples(1e-3, 2), "cpu.standard"));  // another implementation
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(report.cells.size(), 3u);
  EXPECT_TRUE(report.missing.empty());
  ASSERT_EQ(report.only_in_base.size(), 1u);
  EXPECT_EQ(report.only_in_base[0].case_key, "gone");
  ASSERT_EQ(report.only_in_new.size(), 1u);
  EXPECT_EQ(report.only_in_new[0].implementation, "cpu.standard");
  for (const std::string& output : {render_compare_terminal(report), render_compare_markdown(report),
                                    render_compare_junit(report), compare_report_json(report).dump()}) {
    EXPECT_NE(output.find("gone"), std::string::npos) << output;
    EXPECT_NE(output.find("cpu.standard"), std::string::npos) << output;
  }
}

// ---- completeness: an unfinished file, cells missing from NEW ----

// Terminal text with its wrapped lines joined again.
std::string unwrapped(std::string text) {
  for (auto at = text.find("\n  "); at != std::string::npos; at = text.find("\n  ", at)) text.replace(at, 3, " ");
  return text;
}

// A NEW that stopped after `kept` of BASE's cells, as Ctrl-C leaves it.
Pair interrupted_after(std::size_t kept) {
  Pair pair;
  pair.next["complete"] = false;
  pair.next["finished_at"] = nullptr;
  pair.next["records"].erase(pair.next["records"].begin() + static_cast<std::ptrdiff_t>(kept),
                             pair.next["records"].end());
  return pair;
}

TEST(Compare, AnInterruptedNewIsNotComparableInEveryOutput) {
  const CompareReport report = interrupted_after(1).compare();
  EXPECT_EQ(report.cells.size(), 1u);
  EXPECT_EQ(report.count(CompareVerdict::pass), 1u);
  EXPECT_EQ(report.exit_code, 3) << "a pass of the cells it holds is not a pass of the run";
  ASSERT_EQ(report.missing.size(), 2u);
  EXPECT_EQ(report.missing[0].case_key, "case1");
  EXPECT_EQ(report.missing[0].in_new, "absent");
  EXPECT_EQ(report.unfinished(), std::vector<std::string>{"NEW"});

  const std::string terminal = unwrapped(render_compare_terminal(report));
  EXPECT_NE(terminal.find("NEW (new.json) is an unfinished run (complete: false)"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("2 cells that ran in BASE are missing from NEW: synthetic/case1 cpu.flash (absent) "
                          "synthetic/case2 cpu.flash (absent)\n"),
            std::string::npos)
      << terminal;
  EXPECT_NE(terminal.find("1 cell compared: 0 regressions, 0 inconclusive, 0 improvements, 1 pass; 2 missing from "
                          "NEW, 0 more only in BASE, 0 only in NEW"),
            std::string::npos)
      << terminal;
  EXPECT_NE(terminal.find("result: not comparable: NEW is an unfinished run and 2 cells that ran in BASE are missing "
                          "from NEW (2 absent, 0 skipped) (exit 3)"),
            std::string::npos)
      << terminal;
  EXPECT_EQ(terminal.find("only in BASE:"), std::string::npos) << "listed once, as missing";

  const std::string markdown = render_compare_markdown(report);
  EXPECT_EQ(markdown.rfind("## attnbench compare: not comparable: NEW is an unfinished run", 0), 0u) << markdown;
  EXPECT_NE(markdown.find("### Not comparable: incomplete"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| `synthetic/case2` | `cpu.flash` | absent |"), std::string::npos) << markdown;

  const std::string junit = render_compare_junit(report);
  EXPECT_NE(junit.find("tests=\"4\" failures=\"0\" errors=\"3\" skipped=\"0\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"attnbench.inputs\" name=\"NEW\">\n      <error type=\"unfinished\" "
                       "message=\"new.json is an unfinished run (complete: false)\"/>"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"synthetic.cpu.flash\" name=\"case1\">\n      <error type=\"missing\""),
            std::string::npos)
      << junit;

  const Json json = compare_report_json(report);
  EXPECT_EQ(json["exit_code"], 3);
  EXPECT_FALSE(json["inputs"]["new"]["complete"].get<bool>());
  EXPECT_TRUE(json["inputs"]["base"]["complete"].get<bool>());
  EXPECT_EQ(json["summary"]["missing"], 2);
  EXPECT_EQ(json["summary"]["unfinished"], Json::array({"NEW"}));
  EXPECT_EQ(json["missing"][1]["case_key"], "case2");
  EXPECT_FALSE(json["settings"]["allow_missing"].get<bool>());
}

TEST(Compare, AnUnfinishedBaseOrAnUnfinishedNewWithEveryCellIsNotAPassEither) {
  Pair pair;
  pair.base["complete"] = false;
  CompareReport report = pair.compare();
  EXPECT_TRUE(report.missing.empty());
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(unwrapped(render_compare_terminal(report)).find("result: not comparable: BASE is an unfinished run (exit 3)"),
            std::string::npos);
  pair.next["complete"] = false;  // a run still going may already hold every cell of BASE
  report = pair.compare();
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(unwrapped(render_compare_terminal(report)).find("BASE and NEW are unfinished runs"), std::string::npos);
}

TEST(Compare, ACellThatRanInBaseAndIsSkippedInNewIsMissing) {
  Pair pair;
  pair.new_record(2)["status"] = "skipped";
  pair.new_record(2)["reason"] = "would not fit";
  pair.new_record(2)["timing"] = nullptr;
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.cells.size(), 2u) << "not compared";
  ASSERT_EQ(report.missing.size(), 1u);
  EXPECT_EQ(report.missing[0].in_new, "skipped");
  EXPECT_EQ(report.missing[0].reason, "would not fit");
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(render_compare_terminal(report).find("  synthetic/case2 cpu.flash (skipped: would not fit)\n"),
            std::string::npos);
  EXPECT_NE(render_compare_junit(report).find("message=\"skipped in NEW (would not fit); it ran in BASE\""),
            std::string::npos);
}

TEST(Compare, AllowMissingJudgesWhatBothFilesHoldAndSaysSo) {
  CompareSettings settings;
  settings.allow_missing = true;
  const CompareReport report = interrupted_after(1).compare(settings);
  EXPECT_EQ(report.exit_code, 0);
  const std::string terminal = unwrapped(render_compare_terminal(report));
  EXPECT_NE(terminal.find("Allowed by --allow-missing: only the cells in both files were judged."), std::string::npos)
      << terminal;
  EXPECT_NE(terminal.find("result: pass (exit 0); NEW is an unfinished run and 2 cells"), std::string::npos)
      << terminal;
  EXPECT_NE(terminal.find("(allowed by --allow-missing)"), std::string::npos) << terminal;
  const std::string junit = render_compare_junit(report);
  EXPECT_NE(junit.find("tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"3\""), std::string::npos) << junit;
  const Json json = compare_report_json(report);
  EXPECT_TRUE(json["settings"]["allow_missing"].get<bool>());
  EXPECT_EQ(json["summary"]["missing"], 2);
}

TEST(Compare, ARegressionTakesPrecedenceOverMissingCells) {
  Pair pair = interrupted_after(2);
  pair.new_record(0)["status"] = "failed";
  pair.new_record(0)["reason"] = "CUDA error";
  const CompareReport report = pair.compare();
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_NE(unwrapped(render_compare_terminal(report)).find("result: regression (exit 1); NEW is an unfinished run and 1 cell "
                                                 "that ran in BASE is missing from NEW"),
            std::string::npos);
}

TEST(Compare, NoCellInCommonIsNotAPass) {
  Pair pair;
  for (Json& r : pair.next["records"]) r["scenario"] = "renamed";
  const CompareReport report = pair.compare();
  EXPECT_TRUE(report.cells.empty());
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(render_compare_terminal(report).find("no cell is in both files"), std::string::npos);
}

TEST(Compare, EveryCellSkippedOnBothSidesIsNotAPass) {
  Pair pair;
  for (Json* records : {&pair.base["records"], &pair.next["records"]}) {
    for (Json& r : *records) {
      r["status"] = "skipped";
      r["timing"] = nullptr;
    }
  }
  const CompareReport report = pair.compare();
  EXPECT_FALSE(report.cells.empty());
  EXPECT_FALSE(report.measured_anything());
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(render_compare_terminal(report).find("every common cell was skipped"), std::string::npos);
}

TEST(Compare, ACellIsAsBadAsItsWorstMetric) {
  Pair pair;
  pair.new_record(0)["timing"]["samples_seconds"] = samples(0.7e-3, 3);  // faster…
  pair.new_record(0)["memory"]["peak_bytes"] = 2 * 1048576;             // …but bigger
  pair.new_record(1)["timing"]["samples_seconds"] = samples(0.7e-3, 4);  // faster, nothing worse
  const CompareReport report = pair.compare();
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::regression);
  EXPECT_EQ(cell(report, "case0").metric("time")->verdict, CompareVerdict::improvement);
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::improvement);
}

TEST(Compare, TwoRecordsOfOneCellAreBadInput) {
  Pair pair;
  pair.next["records"].push_back(pair.next["records"][1]);
  try {
    pair.compare();
    FAIL() << "no InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("new.json: records[3]: same (scenario, case_key, implementation) as records[1]"),
              std::string::npos)
        << error.what();
  }
}

// ---- configuration ----

CompareSettings parse_config(const std::string& text) {
  std::vector<Diagnostic> diagnostics;
  const Json document = parse_json_document(text, "gate.json", diagnostics);
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return parse_compare_config(document, "gate.json");
}

std::string config_error(const std::string& text) {
  try {
    parse_config(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(CompareConfig, DefaultsAndOverridesByRegexLaterOnesWin) {
  const CompareSettings settings = parse_config(R"({
    // comments are allowed
    "time_threshold": 0.1, "alpha": 0.01, "hbm_tolerance": 0.02, "memory_slack": 1024, "accuracy_factor": 3,
    "overrides": [
      {"match": "case1", "time_threshold": 0.5},
      {"match": "^synthetic/case1/cpu\\.flash$", "memory_slack": 0},
      {"match": "case", "accuracy_factor": 4}
    ]})");
  EXPECT_DOUBLE_EQ(settings.alpha, 0.01);
  const Tolerances other = settings.for_cell("synthetic", "case0", "cpu.flash");
  EXPECT_DOUBLE_EQ(other.time_threshold, 0.1);
  EXPECT_DOUBLE_EQ(other.hbm_tolerance, 0.02);
  EXPECT_EQ(other.memory_slack, 1024u);
  EXPECT_DOUBLE_EQ(other.accuracy_factor, 4);
  const Tolerances matched = settings.for_cell("synthetic", "case1", "cpu.flash");
  EXPECT_DOUBLE_EQ(matched.time_threshold, 0.5);
  EXPECT_EQ(matched.memory_slack, 0u);
  EXPECT_EQ(settings.for_cell("synthetic", "case1", "cpu.standard").memory_slack, 1024u) << "anchored pattern";

  // A 30% slowdown passes in the cell whose threshold is 50%, and fails elsewhere.
  Pair pair;
  pair.new_record(1)["timing"]["samples_seconds"] = samples(1.3e-3, 21);
  CompareReport report = pair.compare(settings);
  EXPECT_EQ(cell(report, "case1").verdict, CompareVerdict::pass);
  EXPECT_DOUBLE_EQ(cell(report, "case1").tolerances.time_threshold, 0.5);
  EXPECT_EQ(report.exit_code, 0);
  pair.new_record(0)["timing"]["samples_seconds"] = samples(1.3e-3, 20);
  report = pair.compare(settings);
  EXPECT_EQ(cell(report, "case0").verdict, CompareVerdict::regression);
}

TEST(CompareConfig, CommandLineFlagsReplaceTheDefaultsAndOverridesStillApply) {
  CompareSettings settings = parse_config(R"({"time_threshold": 0.1, "overrides": [{"match": "case1", "time_threshold": 0.5}]})");
  apply_command_line_settings(settings, Json{{"time_threshold", 0.2}, {"allow_different_devices", true}});
  EXPECT_DOUBLE_EQ(settings.for_cell("synthetic", "case0", "cpu.flash").time_threshold, 0.2);
  EXPECT_DOUBLE_EQ(settings.for_cell("synthetic", "case1", "cpu.flash").time_threshold, 0.5);
  EXPECT_TRUE(settings.allow_different_devices);
  try {
    apply_command_line_settings(settings, Json{{"alpha", 0.7}});
    FAIL() << "no InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.diagnostics().at(0).path, "--alpha");
  }
  try {
    apply_command_line_settings(settings, Json{{"time_threshold", std::nan("")}});
    FAIL() << "no InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.diagnostics().at(0).format(), "--time-threshold: must be a finite number");
  }
}

TEST(CompareConfig, BadConfigurationsNameTheFileAndTheKey) {
  EXPECT_NE(config_error(R"({"time_treshold": 0.1})").find("gate.json: time_treshold: unknown key"), std::string::npos)
      << config_error(R"({"time_treshold": 0.1})");
  EXPECT_NE(config_error(R"({"alpha": 0.7})").find("gate.json: alpha: "), std::string::npos);
  EXPECT_NE(config_error(R"({"memory_slack": -1})").find("gate.json: memory_slack: "), std::string::npos);
  EXPECT_NE(config_error(R"({"memory_slack": 1.5})").find("gate.json: memory_slack: "), std::string::npos);
  EXPECT_NE(config_error(R"({"overrides": [{"match": "(", "time_threshold": 1}]})")
                .find("gate.json: overrides[0].match: \"(\" is not a valid regular expression"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"overrides": [{"match": "x"}]})").find("gate.json: overrides[0]: "), std::string::npos)
      << "an override that changes nothing";
  EXPECT_NE(config_error(R"({"overrides": [{"match": "x", "alpha": 0.1}]})").find("overrides[0].alpha: unknown key"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"alpha": 0.1, "alpha": 0.2})").find("gate.json: alpha: key given twice"), std::string::npos);
  EXPECT_EQ(config_error(R"({})"), "");
}

// ---- outputs ----

TEST(CompareOutputs, JUnitHasOneTestCasePerCellWithEscapedNamesAndTheEstimateInTheFailure) {
  Pair pair;
  for (Json* r : {&pair.base_record(2), &pair.new_record(2)}) (*r)["case_key"] = "a<b>&\"c'";
  pair.new_record(0)["timing"]["samples_seconds"] = samples(1.3e-3, 20);
  pair.new_record(1)["timing"]["throttled"] = true;
  const CompareReport report = pair.compare();
  const std::string junit = render_compare_junit(report);
  EXPECT_NE(junit.find("<testsuite name=\"attnbench compare\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"synthetic.cpu.flash\" name=\"a&lt;b&gt;&amp;&quot;c&apos;\">"),
            std::string::npos)
      << junit;
  std::string time = cell(report, "case0").metric("time")->summary;  // "time +30.0% [+29.2%, +30.8%] > +5.0%"
  ASSERT_NE(time.find("] > +5.0%"), std::string::npos) << time;
  time.replace(time.find('>'), 1, "&gt;");
  EXPECT_NE(junit.find("<failure type=\"regression\" message=\"" + time + "\"/>"), std::string::npos) << junit;
  EXPECT_NE(junit.find("<skipped message=\"time: throttled (NEW)\"/>"), std::string::npos) << junit;

  // Characters XML 1.0 cannot carry at all (U+FFFF, a control character) are
  // replaced; other non-ASCII text (U+00E9) is kept as it is.
  for (Json* r : {&pair.base_record(2), &pair.new_record(2)}) (*r)["case_key"] = "x\xef\xbf\xbf\x01y\xc3\xa9";
  const std::string replaced = render_compare_junit(pair.compare());
  EXPECT_NE(replaced.find("name=\"x??y\xc3\xa9\""), std::string::npos) << replaced;
}

TEST(CompareOutputs, MarkdownListsRegressionsFirstAndEscapesTableCells) {
  Pair pair;
  for (Json* r : {&pair.base_record(2), &pair.new_record(2)}) (*r)["case_key"] = "pipe|key";
  pair.new_record(2)["timing"]["samples_seconds"] = samples(1.3e-3, 20);
  const CompareReport report = pair.compare();
  const std::string markdown = render_compare_markdown(report);
  EXPECT_EQ(markdown.rfind("## attnbench compare: regression (exit 1)", 0), 0u) << markdown;
  EXPECT_NE(markdown.find("**1 regression**, 0 inconclusive, 0 improvements, 2 passes (3 cells compared"), std::string::npos)
      << markdown;
  const auto regressions = markdown.find("### Regressions"), others = markdown.find("### Other cells");
  ASSERT_NE(regressions, std::string::npos);
  ASSERT_NE(others, std::string::npos);
  EXPECT_LT(regressions, others);
  EXPECT_NE(markdown.find("`synthetic/pipe\\|key`", regressions), std::string::npos) << markdown;
  EXPECT_LT(markdown.find("pipe"), others);
}

TEST(CompareOutputs, JsonCarriesSettingsCellsSummaryAndExitCode) {
  Pair pair;
  pair.new_record(0)["timing"]["samples_seconds"] = samples(1.3e-3, 20);
  pair.new_record(1)["traffic"]["counted"]["read_bytes"] = 0;  // from 1e6 to 2e5 bytes
  pair.base_record(2)["traffic"]["counted"] = Json{{"read_bytes", 0}, {"write_bytes", 0}};
  const Json json = compare_report_json(pair.compare());
  EXPECT_EQ(json["schema"], "attnbench.compare/1");
  EXPECT_EQ(json["exit_code"], 1);
  EXPECT_EQ(json["summary"]["cells"], 3);
  EXPECT_EQ(json["summary"]["regression"], 2);
  EXPECT_EQ(json["summary"]["improvement"], 1);
  EXPECT_EQ(json["inputs"]["base"]["path"], "base.json");
  EXPECT_EQ(json["settings"]["defaults"]["time_threshold"], 0.05);
  const Json& time = json["cells"][0]["metrics"]["time"];
  EXPECT_EQ(time["verdict"], "regression");
  for (const char* key : {"ratio", "ratio_low", "ratio_high", "p_value", "holm_adjusted_p_value", "one_sided_level"}) {
    EXPECT_TRUE(time[key].is_number()) << key;
  }
  // From 0 bytes the relative change has no value: null, never inf.
  EXPECT_TRUE(json["cells"][2]["metrics"]["hbm_bytes"]["relative_change"].is_null());
  EXPECT_EQ(json["cells"][2]["verdict"], "regression");
}

// ---- noise, rounds and the oracle (docs/compare.md, "Noise and rounds") ----

// `record` whose samples come from rounds 1, 2, … (merge --rounds), each with a noise verdict.
Json rounded_record(const std::string& case_key, const std::vector<std::vector<double>>& rounds,
                    const std::vector<bool>& noisy = {}) {
  std::vector<double> all;
  Json entries = Json::array();
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    all.insert(all.end(), rounds[r].begin(), rounds[r].end());
    const bool is_noisy = r < noisy.size() && noisy[r];
    std::vector<double> sorted = rounds[r];
    std::sort(sorted.begin(), sorted.end());
    entries.push_back({{"round", r + 1}, {"source", "round-" + std::to_string(r + 1) + ".json"},
                       {"samples", rounds[r].size()}, {"p50", sorted[sorted.size() / 2]}, {"noisy", is_noisy},
                       {"noise", is_noisy ? "noisy: quantised at ~4.000 ms" : "ok"}});
  }
  Json r = record(case_key, all);
  r["timing"]["rounds"] = entries;
  return r;
}

// BASE and NEW of one cell in four rounds; NEW's round r is `factors[r]` times slower.
Pair four_rounds(const std::vector<double>& factors, const std::vector<bool>& noisy_new = {}) {
  Pair pair;
  pair.base["records"] = Json::array();
  pair.next["records"] = Json::array();
  std::vector<std::vector<double>> base_rounds, new_rounds;
  for (std::size_t r = 0; r < factors.size(); ++r) {
    base_rounds.push_back(samples(1e-3, 100 + r));
    new_rounds.push_back(samples(1e-3 * factors[r], 200 + r));
  }
  pair.base["records"].push_back(rounded_record("case0", base_rounds));
  pair.next["records"].push_back(rounded_record("case0", new_rounds, noisy_new));
  return pair;
}

TEST(CompareRounds, ASlowdownInEveryRoundIsARegressionWithTheRoundsNamed) {
  const CompareReport report = four_rounds({1.25, 1.25, 1.25, 1.25}).compare();
  const MetricComparison* time = cell(report, "case0").metric("time");
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->verdict, CompareVerdict::regression) << time->summary;
  EXPECT_NE(time->summary.find("rounds +"), std::string::npos) << time->summary;
  EXPECT_EQ(time->details["rounds"].size(), 4u);
  EXPECT_EQ(report.exit_code, 1);
}

TEST(CompareRounds, ADifferenceOneRoundContradictsIsInconclusiveNotARegression) {
  // Pooled, three slow rounds out-vote the fourth; the rounds disagree in direction.
  const CompareReport report = four_rounds({1.4, 1.4, 1.4, 0.97}).compare();
  const MetricComparison* time = cell(report, "case0").metric("time");
  EXPECT_EQ(time->verdict, CompareVerdict::inconclusive) << time->summary;
  EXPECT_NE(time->summary.find("the rounds disagree"), std::string::npos) << time->summary;
  EXPECT_EQ(report.exit_code, 3);
}

TEST(CompareRounds, ARoundShortOfTheMinimumEffectMakesTheCellInconclusive) {
  // Three rounds +30%, one +4%: the same direction, but not the minimum effect in every round.
  const CompareReport report = four_rounds({1.3, 1.3, 1.04, 1.3}).compare();
  const MetricComparison* time = cell(report, "case0").metric("time");
  EXPECT_EQ(time->verdict, CompareVerdict::inconclusive) << time->summary;
  EXPECT_NE(time->summary.find("not every round shows the minimum effect +10.0%"), std::string::npos)
      << time->summary;
}

TEST(CompareRounds, AnEffectBelowTheMinimumEffectIsAPass) {
  // +7% in every round clears a 5% interval threshold but not the 10% minimum effect.
  const CompareReport report = four_rounds({1.07, 1.07, 1.07, 1.07}).compare();
  const MetricComparison* time = cell(report, "case0").metric("time");
  EXPECT_EQ(time->verdict, CompareVerdict::pass) << time->summary;
  EXPECT_NE(time->summary.find("within the minimum effect +10.0%"), std::string::npos) << time->summary;
  CompareSettings strict;
  strict.defaults.min_effect = 0.05;
  EXPECT_EQ(four_rounds({1.07, 1.07, 1.07, 1.07}).compare(strict).exit_code, 1);
}

TEST(CompareRounds, NoisyRoundsAreLeftOutAndMostlyNoisyCellsAreInconclusive) {
  // One noisy round of four: judged on the other three.
  const CompareReport one = four_rounds({1.25, 1.25, 0.8, 1.25}, {false, false, true, false}).compare();
  EXPECT_EQ(cell(one, "case0").metric("time")->verdict, CompareVerdict::regression)
      << cell(one, "case0").metric("time")->summary;
  EXPECT_EQ(cell(one, "case0").metric("time")->details["rounds"].size(), 3u);
  // Three of four noisy: inconclusive, never a regression, and the noise is named.
  const CompareReport most = four_rounds({1.25, 1.25, 1.25, 1.25}, {true, true, true, false}).compare();
  const MetricComparison* time = cell(most, "case0").metric("time");
  EXPECT_EQ(time->verdict, CompareVerdict::inconclusive);
  EXPECT_NE(time->summary.find("time: NEW round 1 noisy: quantised at ~4.000 ms"), std::string::npos)
      << time->summary;
  EXPECT_EQ(most.exit_code, 3);
}

TEST(CompareRounds, ANoisyPlainRecordIsInconclusive) {
  Pair pair;
  pair.new_record(0)["timing"]["samples_seconds"] = samples(2e-3, 20);
  pair.new_record(0)["timing"]["noise"] = {{"verdict", "noisy: 2 levels ~1.0 ms (50%), ~2.0 ms (50%)"},
                                           {"noisy", true}, {"judged", true}, {"resolution_seconds", nullptr},
                                           {"findings", Json::array()}};
  const CompareReport report = pair.compare();
  EXPECT_EQ(cell(report, "case0").metric("time")->verdict, CompareVerdict::inconclusive);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(report.next.noisy_records, 1u);
  EXPECT_NE(render_compare_markdown(report).find("Machine of NEW: 1 noisy record"), std::string::npos);
}

TEST(Compare, TheOraclesTimeIsNotGated) {
  Pair pair;
  for (Json* record : {&pair.base_record(0), &pair.new_record(0)}) {
    (*record)["implementation"] = "cpu.reference";
    (*record)["accuracy"] = {{"status", "oracle"}, {"reason", "this implementation is the oracle"},
                             {"oracle", "cpu.reference"}, {"sample", nullptr}, {"baseline", ""},
                             {"rule_applied", false}, {"tensors", Json::object()}};
  }
  pair.new_record(0)["timing"]["samples_seconds"] = samples(3e-3, 20);  // 3x slower
  const CompareReport report = pair.compare();
  const MetricComparison* time = cell(report, "case0").metric("time");
  EXPECT_EQ(time->verdict, CompareVerdict::pass);
  EXPECT_EQ(time->summary, "time: not judged (the fp64 oracle)");
  EXPECT_EQ(report.exit_code, 0);
}

TEST(CompareOutputs, TheLoadAndMachineWarningsOfEachSideAreShown) {
  Pair pair;
  pair.next["load_average"] = {{"run_start", {5.9, 4.0, 3.0}}, {"run_end", {6.4, 5.0, 3.5}}};
  pair.next["machine"] = {{"checked_at", "2026-01-01T00:00:00Z"},
                          {"findings", {{{"check", "load"}, {"level", "warn"}, {"message", "load average 5.9"},
                                         {"fix", "run when idle"}},
                                        {{"check", "governor"}, {"level", "note"}, {"message", "no governor"},
                                         {"fix", ""}}}}};
  const CompareReport report = pair.compare();
  EXPECT_NEAR(*report.next.highest_load, 6.4, 1e-12);
  const std::string terminal = render_compare_terminal(report);
  EXPECT_NE(terminal.find("machine of NEW: load average up to 6.4"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("warn: load average 5.9"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("(fix: run when"), std::string::npos) << terminal;
  EXPECT_EQ(terminal.find("no governor"), std::string::npos);  // notes cannot change a verdict
  EXPECT_EQ(terminal.find("machine of BASE"), std::string::npos);
  EXPECT_EQ(compare_report_json(report)["inputs"]["new"]["highest_load_average"], 6.4);
}

}  // namespace
}  // namespace attnbench
