// End to end: how `attnbench run` writes, protects and resumes its results
// file. --resume refuses a run whose settings differ and records that do not
// belong; an existing output is replaced only with --overwrite, and never when
// it is an input; a second writer is refused, naming the first; SIGINT and
// SIGTERM save and say so (130, 143); kills at random points followed by
// --resume give every record exactly once; a full disk exits 4 saying where
// the records are, and --resume finishes the run.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_support.hpp"
#include "results_test_support.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/results/run_identity.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

class CliResults : public TempDirectoryTest {
 protected:
  std::string p(const std::string& name) const { return path(name).string(); }

  void expect_nothing_beside(const fs::path& results) const { test::expect_nothing_beside(directory_, results); }

  // A finished run of `scenario` into `output`, then made to look interrupted
  // after its first `kept` records.
  Json unfinished_run(const fs::path& scenario, const fs::path& output, std::size_t kept) const {
    const CommandResult run = run_attnbench("run " + scenario.string() + " --threads 2 -o " + output.string());
    EXPECT_EQ(run.exit_code, 0) << run.output;
    Json partial = read_json(output);
    partial["complete"] = false;
    partial["finished_at"] = nullptr;
    partial["records"].erase(partial["records"].begin() + static_cast<std::ptrdiff_t>(kept), partial["records"].end());
    write_file_atomically(output.string(), partial.dump(1) + "\n");
    return partial;
  }
};

TEST_F(CliResults, EveryRecordCarriesTheSettingsItWasMeasuredWith) {
  const fs::path scenario = write("sweep.json", sweep_scenario(2));
  ASSERT_EQ(run_attnbench("run " + scenario.string() + " --threads 2 --no-profile -o " + p("r.json")).exit_code, 0);
  const Json results = read_json(path("r.json"));
  ASSERT_EQ(results["records"].size(), 2u);
  for (const Json& record : results["records"]) {
    EXPECT_EQ(record["settings"]["measure"], results["scenarios"][0]["measure"]);
    EXPECT_EQ(record["settings"]["accuracy"], results["scenarios"][0]["accuracy"]);
    EXPECT_EQ(record["settings"]["threads"], 2);
    EXPECT_EQ(record["settings"]["profile"], (Json{{"enabled", false}, {"per_kernel", false}}));
    EXPECT_EQ(record["settings"]["git_revision"], results["tool"]["git_revision"]);
  }
  EXPECT_TRUE(results["filter"].is_null());
}

TEST_F(CliResults, ResumeRefusesARunThatWouldMeasureDifferently) {
  const fs::path scenario = write("sweep.json", sweep_scenario(3));
  const fs::path output = path("r.json");
  unfinished_run(scenario, output, 1);
  const std::string saved = read_text(output);

  const fs::path slower = write("slower.json", sweep_scenario(3, 32, 0.5));     // same name, max_seconds edited
  const fs::path wider = write("wider.json", sweep_scenario(3, 64));            // head_dim 32 -> 64
  Json other_build = read_json(output);
  other_build["tool"]["git_revision"] = "0000000";
  write_json(path("other_build.json"), other_build);
  Json other_device = read_json(output);
  other_device["devices"][0]["name"] = "Another CPU";
  write_json(path("other_device.json"), other_device);
  const struct {
    std::string arguments;
    std::string names;
  } refusals[] = {
      {scenario.string() + " --threads 2 --hot -o " + output.string(), ""},  // hot already: accepted below
      {slower.string() + " --threads 2 -o " + output.string(), "measure.max_seconds (0.02 vs 0.5)"},
      {wider.string() + " --threads 2 -o " + output.string(), "source.defaults.head_dim (32 vs 64)"},
      {scenario.string() + " --threads 2 --cold -o " + output.string(), "measure.cache (\"hot\" vs \"cold\")"},
      {scenario.string() + " --threads 2 --timing events,graph -o " + output.string(),
       "measure.timing ([\"events\"] vs [\"events\",\"graph\"])"},
      {scenario.string() + " --threads 1 -o " + output.string(), "threads: the run used 2 threads, this one 1"},
      {scenario.string() + " --threads 2 --impl cpu.standard -o " + output.string(), "implementations: the run used"},
      {scenario.string() + " --threads 2 --filter q1 -o " + output.string(), "filter: the run used no --filter, this one --filter \"q1\""},
      {scenario.string() + " --threads 2 --shard 1/2 -o " + output.string(), "shard: the run used no --shard, this one --shard 1/2"},
      {scenario.string() + " --threads 2 --no-profile -o " + output.string(), "settings.profile.enabled (true vs false)"},
      {scenario.string() + " --threads 2 -o " + p("other_build.json"), "tool.git_revision: the run was made by build"},
      {scenario.string() + " --threads 2 -o " + p("other_device.json"),
       "devices: the run measured on another cpu device (the run's vs this one's): name (\"Another CPU\" vs"},
  };
  for (const auto& refusal : refusals) {
    if (refusal.names.empty()) continue;
    const CommandResult resumed = run_attnbench("run " + refusal.arguments + " --resume");
    EXPECT_EQ(resumed.exit_code, 2) << refusal.arguments << "\n" << resumed.output;
    EXPECT_NE(resumed.output.find(refusal.names), std::string::npos) << refusal.names << "\n" << resumed.output;
    EXPECT_NE(resumed.output.find("--resume refused"), std::string::npos) << resumed.output;
    EXPECT_EQ(read_text(output), saved) << "a refused resume leaves the file as it was";
    EXPECT_FALSE(fs::exists(journal_path(output.string())));
  }
  expect_nothing_beside(output);
  const CommandResult same = run_attnbench("run " + refusals[0].arguments + " --resume");
  EXPECT_EQ(same.exit_code, 0) << "--hot on a hot scenario changes nothing\n" << same.output;
  EXPECT_EQ(read_json(output)["records"].size(), 3u);
}

