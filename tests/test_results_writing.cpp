// The pieces a run writes its results with: the lock (a second process is
// refused and named; the lock survives exec; a lock file nobody holds is taken
// over), stale temporaries, the journal (a cut-short last line is ignored, a
// damaged line is bad input, a full disk names the file), and the comparison
// --resume and merge share (run identities, record membership).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/errors.hpp"
#include "harness/results/file_lock.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/results/run_identity.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

class ResultsWriting : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::path(::testing::TempDir()) /
                 ("attnbench_writing_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                  "_" + std::to_string(getpid()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  std::string path(const std::string& name) const { return (directory_ / name).string(); }

  fs::path directory_;
};

// What another process gets when it tries the lock: "" when it took it, else the message.
std::string lock_from_another_process(const std::string& target) {
  int channel[2];
  if (pipe(channel) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    close(channel[0]);
    std::string message;
    try {
      const FileLock lock(target, "-o " + target);
    } catch (const InputError& error) {
      message = error.what();
    }
    const ssize_t written = write(channel[1], message.data(), message.size());
    _exit(written < 0 ? 1 : 0);
  }
  close(channel[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = read(channel[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<std::size_t>(n));
  close(channel[0]);
  waitpid(child, nullptr, 0);
  return message;
}

TEST_F(ResultsWriting, ASecondWriterIsRefusedNamingTheProcessThatHoldsTheLock) {
  const std::string target = path("out.json");
  {
    const FileLock lock(target, "-o " + target);
    EXPECT_TRUE(fs::exists(lock_file_path(target)));
    const std::string refused = lock_from_another_process(target);
    EXPECT_NE(refused.find("is being written by process " + std::to_string(getpid())), std::string::npos) << refused;
    EXPECT_NE(refused.find(lock_file_path(target)), std::string::npos) << refused;
  }
  EXPECT_FALSE(fs::exists(lock_file_path(target))) << "released with its lock file";
  EXPECT_EQ(lock_from_another_process(target), "") << "free again";
}

TEST_F(ResultsWriting, ALockFileThatNobodyHoldsIsTakenOver) {
  const std::string target = path("out.json");
  std::ofstream(lock_file_path(target)) << "99999999\n";  // left by a killed process
  const FileLock lock(target, "-o " + target);
  std::ifstream in(lock_file_path(target));
  std::string holder;
  in >> holder;
  EXPECT_EQ(holder, std::to_string(getpid()));
}

TEST_F(ResultsWriting, AKeptLockSurvivesAnExecOfItsProcess) {
  const std::string target = path("out.json");
  const pid_t child = fork();
  if (child == 0) {
    try {
      FileLock lock(target, "-o " + target);
      lock.keep_across_exec();
    } catch (...) {
      _exit(3);
    }
    execl("/bin/sh", "sh", "-c", "sleep 2", static_cast<char*>(nullptr));
    _exit(4);
  }
  // The child holds the lock, then becomes `sh`, which holds it still.
  std::string refused;
  for (int attempt = 0; attempt < 100 && refused.empty(); ++attempt) {
    usleep(10000);
    if (fs::exists(lock_file_path(target))) refused = lock_from_another_process(target);
  }
  EXPECT_NE(refused.find("is being written by process " + std::to_string(child)), std::string::npos) << refused;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(lock_from_another_process(target), "") << "released when the process ended";
}

TEST_F(ResultsWriting, TemporariesOfProcessesThatNoLongerRunAreRemoved) {
  const std::string target = path("out.json");
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  waitpid(ended, nullptr, 0);
  const std::string of_ended = target + ".tmp." + std::to_string(ended);
  const std::string of_running = target + ".tmp.1";  // init runs as long as the machine does
  const std::string of_earlier_program = temporary_path(target);
  const std::string unrelated = target + ".tmp.notapid";
  for (const std::string& file : {of_ended, of_running, of_earlier_program, unrelated}) std::ofstream(file) << "{";
  remove_stale_temporaries(target);
  EXPECT_FALSE(fs::exists(of_ended));
  EXPECT_FALSE(fs::exists(of_earlier_program));
  EXPECT_TRUE(fs::exists(of_running));
  EXPECT_TRUE(fs::exists(unrelated));
}

const Json kHeader = {{"journal", kJournalSchemaId},
                      {"results_file", "out.json"},
                      {"started_at", "2026-01-01T00:00:00Z"},
                      {"run", {{"git_revision", "abc1234"}, {"threads", 1}, {"filter", nullptr}, {"shard", nullptr},
                               {"scenarios", Json::array()}}}};

TEST_F(ResultsWriting, TheJournalKeepsEveryWholeLineAndIgnoresOneCutShort) {
  const std::string journal = path("out.json.journal");
  {
    JournalWriter writer(journal, kHeader);
    writer.append({Json{{"device", {{"kind", "cpu"}, {"name", "x"}}}}, Json{{"record", {{"n", 1}}}}});
    writer.append({Json{{"record", {{"n", 2}}}}});
  }
  std::ofstream(journal, std::ios::app) << R"({"record": {"n": 3)";  // killed while writing
  const JournalContents contents = read_journal(journal);
  EXPECT_EQ(contents.header, kHeader);
  ASSERT_EQ(contents.records.size(), 2u);
  EXPECT_EQ(contents.records[1]["n"], 2);
  ASSERT_EQ(contents.devices.size(), 1u);
  EXPECT_TRUE(contents.torn_tail);
}

TEST_F(ResultsWriting, ADamagedJournalLineIsBadInputNamingTheLine) {
  const std::string journal = path("out.json.journal");
  std::ofstream(journal) << kHeader.dump() << "\n" << R"({"record": {"n": 1}})" << "\nnot json\n"
                         << R"({"record": {"n": 2}})" << "\n";
  try {
    read_journal(journal);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(journal + ": line 3: is not a journal entry"), std::string::npos)
        << error.what();
  }
  std::ofstream(journal) << R"({"record": {"n": 1}})" << "\n";
  EXPECT_THROW(read_journal(journal), InputError) << "no header";
  Json without_threads = kHeader;
  without_threads["run"].erase("threads");
  std::ofstream(journal) << without_threads.dump() << "\n";
  try {
    read_journal(journal);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("line 1: not an attnbench journal header"), std::string::npos)
        << error.what();
  }
}

TEST_F(ResultsWriting, AFullDiskIsAWriteErrorNamingTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const std::string journal = path("full.journal");
  fs::create_symlink("/dev/full", journal);
  try {
    JournalWriter writer(journal, kHeader);
    FAIL() << "expected FileWriteError";
  } catch (const FileWriteError& error) {
    EXPECT_EQ(error.path(), journal);
    EXPECT_EQ(std::string(error.what()), "cannot write " + journal + ": No space left on device");
  }
  const std::string results = path("full.json");
  fs::create_symlink("/dev/full", results + ".tmp." + std::to_string(getpid()));
  EXPECT_THROW(write_file_atomically(results, "{}"), FileWriteError);
}

Json scenario_entry(const std::string& name) {
  return Json{{"name", name},
              {"source", {{"name", name}, {"defaults", {{"head_dim", 32}}}}},
              {"measure", {{"min_samples", 5}, {"cache", "cold"}}},
              {"accuracy", {{"check", true}}},
              {"implementations", {"cpu.flash"}}};
}

Json identity() {
  return Json{{"git_revision", "abc1234"},
              {"plugins", Json::object()},
              {"threads", 2},
              {"filter", nullptr},
              {"shard", nullptr},
              {"scenarios", Json::array({scenario_entry("tiny")})}};
}

std::string messages(const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const Diagnostic& diagnostic : diagnostics) text += diagnostic.format() + "\n";
  return text;
}

