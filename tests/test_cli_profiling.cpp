// End to end, without a GPU: `info` prints the profiler probe's answer;
// `run --no-profile` works; every record carries its implementation's model
// with the counted/modelled ratio; the schema accepts the profiling pass's
// records (ok with kernels, unavailable, throttled with warnings) and the
// older shape without them; compare and report read files with a profiler
// entry that collected nothing, and the io report shows the model beside them.
#include <gtest/gtest.h>

#include <string>

#include "cli_test_support.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

const char* kScenario = R"({
  "name": "profiled", "description": "two small forward cases",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 40, "seqlen_k": 72, "direction": "fwd"},
  "cases": [{}, {"causal": true}],
  "implementations": ["cpu.reference", "cpu.standard", "cpu.flash"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
              "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05}
})";

std::vector<std::string> schema_errors(const Json& document) {
  static const JsonSchema schema(results_schema());
  std::vector<std::string> messages;
  for (const auto& error : schema.validate(document)) messages.push_back(format_error(error));
  return messages;
}

bool cuda_device_present(const Json& info) {
  for (const Json& device : info["devices"]) {
    if (device["device"] == "cuda" && device["available"].get<bool>()) return true;
  }
  return false;
}

class CliProfiling : public TempDirectoryTest {
 protected:
  Json run_scenario(const std::string& extra = "") {
    const fs::path scenario = write("profiled.json", kScenario);
    const CommandResult run = run_attnbench("run " + scenario.string() + " -o " + path("out.json").string() + extra);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return read_json(path("out.json"));
  }
};

TEST_F(CliProfiling, InfoPrintsTheProbesAnswer) {
  const CommandResult text = run_attnbench("info");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("profiler (HBM bytes"), std::string::npos) << text.output;
  const CommandResult json_run = run_attnbench("info --json", Capture::stdout_only);
  ASSERT_EQ(json_run.exit_code, 0) << json_run.output;
  const Json info = Json::parse(json_run.output);
  ASSERT_TRUE(info.contains("profiler"));
  const Json& profiler = info["profiler"];
  EXPECT_TRUE(profiler["available"].is_boolean());
  if (!cuda_device_present(info)) {
    EXPECT_FALSE(profiler["available"].get<bool>());
    const std::string reason = profiler["reason"];
    EXPECT_TRUE(reason.find("no usable CUDA device") != std::string::npos ||
                reason.find("no NVIDIA driver or GPU found") != std::string::npos ||
                reason.find("no device backend") != std::string::npos)
        << reason;
    EXPECT_NE(text.output.find("unavailable: "), std::string::npos);
  }
}

TEST_F(CliProfiling, NoProfileRunsAndEveryRecordCarriesItsModel) {
  const Json results = run_scenario(" --no-profile");
  EXPECT_TRUE(schema_errors(results).empty());
  ASSERT_EQ(results["records"].size(), 6u);
  for (const Json& record : results["records"]) {
    const std::string name = record["implementation"];
    SCOPED_TRACE(name);
    const Json& traffic = record["traffic"];
    EXPECT_TRUE(traffic["measured"].is_null()) << "host implementations are not profiled";
    ASSERT_TRUE(traffic["modelled"].is_object());
    EXPECT_EQ(traffic["modelled"]["algorithm"], name == "cpu.flash" ? "fused" : "standard");
    EXPECT_GT(traffic["modelled"]["read_bytes"].get<double>(), 0);
    EXPECT_TRUE(traffic["ratio_to_modelled"]["measured"].is_null());
    EXPECT_TRUE(record["timing"]["throttled"].is_null()) << "host clocks are not monitored";
    if (name == "cpu.reference") {
      EXPECT_TRUE(traffic["ratio_to_modelled"]["counted"].is_null());
    }
    if (name == "cpu.flash" && record["case_index"] == 0) {
      EXPECT_DOUBLE_EQ(traffic["ratio_to_modelled"]["counted"]["total"].get<double>(), 1.0)
          << "cpu.flash counts exactly what its model says without a mask";
    }
  }
}

TEST_F(CliProfiling, SchemaAcceptsProfiledRecordsAndTheOlderShape) {
  Json results = run_scenario();
  ASSERT_TRUE(schema_errors(results).empty());
  Json& record = results["records"][1];
  record["device"] = "cuda";
  record["traffic"]["measured"] =
      Json{{"status", "ok"},
           {"reason", ""},
           {"profiler", "cupti.range_profiler"},
           {"passes", 1},
           {"read_bytes", 1.5e9},
           {"write_bytes", 0.5e9},
           {"metrics",
            {{"dram__bytes_read.sum", 1.5e9},
             {"dram__bytes_write.sum", 0.5e9},
             {"lts__t_bytes.sum", 4e9},
             {"gpu__time_duration.sum", 1.2e6},
             {"sm__cycles_elapsed.avg.per_second", 1.98e9}}},
           {"kernels", {{{"range", "0"}, {"read_bytes", 1e9}, {"write_bytes", 0.1e9}, {"metrics", Json::object()}}}},
           {"clocks", {{"source", "nvml"}, {"sm_mhz", 1980}, {"memory_mhz", 2619}}}};
  record["traffic"]["ratio_to_modelled"]["measured"] = Json{{"read", 1.01}, {"write", 0.99}, {"total", 1.0}};
  record["timing"]["throttled"] = true;
  record["timing"]["clocks"] = Json{{"before", {{"sm_mhz", 1980}}}, {"after", {{"sm_mhz", 1410}}}};
  record["warnings"] = {"SM clock dropped from 1980 MHz to 1410 MHz during the measurement"};
  results["records"][2]["traffic"]["measured"] = Json{{"status", "unavailable"},
                                                      {"reason", "insufficient privileges"},
                                                      {"hint", "NVreg_RestrictProfilingToAdminUsers=0"}};
  const auto errors = schema_errors(results);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());

  Json broken = results;
  broken["records"][1]["traffic"]["measured"].erase("read_bytes");
  EXPECT_FALSE(schema_errors(broken).empty()) << "an ok measurement must carry its bytes";

  Json older = results;
  for (Json& old_record : older["records"]) {
    old_record["traffic"].erase("modelled");
    old_record["traffic"].erase("ratio_to_modelled");
    old_record["traffic"]["measured"] = nullptr;
    old_record.erase("warnings");
    if (old_record["timing"].is_object()) old_record["timing"].erase("clocks");
  }
  EXPECT_TRUE(schema_errors(older).empty()) << "files written before the profiling pass stay valid";
}

TEST_F(CliProfiling, CompareAndReportReadMeasurementsThatCollectedNothing) {
  Json results = run_scenario();
  for (Json& record : results["records"]) {
    record["traffic"]["measured"] = Json{{"status", "skipped"}, {"reason", "--no-profile"}};
  }
  write_json(path("base.json"), results);
  write_json(path("head.json"), results);
  const CommandResult compare =
      run_attnbench("compare " + path("base.json").string() + " " + path("head.json").string());
  EXPECT_NE(compare.exit_code, -1) << compare.output;
  EXPECT_NE(compare.exit_code, 2) << compare.output;
  EXPECT_EQ(compare.output.find("terminate"), std::string::npos) << compare.output;
  const CommandResult report = run_attnbench("report " + path("base.json").string() + " --table io");
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("modelled KiB"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("traffic / modelled"), std::string::npos) << report.output;
}

}  // namespace
}  // namespace attnbench
