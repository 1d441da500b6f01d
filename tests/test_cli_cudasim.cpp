// The cudasim device end to end through the attnbench binary: the quick
// scenario on the simulated CUDA implementations (every case checked against
// the oracle, the fused rule against the simulated baseline, times marked
// simulated and shown as no throughput), and the simulator never picked by a
// default selection.
#include <gtest/gtest.h>

#include <string>

#include "cli_test_support.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/results/document.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
using namespace test;

class CliCudasim : public TempDirectoryTest {};

TEST_F(CliCudasim, TheQuickScenarioRunsOnTheSimulatedKernelsAndPassesTheOracle) {
  const auto output = path("quick-cudasim.json");
  const CommandResult run = run_attnbench("run " + scenario_path("quick.json") +
                                          " --impl cudasim.flash,cudasim.cublas --threads 2 -o " + output.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("s = simulated on the CPU (cudasim)"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("FLOP/s"), std::string::npos) << "no throughput from a simulated time:\n" << run.output;
  const Json results = read_json(output);
  static const JsonSchema schema(results_schema());
  EXPECT_TRUE(schema.validate(results).empty());
  bool simulated_device = false;
  for (const Json& device : results["devices"]) simulated_device = simulated_device || device["kind"] == "cudasim";
  EXPECT_TRUE(simulated_device) << results["devices"].dump();
  ASSERT_EQ(results["records"].size(), 16u);
  for (const Json& record : results["records"]) {
    const std::string name = record["implementation"];
    SCOPED_TRACE(name + " " + record["case_key"].get<std::string>());
    EXPECT_EQ(record["status"], "ok") << record["reason"];
    EXPECT_EQ(record["accuracy"]["status"], "passed") << record["accuracy"].dump();
    EXPECT_TRUE(record["timing"]["simulated"].get<bool>());
    EXPECT_EQ(record["timing"]["samples_seconds"].size(), 1u) << "one sample: a simulated time measures no GPU";
    if (name == "cudasim.flash") {
      EXPECT_TRUE(record["accuracy"]["rule_applied"].get<bool>());
      EXPECT_EQ(record["accuracy"]["baseline"], "cudasim.cublas");
    }
  }
}

TEST_F(CliCudasim, NoDefaultSelectionPicksTheSimulator) {
  const CommandResult list = run_attnbench("list --json " + scenario_path("quick.json"));
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_EQ(list.output.find("cudasim."), std::string::npos) << list.output;
  const CommandResult info = run_attnbench("info");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  for (const char* name : {"cudasim.flash", "cudasim.flash.simple", "cudasim.cublas"}) {
    EXPECT_NE(info.output.find(name), std::string::npos) << name << " is listed by info\n" << info.output;
  }
}

}  // namespace
}  // namespace attnbench
