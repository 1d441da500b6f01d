// The pieces a run writes its results with: the lock (a second process is
// refused and named; the lock survives exec; a lock file nobody holds is taken
// over; another writer's lock file is never removed; nothing is written into a
// directory made after the lock under its name), stale temporaries, the
// journal (a cut-short last line is ignored; a damaged, edited, reordered or
// foreign line is bad input naming the line; a full disk names the file), and
// the comparison --resume and merge share (run identities, record membership,
// timing statistics that contradict their samples).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <string>

#include "harness/errors.hpp"
#include "harness/results/file_lock.hpp"
#include "harness/results/derived_figures.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/results/npy.hpp"
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

// A symbolic link planted where the tool writes is refused, and its target is
// never written: the lock, the temporary file the results and journal go
// through, and a --dump array.
TEST_F(ResultsWriting, ASymbolicLinkWhereAFileIsWrittenIsRefusedAndItsTargetUntouched) {
  const std::string victim = path("victim.txt");
  const auto victim_text = [&] {
    std::ifstream in(victim);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::ofstream(victim) << "precious";
  const std::string target = path("out.json");

  fs::create_symlink(victim, lock_file_path(target));
  try {
    const FileLock lock(target, "-o " + target);
    ADD_FAILURE() << "the planted lock was followed";
  } catch (const InputError& error) {
    EXPECT_NE(error.diagnostics().front().message.find("is a symbolic link"), std::string::npos)
        << error.diagnostics().front().message;
  }
  EXPECT_EQ(victim_text(), "precious");
  fs::remove(lock_file_path(target));

  {
    const FileLock lock(target, "-o " + target);
    fs::create_symlink(victim, temporary_path(target));
    EXPECT_THROW(write_file_atomically(lock, nlohmann::ordered_json{{"a", 1}}), FileWriteError);
  }
  EXPECT_EQ(victim_text(), "precious");
  EXPECT_FALSE(fs::exists(target));

  const std::string array = path("case0.cpu.flash.O.npy");
  fs::create_symlink(victim, array);
  const float values[2] = {1.0f, 2.0f};
  const int directory = open(fs::path(array).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(directory, 0);
  EXPECT_THROW(write_npy(directory, "case0.cpu.flash.O.npy", array, values, ElementType::f32, {2}),
               std::runtime_error);
  close(directory);
  EXPECT_EQ(victim_text(), "precious");

  // The target itself a link: the lock refuses it before anything is written.
  fs::create_symlink(victim, path("linked.json"));
  try {
    const FileLock lock(path("linked.json"), "-o linked.json");
    ADD_FAILURE() << "a results file that is a link was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(error.diagnostics().front().message.find("linked.json is a symbolic link to " + victim),
              std::string::npos)
        << error.diagnostics().front().message;
  }
  EXPECT_FALSE(fs::exists(lock_file_path(path("linked.json"))));
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

const std::string kRunId = "0123456789abcdef0123456789abcdef";
const Json kHeader = {{"seq", 0},
                      {"journal", kJournalSchemaId},
                      {"run_id", kRunId},
                      {"results_file", "out.json"},
                      {"started_at", "2026-01-01T00:00:00Z"},
                      {"run", {{"git_revision", "abc1234"}, {"threads", 1}, {"filter", nullptr}, {"shard", nullptr},
                               {"scenarios", Json::array()}}}};

// A journal entry line of run `run_id`.
std::string entry_line(std::uint64_t seq, const Json& record, const std::string& run_id = kRunId) {
  return journal_line(Json{{"seq", seq}, {"record", record}}, run_id);
}

// The message read_journal throws for `journal`, or "" when it reads it.
std::string journal_problem(const std::string& journal) {
  try {
    read_journal(journal);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_F(ResultsWriting, TheJournalKeepsEveryWholeLineAndIgnoresOneCutShort) {
  const FileLock lock(path("out.json"), "-o out.json");
  const std::string journal = path("out.json.journal");
  {
    JournalWriter writer(lock, kHeader);
    writer.append({Json{{"device", {{"kind", "cpu"}, {"name", "x"}}}}, Json{{"record", {{"n", 1}}}}});
    writer.append({Json{{"record", {{"n", 2}}}}});
  }
  std::ofstream(journal, std::ios::app) << entry_line(4, {{"n", 3}}).substr(0, 30);  // killed while writing
  const JournalContents contents = read_journal(journal);
  EXPECT_EQ(contents.header, kHeader);
  ASSERT_EQ(contents.records.size(), 2u);
  EXPECT_EQ(contents.records[1]["n"], 2);
  ASSERT_EQ(contents.devices.size(), 1u);
  EXPECT_EQ(contents.entries, 3u);
  EXPECT_TRUE(contents.torn_tail);
  EXPECT_FALSE(fs::exists(temporary_path(path("out.json")))) << "the header was renamed into place";
}

TEST_F(ResultsWriting, EveryJournalLineCarriesItsSequenceAndAChecksumOfItsRun) {
  const std::string line = entry_line(7, {{"n", 1}});
  EXPECT_EQ(line.rfind("{\"crc32c\":\"", 0), 0u) << line;
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(Json::parse(line)["seq"], 7) << "a line is JSON";
  EXPECT_NE(line, entry_line(7, {{"n", 1}}, "ffffffffffffffffffffffffffffffff")) << "the run id is in the checksum";
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u) << "the CRC-32C check value";
}

TEST_F(ResultsWriting, AJournalLineEditedOutOfSequenceOrOfAnotherRunIsBadInputNamingTheLine) {
  const std::string journal = path("out.json.journal");
  const std::string header = journal_line(kHeader, kRunId);
  std::string edited = entry_line(2, {{"n", 2}});
  edited.replace(edited.find("\"n\":2"), 5, "\"n\":9");
  std::ofstream(journal) << header << entry_line(1, {{"n", 1}}) << edited
                         << entry_line(3, {{"n", 3}}, "ffffffffffffffffffffffffffffffff") << entry_line(5, {{"n", 5}});
  const std::string problem = journal_problem(journal);
  for (const std::string& expected :
       {journal + ": line 3: fails its checksum", journal + ": line 4: fails its checksum",
        journal + ": line 5: is entry 5 where entry 2 comes next"}) {
    EXPECT_NE(problem.find(expected), std::string::npos) << expected << "\n" << problem;
  }
  std::ofstream(journal) << header << entry_line(1, {{"n", 1}}) << entry_line(1, {{"n", 1}});
  EXPECT_NE(journal_problem(journal).find("line 3: is entry 1 where entry 2 comes next"), std::string::npos)
      << "a repeated line";
  std::string header_edited = header;
  header_edited.replace(header_edited.find("abc1234"), 7, "abc1235");
  std::ofstream(journal) << header_edited;
  EXPECT_NE(journal_problem(journal).find("line 1: the header fails its checksum"), std::string::npos);
}

TEST_F(ResultsWriting, AJournalWithNoWholeLineHasNoHeaderAndNoRecord) {
  const std::string journal = path("out.json.journal");
  std::ofstream(journal).close();
  EXPECT_TRUE(read_journal(journal).header.is_null());
  std::ofstream(journal) << journal_line(kHeader, kRunId).substr(0, 40);
  const JournalContents torn = read_journal(journal);
  EXPECT_TRUE(torn.header.is_null());
  EXPECT_TRUE(torn.torn_tail);
  EXPECT_TRUE(torn.records.empty());
}

TEST_F(ResultsWriting, ADamagedJournalLineIsBadInputNamingTheLine) {
  const std::string journal = path("out.json.journal");
  std::ofstream(journal) << journal_line(kHeader, kRunId) << entry_line(1, {{"n", 1}}) << "not json\n"
                         << entry_line(2, {{"n", 2}});
  EXPECT_NE(journal_problem(journal).find(journal + ": line 3: is not a journal entry"), std::string::npos)
      << journal_problem(journal);
  std::ofstream(journal) << entry_line(1, {{"n", 1}});
  EXPECT_NE(journal_problem(journal).find("line 1: not an attnbench journal header"), std::string::npos)
      << "no header";
  Json without_threads = kHeader;
  without_threads["run"].erase("threads");
  std::ofstream(journal) << journal_line(without_threads, kRunId);
  EXPECT_NE(journal_problem(journal).find("line 1: not an attnbench journal header"), std::string::npos)
      << journal_problem(journal);
}

TEST_F(ResultsWriting, AFullDiskIsAWriteErrorNamingTheFile) {
  // A file size limit of 0 fails every write (EFBIG) as a full disk does
  // (ENOSPC); SIGXFSZ ignored, the write returns the error.
  const std::string results = path("full.json");
  const FileLock lock(results, "-o " + results);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit nothing = saved;
  nothing.rlim_cur = 0;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &nothing), 0);
  try {
    JournalWriter writer(lock, kHeader);
    ADD_FAILURE() << "expected FileWriteError";
  } catch (const FileWriteError& error) {
    EXPECT_EQ(error.path(), journal_path(results));
    EXPECT_EQ(std::string(error.what()), "cannot write " + journal_path(results) + ": " + std::strerror(EFBIG));
  }
  EXPECT_THROW(write_file_atomically(results, "{}"), FileWriteError);
  EXPECT_THROW(write_file_atomically(lock, "{}"), FileWriteError);
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previous_handler);
  EXPECT_FALSE(fs::exists(results));
}