TEST_F(CliResults, ResumeAcceptsNoRecordThatBelongsToNoCaseAndNoDuplicate) {
  const fs::path scenario = write("sweep.json", sweep_scenario(3));
  const fs::path output = path("r.json");
  const Json partial = unfinished_run(scenario, output, 2);
  const std::string resume = "run " + scenario.string() + " --threads 2 -o " + output.string() + " --resume";

  Json duplicated = partial;
  duplicated["records"].push_back(partial["records"][0]);
  write_json(output, duplicated);
  CommandResult refused = run_attnbench(resume);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("records[2]: is a second record of"), std::string::npos) << refused.output;

  Json foreign = partial;
  foreign["records"][1]["scenario"] = "not_a_scenario";
  write_json(output, foreign);
  refused = run_attnbench(resume);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("records[1]: is a record of scenario \"not_a_scenario\""), std::string::npos)
      << refused.output;

  Json invented = partial;
  for (int i = 0; i < 2000; ++i) {
    Json record = partial["records"][0];
    record["case_key"] = "invented-" + std::to_string(i);
    invented["records"].push_back(std::move(record));
  }
  write_json(output, invented);
  const auto started = std::chrono::steady_clock::now();
  refused = run_attnbench(resume);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("is no case of scenario \"sweep\" as run here (and 1999 more like it)"),
            std::string::npos)
      << refused.output.substr(0, 2000);
  EXPECT_LT(std::count(refused.output.begin(), refused.output.end(), '\n'), 5) << "one line for them all";
  EXPECT_LT(seconds, 20.0);
  EXPECT_FALSE(read_json(output)["complete"].get<bool>()) << "never marked complete";
}

