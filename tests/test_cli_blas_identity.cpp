// The BLAS of the CPU implementations in a run's identity, end to end: `info`
// names it, a run records it (tool.blas, schema-valid, and its buffers as
// memory outside the arena); `run --resume` refuses a file made with
// another BLAS (exit 2, naming tool.blas, the file untouched), `merge` refuses
// shards of two BLAS libraries, and `compare` judges them like any other pair.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_support.hpp"
#include "harness/blas.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
using namespace test;

const char* kScenario = R"({
  "name": "two", "description": "two small cases",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "direction": "fwd"},
  "sweep": {"seqlen": [24, 40]},
  "implementations": ["cpu.flash"],
  "measure": {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 5,
              "max_samples": 5, "min_seconds": 0, "max_seconds": 0.05}
})";

class CliBlasIdentity : public TempDirectoryTest {
 protected:
  void SetUp() override {
    TempDirectoryTest::SetUp();
    write("two.json", kScenario);
  }
  std::string part(int k) const { return path("part-" + std::to_string(k) + ".json").string(); }
  // Runs shard k of 2 into part(k).
  void run_shard(int k) const {
    const CommandResult run = run_attnbench("run " + path("two.json").string() + " --threads 1 --shard " +
                                            std::to_string(k) + "/2 -o " + part(k));
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  // Rewrites shard k as if another BLAS version had made it.
  void give_other_blas(int k) const {
    Json document = read_json(part(k));
    document["tool"]["blas"]["version"] = "0.0.1";
    write_json(part(k), document);
  }
};

TEST_F(CliBlasIdentity, ARunRecordsTheLibraryAndItsBuffersOutsideTheArena) {
  run_shard(1);
  const Json document = read_json(part(1));
  expect_results_schema_valid(document);
  EXPECT_EQ(document["tool"]["blas"], blas::library_json());
  EXPECT_EQ(document["tool"]["blas"]["name"], "OpenBLAS");
  const Json& memory = document["records"][0]["memory"];
  EXPECT_EQ(memory["outside_arena"]["library"], blas::library().identity());
  EXPECT_TRUE(memory["outside_arena"]["bytes"].is_null()) << "OpenBLAS does not say how large its buffers are";
  EXPECT_EQ(memory["peak_bytes"].get<std::uint64_t>(),
            memory["input_bytes"].get<std::uint64_t>() + memory["output_bytes"].get<std::uint64_t>() +
                memory["workspace_bytes"].get<std::uint64_t>())
      << "the arena holds exactly the buffers and the workspace";
}

TEST_F(CliBlasIdentity, InfoNamesTheLibrary) {
  const CommandResult text = run_attnbench("info");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  const blas::Library& library = blas::library();
  EXPECT_NE(text.output.find("BLAS: " + library.identity() + " (" + library.core + " kernels, openmp threads)"),
            std::string::npos)
      << text.output;
  const CommandResult json = run_attnbench("info --json", Capture::stdout_only);
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_EQ(Json::parse(json.output)["tool"]["blas"], blas::library_json());
}

TEST_F(CliBlasIdentity, ResumeRefusesAFileOfAnotherBlas) {
  run_shard(1);
  give_other_blas(1);
  const std::string before = read_text(part(1));
  const CommandResult resume =
      run_attnbench("run " + path("two.json").string() + " --threads 1 --shard 1/2 --resume -o " + part(1));
  EXPECT_EQ(resume.exit_code, 2) << resume.output;
  EXPECT_NE(resume.output.find("tool.blas: the run's CPU implementations used BLAS \"OpenBLAS 0.0.1\", this "
                               "build's use \"" + blas::library().identity() + "\""),
            std::string::npos)
      << resume.output;
  EXPECT_EQ(read_text(part(1)), before);
}

TEST_F(CliBlasIdentity, MergeRefusesShardsOfTwoBlasLibraries) {
  run_shard(1);
  run_shard(2);
  const CommandResult same = run_attnbench("merge " + part(1) + " " + part(2) + " -o " + path("same.json").string());
  ASSERT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(read_json(path("same.json"))["tool"]["blas"], blas::library_json());

  give_other_blas(2);
  const CommandResult mixed = run_attnbench("merge " + part(1) + " " + part(2) + " -o " + path("mixed.json").string());
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find(part(2) + ": tool.blas: was made with BLAS OpenBLAS 0.0.1 but " + part(1) + " with " +
                              blas::library().identity()),
            std::string::npos)
      << mixed.output;
  EXPECT_FALSE(std::filesystem::exists(path("mixed.json")));

  Json peer = read_json(part(2));  // a file that records no BLAS, as a peer's, merges with any
  peer["tool"].erase("blas");
  write_json(part(2), peer);
  const CommandResult with_peer = run_attnbench("merge " + part(1) + " " + part(2) + " -o " + path("peer.json").string());
  EXPECT_EQ(with_peer.exit_code, 0) << with_peer.output;
}

TEST_F(CliBlasIdentity, CompareJudgesFilesOfTwoBlasLibraries) {
  run_shard(1);
  std::filesystem::copy_file(part(1), path("other.json"));
  Json other = read_json(path("other.json"));
  other["tool"]["blas"]["version"] = "0.0.1";
  write_json(path("other.json"), other);
  // --allow-noisy: the samples are the same, noisy or not.
  const CommandResult compare =
      run_attnbench("compare " + part(1) + " " + path("other.json").string() + " --allow-noisy");
  EXPECT_EQ(compare.exit_code, 0) << "the same samples under another BLAS are no regression\n" << compare.output;
}

}  // namespace
}  // namespace attnbench