TEST(RunIdentity, EveryDifferenceIsNamedWithBothValues) {
  EXPECT_TRUE(run_identity_differences(identity(), identity(), "out.json").empty());
  Json now = identity();
  now["git_revision"] = "def5678";
  now["threads"] = 1;
  now["filter"] = "causal";
  now["shard"] = Json{{"index", 1}, {"count", 2}};
  now["scenarios"][0]["source"]["defaults"]["head_dim"] = 64;
  now["scenarios"][0]["measure"]["cache"] = "hot";
  now["scenarios"][0]["implementations"] = {"cpu.standard"};
  const std::string text = messages(run_identity_differences(identity(), now, "out.json"));
  for (const char* expected :
       {"out.json: tool.git_revision: the run was made by build \"abc1234\", this is build \"def5678\"",
        "out.json: threads: the run used 2 threads, this one 1", "out.json: filter: the run used --filter none, this one \"causal\"",
        "out.json: shard: the run was shard none", "source.defaults.head_dim (32 vs 64)", "measure.cache (\"cold\" vs \"hot\")",
        "scenarios[\"tiny\"].implementations: the run used [\"cpu.flash\"], this one [\"cpu.standard\"]"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  Json renamed = identity();
  renamed["scenarios"][0]["name"] = "other";
  EXPECT_NE(messages(run_identity_differences(identity(), renamed, "out.json")).find("scenarios \"tiny\", this one \"other\""),
            std::string::npos);
}

TEST(RunIdentity, MeasureSettingsAreComparedAsAWholeObject) {
  // A setting this code has never heard of (added later, say a command-line
  // override) still tells two runs apart.
  Json now = identity();
  now["scenarios"][0]["measure"]["some_future_setting"] = 3;
  EXPECT_NE(messages(run_identity_differences(identity(), now, "f")).find("measure.some_future_setting (\"(absent)\" vs 3)"),
            std::string::npos);
}

TEST(RunIdentity, TheIdentityOfADocumentIsWhatShapesItsRecords) {
  Json document{{"tool", {{"git_revision", "abc1234"}, {"version", "1"}}},
                {"threads", 2},
                {"shard", nullptr},
                {"scenarios", Json::array({scenario_entry("tiny")})}};
  document["scenarios"][0]["path"] = "elsewhere/tiny.json";  // where the file was is not part of it
  EXPECT_EQ(run_identity(document), identity()) << "a file from before `filter` was recorded has none";
  document["plugins"] = Json::array({{{"path", "/p/libk.so"}, {"sha256", "ab12"},
                                      {"implementations", Json::array({{{"name", "cpu.k"}, {"version", "2"}}})}}});
  EXPECT_EQ(run_identity(document)["plugins"],
            (Json{{"cpu.k", {{"path", "/p/libk.so"}, {"sha256", "ab12"}, {"version", "2"}}}}));
}

TEST(RunIdentity, APluginOfAnotherBuildIsADifference) {
  Json now = identity();
  now["plugins"] = Json{{"cpu.k", {{"path", "/p/libk.so"}, {"sha256", std::string(64, 'b')}, {"version", "2"}}}};
  Json saved = now;
  EXPECT_TRUE(run_identity_differences(saved, now, "f").empty());
  saved["plugins"]["cpu.k"]["path"] = "/elsewhere/libk.so";  // moved, the same build
  EXPECT_TRUE(run_identity_differences(saved, now, "f").empty());
  saved["plugins"]["cpu.k"]["sha256"] = std::string(64, 'a');
  EXPECT_NE(messages(run_identity_differences(saved, now, "f")).find("f: plugins: the run's plug-ins were other builds"),
            std::string::npos);
  saved.erase("plugins");  // a file from before plug-ins: its cpu.k was a built-in one
  EXPECT_NE(messages(run_identity_differences(saved, now, "f")).find("cpu.k came from a built-in implementation vs"),
            std::string::npos);
}

Json record(const std::string& scenario, const std::string& key, std::size_t index, const std::string& implementation) {
  return Json{{"scenario", scenario}, {"case_key", key}, {"case_index", index}, {"implementation", implementation},
              {"settings", {{"threads", 2}}}};
}

TEST(RecordProblems, RecordsMustBelongToACaseAndAnImplementationOnceWithTheRunsSettings) {
  ExpectedRecords expected;
  expected["tiny"].case_index_by_key = {{"k0", 0}, {"k1", 1}, {"k2", 2}, {"k3", 3}};
  expected["tiny"].implementations = {"cpu.flash"};
  expected["tiny"].settings = Json{{"threads", 2}};
  const Json good = record("tiny", "k0", 0, "cpu.flash");
  Json no_settings = record("tiny", "k2", 2, "cpu.flash");
  no_settings.erase("settings");
  Json other_settings = record("tiny", "k3", 3, "cpu.flash");
  other_settings["settings"]["threads"] = 1;
  const std::vector<Json> records = {good,
                                     record("not_a_scenario", "k0", 0, "cpu.flash"),
                                     record("tiny", "invented", 0, "cpu.flash"),
                                     record("tiny", "k1", 0, "cpu.flash"),
                                     record("tiny", "k0", 0, "cpu.nope"),
                                     no_settings,
                                     other_settings,
                                     good};
  std::vector<LocatedRecord> located;
  for (std::size_t i = 0; i < records.size(); ++i) located.push_back({&records[i], "f", "records[" + std::to_string(i) + "]"});
  const std::vector<Diagnostic> problems = record_problems(located, expected);
  const std::string text = messages(problems);
  EXPECT_EQ(problems.size(), 7u) << text;
  for (const char* expected_message :
       {"f: records[1]: is a record of scenario \"not_a_scenario\", which this run does not have (\"tiny\")",
        "f: records[2]: case_key \"invented\" is no case of scenario \"tiny\"",
        "f: records[3]: case_index 0, but case_key \"k1\" is case 1",
        "f: records[4]: implementation \"cpu.nope\" is not one scenario \"tiny\" runs here",
        "f: records[5]: carries no \"settings\"",
        "f: records[6]: was measured with other settings (the record's vs this run's): settings.threads (1 vs 2)",
        "f: records[7]: is a second record of (\"tiny\", \"k0\", \"cpu.flash\"); the first is f records[0]"}) {
    EXPECT_NE(text.find(expected_message), std::string::npos) << expected_message << "\n" << text;
  }
  located.resize(1);
  EXPECT_EQ(messages(record_problems(located, expected)), "");

  expected["tiny"].settings_required = false;  // merge: files from before records carried settings
  located = {{&no_settings, "f", "records[0]"}};
  EXPECT_EQ(messages(record_problems(located, expected)), "");
}

TEST(RecordProblems, ManyRecordsWithOneProblemGiveOneMessageWithACount) {
  ExpectedRecords expected;
  expected["tiny"].case_index_by_key = {{"k0", 0}};
  expected["tiny"].implementations = {"cpu.flash"};
  std::vector<Json> records;
  for (int i = 0; i < 20000; ++i) records.push_back(record("tiny", "invented" + std::to_string(i), 0, "cpu.flash"));
  std::vector<LocatedRecord> located;
  for (const Json& r : records) located.push_back({&r, "f", "records"});
  const std::vector<Diagnostic> problems = record_problems(located, expected);
  ASSERT_EQ(problems.size(), 1u) << messages(problems);
  EXPECT_NE(problems[0].message.find("(and 19999 more like it)"), std::string::npos) << problems[0].message;
}

}  // namespace
}  // namespace attnbench