TEST_F(CliResults, AJournalRecordAlreadyInTheResultsFileIsKeptOnce) {
  // A run killed after writing the results file, before deleting its journal.
  const fs::path scenario = write("sweep.json", sweep_scenario(3));
  const fs::path output = path("r.json");
  const Json partial = unfinished_run(scenario, output, 2);
  const std::string run_id = partial["run_id"].get<std::string>();
  const std::string header = journal_line(Json{{"seq", 0}, {"journal", kJournalSchemaId}, {"run_id", run_id},
                                               {"results_file", output.string()},
                                               {"started_at", partial["started_at"]}, {"run", run_identity(partial)}},
                                          run_id);
  const auto entry = [&](const Json& record) { return journal_line(Json{{"seq", 1}, {"record", record}}, run_id); };
  std::ofstream(journal_path(output.string())) << header << entry(partial["records"][1]);
  const std::string resume = "run " + scenario.string() + " --threads 2 -o " + output.string() + " --resume";
  const CommandResult resumed = run_attnbench(resume);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::multiset<std::string> found = cells(read_json(output));
  EXPECT_EQ(found.size(), 3u);
  EXPECT_EQ(std::set<std::string>(found.begin(), found.end()).size(), 3u) << "every record once";
  expect_nothing_beside(output);

  // A journal record that differs from the file's is a second record, refused.
  write_file_atomically(output.string(), partial.dump(1) + "\n");
  Json changed = partial["records"][1];
  changed["timing"]["wall_seconds"] = 123.0;
  std::ofstream(journal_path(output.string())) << header << entry(changed);
  const CommandResult refused = run_attnbench(resume);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find(journal_path(output.string()) + ": record 1: is a second record of"),
            std::string::npos)
      << refused.output;

  // Journal entries are checked against the results schema like the file's records.
  std::ofstream(journal_path(output.string())) << header << entry(Json{{"scenario", "sweep"}});
  const CommandResult malformed = run_attnbench(resume);
  EXPECT_EQ(malformed.exit_code, 2) << malformed.output;
  EXPECT_NE(malformed.output.find(journal_path(output.string()) + ": record 1: missing required key"), std::string::npos)
      << malformed.output;
  std::ofstream(journal_path(output.string())) << R"({"journal": "attnbench.journal/2", "run": 7})" << "\n";
  const CommandResult bad_header = run_attnbench(resume);
  EXPECT_EQ(bad_header.exit_code, 2) << bad_header.output;
  EXPECT_NE(bad_header.output.find(": line 1: not an attnbench journal header"), std::string::npos) << bad_header.output;
  EXPECT_EQ(bad_header.output.find("internal error"), std::string::npos) << bad_header.output;
}

