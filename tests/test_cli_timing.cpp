// The timing methods end to end on the simulator (docs/design.md §4): graph
// timing captures the simulated kernels' launches and replays them, so the
// capture path runs without a GPU; a call the simulator cannot capture (its
// cuBLAS computes on the host at the call) is skipped with the reason, or
// falls back where the order says; a method no device of the run gives is
// refused before anything is written; the record names its method, and
// `report --table timing` and `compare` read it.
#include <gtest/gtest.h>

#include <string>

#include "cli_test_support.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
using namespace test;
namespace fs = std::filesystem;

class CliTiming : public TempDirectoryTest {
 protected:
  fs::path scenario() const {
    return write("small.json", R"({"name": "small", "description": "one small forward case",
      "defaults": {"batch": 1, "heads": 2, "seqlen": 64, "head_dim": 64, "dtype": "fp16"},
      "cases": [{"direction": "fwd"}],
      "implementations": ["cudasim.flash", "cudasim.cublas"],
      "measure": {"cache": "hot"}})");
  }
  static const Json& record_of(const Json& results, const std::string& implementation) {
    for (const Json& record : results["records"]) {
      if (record["implementation"] == implementation) return record;
    }
    throw std::runtime_error("no record of " + implementation);
  }
};

TEST_F(CliTiming, GraphTimingCapturesTheSimulatedKernelsAndSkipsACallThatCannotBeCaptured) {
  const fs::path output = path("graph.json");
  const CommandResult run = run_attnbench("run " + scenario().string() +
                                          " --timing graph --graph-calls 3 --no-profile --threads 2 -o " + output.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(output);
  expect_results_schema_valid(results);
  EXPECT_EQ(results["scenarios"][0]["measure"]["timing"], Json::array({"graph"}));
  const Json& flash = record_of(results, "cudasim.flash");
  ASSERT_EQ(flash["status"], "ok") << flash["reason"];
  EXPECT_EQ(flash["accuracy"]["status"], "passed");
  EXPECT_EQ(flash["timing"]["method"], "graph");
  EXPECT_EQ(flash["timing"]["graph"]["calls_per_graph"], 3);
  ASSERT_EQ(flash["timing"]["graph"]["graph_seconds"].size(), 1u);
  EXPECT_TRUE(flash["timing"]["graph"]["flush_graph_seconds"].empty()) << "hot: no flush graph";
  EXPECT_NEAR(flash["timing"]["samples_seconds"][0].get<double>(),
              flash["timing"]["graph"]["graph_seconds"][0].get<double>() / 3, 1e-12);
  EXPECT_NE(run.output.find("timing graph: 3 calls per launch"), std::string::npos) << run.output;

  const Json& cublas = record_of(results, "cudasim.cublas");
  EXPECT_EQ(cublas["status"], "skipped");
  EXPECT_NE(cublas["reason"].get<std::string>().find("timing: no timing method could time it (graph: the simulator's "
                                                     "cuBLAS computes on the host at the call"),
            std::string::npos)
      << cublas["reason"];
  EXPECT_EQ(cublas["accuracy"]["status"], "passed") << "its outputs were still checked";

  const CommandResult report = run_attnbench("report " + output.string() + " --table timing");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("| graph"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("launch overhead us"), std::string::npos) << report.output;
}

TEST_F(CliTiming, AFallbackOrderIsFollowedAndEachRecordSaysWhatItPassedOver) {
  const fs::path output = path("fallback.json");
  const CommandResult run = run_attnbench("run " + scenario().string() +
                                          " --timing cupti,graph,events --graph-calls 2 --no-profile --threads 2 -o " +
                                          output.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json results = read_json(output);
  expect_results_schema_valid(results);
  const Json& flash = record_of(results, "cudasim.flash");
  EXPECT_EQ(flash["timing"]["method"], "graph");
  EXPECT_EQ(flash["timing"]["methods_passed_over"], Json::array({"cupti: the simulator has no CUPTI activity records"}));
  const Json& cublas = record_of(results, "cudasim.cublas");
  ASSERT_EQ(cublas["status"], "ok") << cublas["reason"];
  EXPECT_EQ(cublas["timing"]["method"], "events");
  ASSERT_EQ(cublas["timing"]["methods_passed_over"].size(), 2u);
  EXPECT_EQ(cublas["timing"]["methods_passed_over"][1].get<std::string>().rfind("graph: the simulator's cuBLAS", 0), 0u);
  EXPECT_NE(run.output.find("timing graph: 2 calls per launch"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("fell back past"), std::string::npos) << run.output;
}

TEST_F(CliTiming, AMethodNoDeviceOfTheRunGivesIsRefusedBeforeAnythingIsWritten) {
  const fs::path output = path("refused.json");
  const CommandResult run =
      run_attnbench("run " + scenario().string() + " --timing cupti --no-profile --threads 2 -o " + output.string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("measure.timing: the cudasim device of cudasim.flash cannot time with cupti (cupti: the "
                            "simulator has no CUPTI activity records)"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(output));
  const CommandResult unknown = run_attnbench("run " + scenario().string() + " --timing kernel -o " + output.string());
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("\"kernel\" is no timing method (events, cupti, graph)"), std::string::npos)
      << unknown.output;
  const CommandResult twice = run_attnbench("run " + scenario().string() + " --timing graph,graph -o " + output.string());
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("names graph twice"), std::string::npos) << twice.output;
  const fs::path doubled = write("doubled.json", R"({"name": "doubled", "description": "a method twice",
      "defaults": {"batch": 1, "heads": 1, "seqlen": 16, "head_dim": 16}, "cases": [{}],
      "measure": {"timing": ["cupti", "events", "cupti"]}})");
  const CommandResult validate = run_attnbench("validate " + doubled.string());
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_NE(validate.output.find("measure.timing: names \"cupti\" twice"), std::string::npos) << validate.output;
  const CommandResult host = run_attnbench("run " + scenario().string() +
                                           " --impl cpu.flash --timing graph --threads 2 -o " + output.string());
  EXPECT_EQ(host.exit_code, 2) << host.output;
  EXPECT_NE(host.output.find("the cpu device of cpu.flash cannot time with graph"), std::string::npos) << host.output;
  EXPECT_FALSE(fs::exists(output));
}

TEST_F(CliTiming, CompareAndMergeRefuseRunsTimedByDifferentMethods) {
  const fs::path graph = path("graph.json"), events = path("events.json");
  const std::string common = " --impl cudasim.flash --no-profile --threads 2 -o ";
  ASSERT_EQ(run_attnbench("run " + scenario().string() + " --timing graph --graph-calls 2" + common + graph.string()).exit_code, 0);
  ASSERT_EQ(run_attnbench("run " + scenario().string() + " --timing events" + common + events.string()).exit_code, 0);
  const CommandResult compare = run_attnbench("compare " + events.string() + " " + graph.string());
  EXPECT_EQ(compare.exit_code, 3) << compare.output;
  EXPECT_NE(compare.output.find("small measure.timing: [\"events\"] (BASE) vs [\"graph\"] (NEW)"), std::string::npos)
      << compare.output;
  const CommandResult allowed = run_attnbench("compare " + events.string() + " " + graph.string() +
                                              " --allow-different-settings");
  EXPECT_NE(allowed.exit_code, 3) << allowed.output;
  EXPECT_NE(allowed.output.find("not judged (simulated on the CPU)"), std::string::npos) << "compared:\n" << allowed.output;
  const CommandResult merge = run_attnbench("merge " + events.string() + " " + graph.string() + " -o " + path("m.json").string());
  EXPECT_EQ(merge.exit_code, 2) << merge.output;
  EXPECT_NE(merge.output.find("measure.timing"), std::string::npos) << merge.output;
  const CommandResult resume =
      run_attnbench("run " + scenario().string() + " --timing events" + common + graph.string() + " --resume");
  EXPECT_EQ(resume.exit_code, 2) << resume.output;
  EXPECT_NE(resume.output.find("measure.timing[0] (\"graph\" vs \"events\")"), std::string::npos) << resume.output;
}

}  // namespace
}  // namespace attnbench