TEST_F(ResultsWriting, ALockFileMadeByAnotherWriterIsNeverRemoved) {
  // This process's lock file is removed (as a releasing thread of it once
  // did); another process then takes the name with a lock file of its own.
  const std::string target = path("out.json");
  FileLock lock(target, "-o " + target);
  fs::remove(lock_file_path(target));
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t other = fork();
  if (other == 0) {
    const FileLock theirs(target, "-o " + target);
    const char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  lock.release();
  EXPECT_TRUE(fs::exists(lock_file_path(target))) << "the other writer's lock file is still there";
  EXPECT_NE(lock_from_another_process(target).find("is being written by process " + std::to_string(other)),
            std::string::npos);
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

TEST_F(ResultsWriting, NothingIsWrittenIntoADirectoryMadeAfterTheLockUnderItsName) {
  fs::create_directories(path("d"));
  const std::string target = path("d/out.json");
  const FileLock lock(target, "-o " + target);
  EXPECT_NO_THROW(lock.check_in_place());
  fs::remove_all(path("d"));
  fs::create_directories(path("d"));  // another writer's directory now
  EXPECT_THROW(lock.check_in_place(), OutputDisplacedError);
  try {
    write_file_atomically(lock, "{}");
    FAIL() << "expected OutputDisplacedError";
  } catch (const OutputDisplacedError& error) {
    EXPECT_NE(std::string(error.what()).find("was deleted, moved or replaced"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(target));

  const std::string kept = path("kept.json");
  const FileLock kept_lock(kept, "-o " + kept);
  fs::remove(lock_file_path(kept));
  EXPECT_THROW(kept_lock.check_in_place(), OutputDisplacedError) << "its lock file was removed";
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
        "out.json: threads: the run used 2 threads, this one 1", "out.json: filter: the run used no --filter, this one --filter \"causal\": continue it with no --filter",
        "out.json: shard: the run used no --shard, this one --shard 1/2: continue it with no --shard", "source.defaults.head_dim (32 vs 64)", "measure.cache (\"cold\" vs \"hot\")",
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

// Records that need not carry a run (as in a merge of older files).
const RecordRuns kAnyRun{{}, false, "any run"};

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
  const std::vector<Diagnostic> problems = record_problems(located, expected, kAnyRun);
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
  EXPECT_EQ(messages(record_problems(located, expected, kAnyRun)), "");

  expected["tiny"].settings_required = false;  // merge: files from before records carried settings
  located = {{&no_settings, "f", "records[0]"}};
  EXPECT_EQ(messages(record_problems(located, expected, kAnyRun)), "");
}

// Every figure a record derives from its own data is recomputed: one edited
// alone (or samples edited without their figures) is an edited record.
TEST(RecordProblems, DerivedFiguresThatDifferFromTheirRecomputationAreAnEditedRecord) {
  ExpectedRecords expected;
  expected["tiny"].case_index_by_key = {{"k0", 0}, {"k1", 1}};
  expected["tiny"].implementations = {"cpu.flash"};
  expected["tiny"].settings = Json{{"threads", 2}};
  const auto timed = [](const std::string& key, std::size_t index) {
    Json r = record("tiny", key, index, "cpu.flash");
    r["flops"] = {{"total", 4.0e9}};
    r["traffic"] = {{"compulsory", {{"read_bytes", 3.0e6}, {"write_bytes", 1.0e6}}}};
    r["timing"] = Json{{"samples_seconds", {0.002, 0.001, 0.003, 0.0021, 0.0019, 0.0022, 0.0018, 0.002, 0.0024}},
                       {"statistics", {{"median_ci_confidence", 0.95}}},
                       {"host_activity", {{"load_before", 0.5}, {"load_after", 0.7}, {"steal_fraction", nullptr},
                                          {"involuntary_switches", 1}, {"available_cpus", 2}}}};
    refresh_timing_figures(r);
    return r;
  };
  const Json good = timed("k0", 0);
  EXPECT_EQ(good["timing"]["statistics"]["count"], 9);
  EXPECT_DOUBLE_EQ(good["timing"]["tflops"].get<double>(), 4.0e9 / 0.002 / 1e12);
  EXPECT_TRUE(good["timing"].contains("noise"));
  const std::vector<std::pair<std::string, std::function<void(Json&)>>> edits = {
      {"timing.statistics.p50 is 0.5", [](Json& t) { t["statistics"]["p50"] = 0.5; }},
      {"timing.statistics.p90 is", [](Json& t) { t["statistics"]["p90"] = t["statistics"]["p90"].get<double>() / 2; }},
      {"timing.statistics.stddev is", [](Json& t) { t["statistics"]["stddev"] = 1e-9; }},
      {"timing.tflops is 9", [](Json& t) { t["tflops"] = 9.0; }},
      {"timing.compulsory_bandwidth_gb_per_s is", [](Json& t) { t["compulsory_bandwidth_gb_per_s"] = 1.0; }},
      {"timing.noise.verdict is \"noisy: made up\"", [](Json& t) { t["noise"]["verdict"] = "noisy: made up"; }},
      {"timing.statistics.min is 0.001 but its samples give 0.0018", [](Json& t) { t["samples_seconds"][1] = 4.4; }},
      {"timing.statistics.count is 9 but its samples give 8", [](Json& t) { t["samples_seconds"].erase(0); }},
      // Every sample and statistic halved together: the throughput still tells.
      {"timing.tflops is", [](Json& t) {
         for (Json& sample : t["samples_seconds"]) sample = sample.get<double>() / 2;
         for (auto& [key, value] : t["statistics"].items()) {
           if (value.is_number_float() && key != "median_ci_confidence") value = value.get<double>() / 2;
         }
       }},
  };
  for (const auto& [expected_text, edit] : edits) {
    Json edited = timed("k1", 1);
    edit(edited["timing"]);
    const std::vector<LocatedRecord> located = {{&good, "f", "records[0]"}, {&edited, "f", "records[1]"}};
    const std::string text = messages(record_problems(located, expected, kAnyRun));
    EXPECT_NE(text.find("f: records[1]: " + expected_text), std::string::npos) << expected_text << "\n" << text;
    EXPECT_NE(text.find("the record was changed after it was measured"), std::string::npos) << text;
    EXPECT_EQ(text.find("records[0]"), std::string::npos) << text;
  }
}

// A record carries the run that measured it: one of another run is refused.
TEST(RecordProblems, ARecordOfAnotherRunIsRefusedNamingBothRuns) {
  ExpectedRecords expected;
  expected["tiny"].case_index_by_key = {{"k0", 0}, {"k1", 1}};
  expected["tiny"].implementations = {"cpu.flash"};
  expected["tiny"].settings = Json{{"threads", 2}};
  const std::string mine(32, 'a'), theirs(32, 'b');
  Json own = record("tiny", "k0", 0, "cpu.flash"), copied = record("tiny", "k1", 1, "cpu.flash");
  own["run_id"] = mine;
  copied["run_id"] = theirs;
  const RecordRuns runs{{mine}, true, "this run (" + mine + ")"};
  EXPECT_EQ(messages(record_problems({{&own, "f", "records[0]"}}, expected, runs)), "");
  const std::string text = messages(record_problems({{&own, "f", "records[0]"}, {&copied, "f", "records[1]"}},
                                                    expected, runs));
  EXPECT_NE(text.find("f: records[1]: is a record of run " + theirs + ", not of this run (" + mine +
                      "): it was copied from another run's file"),
            std::string::npos)
      << text;
  Json unmarked = record("tiny", "k1", 1, "cpu.flash");
  EXPECT_NE(messages(record_problems({{&unmarked, "f", "records[1]"}}, expected, runs)).find("carries no run_id"),
            std::string::npos);
  EXPECT_EQ(messages(record_problems({{&unmarked, "f", "records[1]"}}, expected, kAnyRun)), "")
      << "an older file's records carry none";
}

TEST(RecordProblems, ManyRecordsWithOneProblemGiveOneMessageWithACount) {
  ExpectedRecords expected;
  expected["tiny"].case_index_by_key = {{"k0", 0}};
  expected["tiny"].implementations = {"cpu.flash"};
  std::vector<Json> records;
  for (int i = 0; i < 20000; ++i) records.push_back(record("tiny", "invented" + std::to_string(i), 0, "cpu.flash"));
  std::vector<LocatedRecord> located;
  for (const Json& r : records) located.push_back({&r, "f", "records"});
  const std::vector<Diagnostic> problems = record_problems(located, expected, kAnyRun);
  ASSERT_EQ(problems.size(), 1u) << messages(problems);
  EXPECT_NE(problems[0].message.find("(and 19999 more like it)"), std::string::npos) << problems[0].message;
}

}  // namespace
}  // namespace attnbench