TEST_F(CliResults, AnExistingOutputIsReplacedOnlyWithOverwrite) {
  const fs::path scenario = write("sweep.json", sweep_scenario(2));
  const fs::path output = path("r.json");
  ASSERT_EQ(run_attnbench("run " + scenario.string() + " -o " + output.string()).exit_code, 0);
  const std::string finished = read_text(output);

  const CommandResult again = run_attnbench("run " + scenario.string() + " -o " + output.string());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("-o " + output.string() + ": holds a finished run (2 records"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("--overwrite"), std::string::npos) << again.output;
  EXPECT_EQ(read_text(output), finished);

  // An unfinished run with one corrupted byte does not parse: it is not replaced either.
  Json unfinished = read_json(output);
  unfinished["complete"] = false;
  std::string corrupted = unfinished.dump(1);
  corrupted[corrupted.size() / 2] = '\x01';
  std::ofstream(output) << corrupted;
  const CommandResult over_corrupted = run_attnbench("run " + scenario.string() + " -o " + output.string());
  EXPECT_EQ(over_corrupted.exit_code, 2) << over_corrupted.output;
  EXPECT_NE(over_corrupted.output.find("exists and is not a finished results file"), std::string::npos)
      << over_corrupted.output;
  EXPECT_EQ(read_text(output), corrupted);
  EXPECT_EQ(run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume").exit_code, 2);
  EXPECT_EQ(read_text(output), corrupted);

  EXPECT_EQ(run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume --overwrite").exit_code, 2);
  const CommandResult overwritten = run_attnbench("run " + scenario.string() + " -o " + output.string() + " --overwrite");
  ASSERT_EQ(overwritten.exit_code, 0) << overwritten.output;
  EXPECT_TRUE(read_json(output)["complete"].get<bool>());
  expect_nothing_beside(output);
}

TEST_F(CliResults, AnOutputMayNeverBeAnInput) {
  const fs::path scenario = write("sweep.json", sweep_scenario(2));
  const std::string text = read_text(scenario);
  const CommandResult onto = run_attnbench("run " + scenario.string() + " -o " + scenario.string());
  EXPECT_EQ(onto.exit_code, 2) << onto.output;
  EXPECT_NE(onto.output.find(scenario.string() + ": is a scenario file of this run"), std::string::npos) << onto.output;
  EXPECT_EQ(read_text(scenario), text);

  fs::create_directories(path("arrays/sweep"));
  const fs::path inside = write("arrays/sweep/input.json", text);
  const CommandResult into_dump =
      run_attnbench("run " + inside.string() + " -o " + p("r.json") + " --dump " + p("arrays"));
  EXPECT_EQ(into_dump.exit_code, 2) << into_dump.output;
  EXPECT_NE(into_dump.output.find("is where --dump"), std::string::npos) << into_dump.output;
  const CommandResult onto_index =
      run_attnbench("run " + scenario.string() + " -o " + p("arrays/index.json") + " --dump " + p("arrays"));
  EXPECT_EQ(onto_index.exit_code, 2) << onto_index.output;
  EXPECT_FALSE(fs::exists(path("r.json")));
  EXPECT_EQ(read_text(inside), text);
}

TEST_F(CliResults, ASecondWriterIsRefusedAndSigtermSavesWhatIsFinished) {
  const fs::path scenario = write("sweep.json", sweep_scenario(200, 32, 0.02, 0.02));
  const fs::path output = path("r.json");
  const pid_t first = start_attnbench({"run", scenario.string(), "-o", output.string()}, path("first.log"));
  ASSERT_TRUE(wait_until([&] { return journal_records(journal_path(output.string())) >= 2; }));

  const std::string holder = "is being written by process " + std::to_string(first);
  const CommandResult second = run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume");
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find(holder), std::string::npos) << second.output;
  const CommandResult merge = run_attnbench("merge " + scenario.string() + " -o " + output.string() + " --overwrite");
  EXPECT_EQ(merge.exit_code, 2) << merge.output;
  EXPECT_NE(merge.output.find(holder), std::string::npos) << merge.output;
  fs::create_directories(path("arrays"));
  const pid_t dumping = start_attnbench({"run", scenario.string(), "-o", p("d.json"), "--dump", p("arrays")},
                                        path("dumping.log"));
  ASSERT_TRUE(wait_until([&] { return fs::exists(path("arrays/index.json.lock")); }));
  const CommandResult second_dump =
      run_attnbench("run " + scenario.string() + " -o " + p("d2.json") + " --dump " + p("arrays"));
  EXPECT_EQ(second_dump.exit_code, 2) << second_dump.output;
  EXPECT_NE(second_dump.output.find("--dump " + p("arrays") + ": is being written by process " +
                                    std::to_string(dumping)),
            std::string::npos)
      << second_dump.output;
  kill(dumping, SIGINT);
  const Ended dump_ended = wait_for(dumping);
  EXPECT_EQ(dump_ended.code, 130);

  kill(first, SIGTERM);
  const Ended ended = wait_for(first);
  ASSERT_TRUE(ended.exited);
  EXPECT_EQ(ended.code, 143);
  const std::string log = read_text(path("first.log"));
  std::smatch match;
  ASSERT_TRUE(std::regex_search(log, match,
                                std::regex("interrupted: ([0-9]+) of 200 cases saved in " + output.string() +
                                           "; continue with --resume")))
      << log;
  const Json saved = load_results_file(output.string());
  EXPECT_FALSE(saved["complete"].get<bool>());
  EXPECT_EQ(saved["records"].size(), std::stoul(match[1]));
  EXPECT_GE(saved["records"].size(), 2u);
  expect_nothing_beside(output);
}

TEST_F(CliResults, TemporariesOfKilledWritersAreRemovedAtTheStart) {
  const fs::path scenario = write("sweep.json", sweep_scenario(1));
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  waitpid(ended, nullptr, 0);
  const fs::path stale = path("r.json.tmp." + std::to_string(ended));
  std::ofstream(stale) << "{\"half\": ";
  ASSERT_EQ(run_attnbench("run " + scenario.string() + " -o " + p("r.json")).exit_code, 0);
  EXPECT_FALSE(fs::exists(stale));
}

TEST_F(CliResults, KilledAtRandomPointsAndResumedEveryRecordIsThereOnce) {
  constexpr int kCases = 12;
  const fs::path scenario = write("sweep.json", sweep_scenario(kCases, 32, 0.02, 0.01));
  const fs::path output = path("r.json");
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  const int signals[] = {SIGINT, SIGTERM, SIGKILL};
  bool finished = false;
  int interrupted = 0;
  for (int attempt = 0; attempt < 40 && !finished; ++attempt) {
    // Early attempts are killed early; later ones get longer, so the run ends.
    const int delay_ms = std::uniform_int_distribution<int>(0, 150 + 20 * attempt)(random);
    const int signal = signals[std::uniform_int_distribution<int>(0, 2)(random)];
    // The child opens its log after the fork: a signal that comes first must
    // not leave the last attempt's log to be read as this one's.
    fs::remove(path("run.log"));
    const pid_t run = start_attnbench({"run", scenario.string(), "-o", output.string(), "--resume"}, path("run.log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(run, signal);
    const Ended ended = wait_for(run);
    const std::string log = read_text(path("run.log"));
    SCOPED_TRACE("attempt " + std::to_string(attempt) + ", signal " + std::to_string(signal) + " after " +
                 std::to_string(delay_ms) + " ms:\n" + log);
    if (ended.exited && ended.code == 0) {
      finished = true;
    } else if (ended.exited && log.find("after the run finished") != std::string::npos) {
      // The signal came between the last record and the exit: the file is complete.
      ASSERT_EQ(ended.code, 128 + signal);
      ASSERT_TRUE(load_results_file(output.string())["complete"].get<bool>());
      finished = true;
    } else if (ended.exited) {
      ASSERT_NE(signal, SIGKILL);
      ASSERT_EQ(ended.code, 128 + signal);
      const bool saved = log.find("interrupted: ") != std::string::npos && log.find("; continue with --resume") != std::string::npos;
      ASSERT_TRUE(saved || log.find("before the first case") != std::string::npos ||
                  log.find("while no run was recording: nothing to save") != std::string::npos);
      ++interrupted;
    } else {
      ASSERT_EQ(ended.signal, signal);
      // SIGINT and SIGTERM kill only during the program's start-up, before
      // main installs its handlers: then nothing has been written.
      if (signal != SIGKILL) {
        ASSERT_TRUE(log.empty()) << "killed by a signal after main began";
      }
    }
    if (fs::exists(output)) {
      EXPECT_NO_THROW(load_results_file(output.string())) << "the file is always whole";
    }
    if (fs::exists(journal_path(output.string()))) {
      EXPECT_NO_THROW(read_journal(journal_path(output.string())));
    }
  }
  if (!finished) {
    const CommandResult last = run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume");
    ASSERT_EQ(last.exit_code, 0) << last.output;
  }
  const Json results = load_results_file(output.string());
  EXPECT_TRUE(results["complete"].get<bool>());
  const std::multiset<std::string> found = cells(results);
  EXPECT_EQ(found.size(), static_cast<std::size_t>(kCases));
  EXPECT_EQ(std::set<std::string>(found.begin(), found.end()).size(), static_cast<std::size_t>(kCases))
      << "every record exactly once";
  expect_nothing_beside(output);
}

// A file-size limit fails the write as a full disk does (EFBIG for ENOSPC).
TEST_F(CliResults, AWriteThatFailsMidRunExitsFourAndResumeFinishes) {
  const fs::path scenario = write("sweep.json", sweep_scenario(8));
  const fs::path output = path("r.json");
  StartOptions limited;
  limited.file_size_limit = 12000;
  const pid_t run = start_attnbench({"run", scenario.string(), "-o", output.string()}, path("run.log"), limited);
  const Ended ended = wait_for(run);
  const std::string log = read_text(path("run.log"));
  EXPECT_EQ(ended.code, 4) << log;
  EXPECT_NE(log.find("attnbench: error: cannot write " + output.string()), std::string::npos) << log;
  EXPECT_NE(log.find("cases finished so far are safe in " + output.string()), std::string::npos) << log;
  EXPECT_NE(log.find("continue with the same command and --resume"), std::string::npos) << log;
  EXPECT_EQ(log.find("internal error"), std::string::npos) << log;

  const CommandResult resumed = run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::multiset<std::string> found = cells(read_json(output));
  EXPECT_EQ(found.size(), 8u);
  EXPECT_EQ(std::set<std::string>(found.begin(), found.end()).size(), 8u);
}

// The same on a real full disk: a tmpfs of 24 KiB, where mounting one is allowed.
TEST_F(CliResults, AFullDiskExitsFourAndResumeFinishesElsewhere) {
  const fs::path disk = path("disk");
  fs::create_directories(disk);
  if (mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=24k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "); the file-size test covers it";
  }
  const fs::path scenario = write("sweep.json", sweep_scenario(8));
  const fs::path output = disk / "r.json";
  const CommandResult full = run_attnbench("run " + scenario.string() + " -o " + output.string());
  EXPECT_EQ(full.exit_code, 4) << full.output;
  EXPECT_NE(full.output.find("No space left on device"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("are safe in " + output.string()), std::string::npos) << full.output;
  for (const std::string name : {"r.json", "r.json.journal"}) {
    if (fs::exists(disk / name)) fs::copy_file(disk / name, path(name));
  }
  umount(disk.c_str());
  const CommandResult resumed = run_attnbench("run " + scenario.string() + " -o " + p("r.json") + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(read_json(path("r.json"))["records"].size(), 8u);
}

}  // namespace
}  // namespace attnbench
