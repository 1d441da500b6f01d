// End to end: the crash windows of results writing, each reproduced where it
// opens. A test-only LD_PRELOAD library (tests/syscall_faults.cpp) logs the
// binary's file system calls and sends it a signal at a chosen one:
// - a kill while a resume starts its journal leaves a run that resumes (and a
//   journal with no whole line is replaced with a note, not refused);
// - a signal after the run finished rewrites nothing and says it is complete;
// - an output whose directory is deleted mid-run is never recreated: the
//   records go to a rescue file, another writer's file is left alone;
// - a journal of another run, a line edited or copied from one, and a record
//   whose statistics contradict its samples are refused, naming them; a
//   journal cut at a line boundary says what runs again;
// - SIGHUP and a broken pipe save like SIGINT;
// - results files larger than the input-file bound are read by every command;
// - every rename and removal of the results file and its journal is followed
//   by a sync of the directory, and the write probe leaves no file;
// - a sample that spans a SIGSTOP is marked.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_support.hpp"
#include "harness/results/document.hpp"
#include "harness/results/journal.hpp"
#include "harness/results/output.hpp"
#include "harness/scenario/json_text.hpp"
#include "results_test_support.hpp"

#ifndef ATTNBENCH_SYSCALL_FAULTS
#error "test_cli_results_faults needs ATTNBENCH_SYSCALL_FAULTS, the path of the LD_PRELOAD library"
#endif

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace test;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class CliResultsFaults : public TempDirectoryTest {
 protected:
  void SetUp() override {
    if (kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer must come first; the preloaded library would not";
    TempDirectoryTest::SetUp();
  }

  std::string p(const std::string& name) const { return path(name).string(); }

  // Runs attnbench to its end with `environment`; its output in `log`.
  Ended run_with(const std::vector<std::string>& arguments, const StartOptions& options, const std::string& log) {
    return wait_for(start_attnbench(arguments, path(log), options));
  }

  // The environment that makes the process send itself `signal` before the
  // `nth` `call` on a path ending in `suffix`.
  static StartOptions signal_at(const std::string& call, const std::string& suffix, int nth, int signal) {
    StartOptions options;
    options.environment = {{"LD_PRELOAD", ATTNBENCH_SYSCALL_FAULTS},
                           {"ATTNBENCH_FAULTS_SIGNAL",
                            call + ":" + suffix + ":" + std::to_string(nth) + ":" + std::to_string(signal)}};
    return options;
  }

  // Every message that names --overwrite also says that it discards records.
  static void expect_overwrite_says_it_discards(const std::string& output) {
    for (const std::string& line : lines_of(output)) {
      if (line.find("--overwrite") == std::string::npos) continue;
      EXPECT_NE(line.find("discard"), std::string::npos) << line;
    }
  }
};

TEST_F(CliResultsFaults, AKillWhileAResumeStartsItsJournalLeavesARunThatResumes) {
  const fs::path scenario = write("sweep.json", sweep_scenario(6));
  const fs::path output = path("r.json");
  const std::vector<std::string> resume{"run", scenario.string(), "-o", output.string(), "--resume"};
  // Killed mid-run, then killed again at the first write to its journal of the resume.
  ASSERT_EQ(run_with(resume, signal_at("write", "r.json.journal", 3, SIGKILL), "first.log").signal, SIGKILL);
  ASSERT_EQ(run_with(resume, signal_at("write", "r.json.journal", 1, SIGKILL), "second.log").signal, SIGKILL);
  const CommandResult resumed = run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_every_record_once(load_results_file(output.string()), 6);
  expect_nothing_beside(directory_, output);

  // A journal with no whole line (what a kill left before journals appeared
  // by a rename) beside a results file: a plain run sends the user to
  // --resume, and --resume continues, keeping every record.
  Json unfinished = read_json(output);
  unfinished["complete"] = false;
  unfinished["finished_at"] = nullptr;
  unfinished["records"].erase(unfinished["records"].begin() + 4, unfinished["records"].end());
  write_file_atomically(output.string(), unfinished.dump(1) + "\n");
  std::ofstream(journal_path(output.string())).close();
  const CommandResult plain = run_attnbench("run " + scenario.string() + " -o " + output.string());
  EXPECT_EQ(plain.exit_code, 2) << plain.output;
  EXPECT_NE(plain.output.find("continue it with --resume"), std::string::npos) << plain.output;
  expect_overwrite_says_it_discards(plain.output);
  const CommandResult continued = run_attnbench("run " + scenario.string() + " -o " + output.string() + " --resume");
  ASSERT_EQ(continued.exit_code, 0) << continued.output;
  EXPECT_NE(continued.output.find(journal_path(output.string()) + " holds no whole line"), std::string::npos)
      << continued.output;
  EXPECT_NE(continued.output.find("resuming " + output.string() + ": 4 records in it"), std::string::npos)
      << continued.output;
  expect_every_record_once(load_results_file(output.string()), 6);
}

// Before the run's watcher exists (here, as the results file's lock is made),
// a signal still ends the process with its exit code and a sentence, not silently.
TEST_F(CliResultsFaults, ASignalBeforeTheRunRecordsEndsItSayingThereWasNothingToSave) {
  const fs::path scenario = write("sweep.json", sweep_scenario(3));
  const fs::path output = path("r.json");
  for (const int signal : {SIGINT, SIGTERM}) {
    const Ended ended = run_with({"run", scenario.string(), "-o", output.string()},
                                 signal_at("open", "/r.json.lock", 1, signal), "run.log");
    const std::string log = read_text(path("run.log"));
    EXPECT_EQ(ended.signal, 0) << log;
    EXPECT_EQ(ended.code, 128 + signal) << log;
    EXPECT_NE(log.find(std::string("attnbench: interrupted (") + (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                       ") while no run was recording: nothing to save"),
              std::string::npos)
        << log;
    EXPECT_FALSE(fs::exists(output));
    EXPECT_FALSE(fs::exists(journal_path(output.string())));
  }
}

TEST_F(CliResultsFaults, ASignalAfterTheRunFinishedRewritesNothingAndSaysItIsComplete) {
  const fs::path scenario = write("sweep.json", sweep_scenario(3));
  const fs::path output = path("r.json");
  // SIGINT just before the rename that makes the file complete (the second onto r.json).
  const Ended ended =
      run_with({"run", scenario.string(), "-o", output.string()}, signal_at("rename", "/r.json", 2, SIGINT), "run.log");
  const std::string log = read_text(path("run.log"));
  EXPECT_EQ(ended.code, 130) << log;
  EXPECT_NE(log.find("interrupted (Interrupt) after the run finished; " + output.string() + " is complete"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("continue with --resume"), std::string::npos) << log;
  const Json results = load_results_file(output.string());
  EXPECT_TRUE(results["complete"].get<bool>());
  expect_every_record_once(results, 3);
  expect_nothing_beside(directory_, output);
}

TEST_F(CliResultsFaults, AnOutputWhoseDirectoryIsDeletedMidRunIsNeverRecreated) {
  const fs::path scenario = write("sweep.json", sweep_scenario(200, 32, 0.02, 0.02));
  const fs::path other = write("other.json", sweep_scenario(2));
  const fs::path output = path("d/r.json");
  StartOptions rescue_here;
  rescue_here.environment = {{"TMPDIR", directory_.string()}};
  const pid_t first =
      start_attnbench({"run", scenario.string(), "-o", output.string()}, path("first.log"), rescue_here);
  ASSERT_TRUE(wait_until([&] { return journal_records(journal_path(output.string())) >= 2; }));
  fs::remove_all(path("d"));
  // Another writer takes the same name in a new directory d and finishes.
  const CommandResult second = run_attnbench("run " + other.string() + " -o " + output.string());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const Ended ended = wait_for(first);
  const std::string log = read_text(path("first.log"));
  EXPECT_EQ(ended.code, 4) << log;
  EXPECT_NE(log.find("cannot write " + output.string() + ": its directory " + p("d") +
                     " was deleted, moved or replaced while this process wrote it"),
            std::string::npos)
      << log;
  const Json second_results = load_results_file(output.string());
  EXPECT_TRUE(second_results["complete"].get<bool>()) << "the second writer's file is left alone";
  EXPECT_EQ(second_results["records"].size(), 2u);

  std::vector<fs::path> rescued;
  for (const auto& entry : fs::directory_iterator(directory_)) {
    if (entry.path().filename().string().rfind("attnbench-", 0) == 0) rescued.push_back(entry.path());
  }
  ASSERT_EQ(rescued.size(), 1u) << log;
  EXPECT_NE(log.find("are safe in " + rescued[0].string() + "; continue with the same command and -o " +
                     rescued[0].string() + " --resume"),
            std::string::npos)
      << log;
  const Json saved = load_results_file(rescued[0].string());
  EXPECT_FALSE(saved["complete"].get<bool>());
  EXPECT_GE(saved["records"].size(), 2u);
  EXPECT_NE(saved["run_id"], second_results["run_id"]);
}

// A displaced run's records go to $TMPDIR, else /tmp, else the current
// directory; when none takes them they are printed, never lost.
TEST_F(CliResultsFaults, ADisplacedRunsRecordsAreNeverLostWhateverTheTemporaryDirectory) {
  const fs::path scenario = write("sweep.json", sweep_scenario(200, 32, 0.02, 0.02));
  const fs::path a_file = write("not-a-directory", "x");
  const auto displaced_run = [&](const StartOptions& options, const std::string& log_name) {
    const fs::path output = path("d/r.json");
    fs::create_directories(path("d"));
    const pid_t run = start_attnbench({"run", scenario.string(), "-o", output.string()}, path(log_name), options);
    EXPECT_TRUE(wait_until([&] { return journal_records(journal_path(output.string())) >= 2; }));
    fs::remove_all(path("d"));
    const Ended ended = wait_for(run);
    const std::string log = read_text(path(log_name));
    EXPECT_EQ(ended.code, 4) << log;
    return log;
  };
  // The rescue file the log names, read and removed.
  const auto rescued_in = [&](const std::string& log, const std::string& directory) {
    const std::size_t at = log.find("are safe in " + directory + "/attnbench-");
    EXPECT_NE(at, std::string::npos) << log;
    if (at == std::string::npos) return Json();
    const std::size_t start = at + std::string("are safe in ").size();
    const std::string file = log.substr(start, log.find(';', start) - start);
    EXPECT_NE(log.find("continue with the same command and -o " + file + " --resume"), std::string::npos) << log;
    const Json saved = load_results_file(file);
    fs::remove(file);
    return saved;
  };
  for (const std::string& unusable : {p("missing"), a_file.string()}) {
    StartOptions options;
    options.environment = {{"TMPDIR", unusable}};
    const Json saved = rescued_in(displaced_run(options, "unusable.log"), "/tmp");
    EXPECT_GE(saved["records"].size(), 2u) << unusable;
  }
  // Every directory full: the results file comes out on standard error.
  StartOptions full;
  full.environment = {{"TMPDIR", directory_.string()},
                      {"LD_PRELOAD", ATTNBENCH_SYSCALL_FAULTS},
                      {"ATTNBENCH_FAULTS_NO_SPACE", "attnbench-"}};
  const std::string log = displaced_run(full, "full.log");
  EXPECT_NE(log.find("are safe in standard error"), std::string::npos) << log;
  EXPECT_NE(log.find("continue with the same command and -o FILE --resume, FILE holding the text between the "
                     "marker lines"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("No space left on device"), std::string::npos) << "why each directory refused\n" << log;
  const std::size_t begin = log.find(std::string(kRescueBegin) + "\n"), end = log.find(kRescueEnd);
  ASSERT_NE(begin, std::string::npos) << log;
  ASSERT_NE(end, std::string::npos) << log;
  const fs::path printed = write("printed.json", log.substr(begin + std::strlen(kRescueBegin) + 1, end - begin -
                                                                                    std::strlen(kRescueBegin) - 1));
  const Json saved = load_results_file(printed.string());
  EXPECT_FALSE(saved["complete"].get<bool>());
  EXPECT_GE(saved["records"].size(), 2u);
}

TEST_F(CliResultsFaults, AJournalOrRecordThatIsNotTheRunsOwnIsRefusedNamingIt) {
  const fs::path scenario = write("sweep.json", sweep_scenario(4));
  const fs::path mine = path("x.json"), theirs = path("y.json");
  // Two runs with the same settings, each killed after two cases were journaled.
  for (const fs::path& output : {mine, theirs}) {
    ASSERT_EQ(run_with({"run", scenario.string(), "-o", output.string()},
                       signal_at("write", output.filename().string() + ".journal", 3, SIGKILL), "run.log")
                  .signal,
              SIGKILL);
  }
  const std::string journal = journal_path(mine.string());
  const std::string my_journal = read_text(journal), my_results = read_text(mine);
  // The header, the device (entry 1) and two records (entries 2 and 3).
  const std::vector<std::string> my_lines = lines_of(my_journal);
  const std::vector<std::string> their_lines = lines_of(read_text(journal_path(theirs.string())));
  ASSERT_EQ(my_lines.size(), 4u) << my_journal;
  ASSERT_EQ(their_lines.size(), 4u);
  const std::string resume = "run " + scenario.string() + " -o " + mine.string() + " --resume";
  const auto refused_with = [&](const std::string& journal_text, const std::string& expected) {
    std::ofstream(journal) << journal_text;
    const CommandResult refused = run_attnbench(resume);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find(expected), std::string::npos) << expected << "\n" << refused.output;
    expect_overwrite_says_it_discards(refused.output);
    EXPECT_EQ(read_text(mine), my_results) << "left as it was";
    EXPECT_EQ(read_text(journal), journal_text);
  };
  const auto joined = [](const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
  };
  // The other run's whole journal, one line of it, one of mine edited, one removed.
  refused_with(joined(their_lines), journal + ": run_id: is the journal of another run");
  refused_with(joined({my_lines[0], my_lines[1], their_lines[2], my_lines[3]}),
               journal + ": line 3: fails its checksum");
  std::string edited = my_lines[3];
  edited.insert(edited.find("\"samples_seconds\":[") + 19, "4.4,");
  refused_with(joined({my_lines[0], my_lines[1], my_lines[2], edited}), journal + ": line 4: fails its checksum");
  refused_with(joined({my_lines[0], my_lines[2], my_lines[3]}),
               journal + ": line 2: is entry 2 where entry 1 comes next");

  // A journal cut at a line boundary: the note says how many cases run again.
  std::ofstream(journal) << joined({my_lines[0], my_lines[1], my_lines[2]});
  const CommandResult resumed = run_attnbench(resume);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming " + mine.string() + ": 0 records in it, 1 from its journal (entries 1-2, "
                                "in sequence); 3 of 4 cases have no record in either and run now"),
            std::string::npos)
      << resumed.output;
  const Json finished = load_results_file(mine.string());
  expect_every_record_once(finished, 4);

  // A record of the results file whose statistics no longer match its samples.
  Json unfinished = finished;
  unfinished["complete"] = false;
  unfinished["records"].erase(unfinished["records"].begin() + 3);
  unfinished["records"][1]["timing"]["samples_seconds"][0] = 4.4;
  write_file_atomically(mine.string(), unfinished.dump(1) + "\n");
  const CommandResult edited_record = run_attnbench(resume);
  EXPECT_EQ(edited_record.exit_code, 2) << edited_record.output;
  EXPECT_NE(edited_record.output.find(mine.string() + ": records[1]: timing.statistics."), std::string::npos)
      << edited_record.output;
  EXPECT_NE(edited_record.output.find("the record was changed after it was measured"), std::string::npos)
      << edited_record.output;

  // A record of the other run (the same settings), put in place of this run's record of its case.
  const JournalContents their_journal = read_journal(journal_path(theirs.string()));
  ASSERT_FALSE(their_journal.records.empty());
  const Json& their_record = their_journal.records.back();
  Json foreign = finished;
  foreign["complete"] = false;
  for (Json& record : foreign["records"]) {
    if (record["case_key"] == their_record["case_key"] && record["implementation"] == their_record["implementation"]) {
      record = their_record;
    }
  }
  write_file_atomically(mine.string(), foreign.dump(1) + "\n");
  fs::remove(journal);
  const CommandResult copied = run_attnbench(resume);
  EXPECT_EQ(copied.exit_code, 2) << copied.output;
  EXPECT_NE(copied.output.find("is a record of run " + their_record["run_id"].get<std::string>() +
                               ", not of the run the file holds (" + finished["run_id"].get<std::string>() + ")"),
            std::string::npos)
      << copied.output;

  // A derived figure edited alone (the fault campaign's p90 and TFLOP/s): recomputed, and refused.
  for (const char* figure : {"p90", "tflops"}) {
    Json edited = finished;
    edited["complete"] = false;
    edited["records"].erase(edited["records"].begin() + 3);
    Json& timing = edited["records"][1]["timing"];
    Json& value = std::string(figure) == "p90" ? timing["statistics"]["p90"] : timing["tflops"];
    value = value.get<double>() / 2;
    write_file_atomically(mine.string(), edited.dump(1) + "\n");
    const CommandResult refused = run_attnbench(resume);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find(mine.string() + ": records[1]: timing." +
                                  (std::string(figure) == "p90" ? "statistics.p90" : "tflops") + " is "),
              std::string::npos)
        << refused.output;
  }
}

TEST_F(CliResultsFaults, SighupAndABrokenPipeSaveWhatIsFinishedLikeSigint) {
  const fs::path scenario = write("sweep.json", sweep_scenario(200, 32, 0.02, 0.02));
  const fs::path output = path("r.json");
  const pid_t hung_up = start_attnbench({"run", scenario.string(), "-o", output.string()}, path("hup.log"));
  ASSERT_TRUE(wait_until([&] { return journal_records(journal_path(output.string())) >= 2; }));
  kill(hung_up, SIGHUP);
  const Ended ended = wait_for(hung_up);
  const std::string log = read_text(path("hup.log"));
  EXPECT_EQ(ended.code, 129) << log;
  EXPECT_NE(log.find("interrupted: "), std::string::npos) << log;
  EXPECT_GE(load_results_file(output.string())["records"].size(), 2u);
  expect_nothing_beside(directory_, output);

  // `run … 2>&1 | head -3`: the reader goes away after three lines.
  const fs::path piped = path("p.json");
  int channel[2];
  ASSERT_EQ(pipe2(channel, O_CLOEXEC), 0);  // the child keeps only its stdout and stderr
  StartOptions into_pipe;
  into_pipe.output_descriptor = channel[1];
  const pid_t writer = start_attnbench({"run", scenario.string(), "-o", piped.string()}, "", into_pipe);
  close(channel[1]);
  std::string read_lines;
  char byte = 0;
  while (std::count(read_lines.begin(), read_lines.end(), '\n') < 3 && read(channel[0], &byte, 1) == 1) {
    read_lines += byte;
  }
  close(channel[0]);
  const Ended broken = wait_for(writer);
  EXPECT_TRUE(broken.exited) << "killed by signal " << broken.signal << " after: " << read_lines;
  EXPECT_EQ(broken.code, 128 + SIGPIPE);
  const Json saved = load_results_file(piped.string());
  EXPECT_FALSE(saved["complete"].get<bool>());
  EXPECT_GE(saved["records"].size(), 1u);
  expect_nothing_beside(directory_, piped);
}

TEST_F(CliResultsFaults, AResultsFileLargerThanTheInputBoundIsReadByEveryCommand) {
  const fs::path scenario = write("sweep.json", sweep_scenario(2));
  const fs::path output = path("r.json");
  ASSERT_EQ(run_attnbench("run " + scenario.string() + " -o " + output.string()).exit_code, 0);
  Json large = read_json(output);
  large["complete"] = false;
  large["finished_at"] = nullptr;
  large["records"].erase(1);
  large["scenarios"][0]["description"] = std::string(kMaxInputFileBytes, 'x');
  write_file_atomically(output.string(), large.dump() + "\n");
  ASSERT_GT(fs::file_size(output), kMaxInputFileBytes);
  // Every reader (report, merge, compare, --resume) loads results files through
  // load_results_file: compare reads two, --resume reads and writes.
  for (const std::string& command : {"compare " + output.string() + " " + output.string(),
                                     "run " + scenario.string() + " -o " + output.string() + " --resume"}) {
    const CommandResult read = run_attnbench(command);
    EXPECT_NE(read.exit_code, 2) << command << "\n" << read.output.substr(0, 2000);
    EXPECT_EQ(read.output.find("MiB, the most"), std::string::npos) << command << "\n" << read.output.substr(0, 2000);
  }
  expect_every_record_once(load_results_file(output.string()), 2);
}

TEST_F(CliResultsFaults, EveryNameTheRunMakesOrRemovesIsSyncedAndItsWriteProbeLeavesNoFile) {
  const fs::path scenario = write("sweep.json", sweep_scenario(2));
  const fs::path output = path("d/r.json");
  StartOptions logged;
  logged.environment = {{"LD_PRELOAD", ATTNBENCH_SYSCALL_FAULTS}, {"ATTNBENCH_FAULTS_LOG", p("calls.log")}};
  ASSERT_EQ(run_with({"run", scenario.string(), "-o", output.string()}, logged, "run.log").code, 0)
      << read_text(path("run.log"));
  const std::vector<std::string> calls = lines_of(read_text(path("calls.log")));
  const std::set<std::string> names{output.string(), journal_path(output.string())};
  std::size_t synced_names = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    std::istringstream fields(calls[i]);
    std::string call, first, second;
    fields >> call >> first >> second;
    if (!(call == "rename" && names.count(second)) && !(call == "unlink" && names.count(first))) continue;
    ++synced_names;
    ASSERT_LT(i + 1, calls.size()) << calls[i];
    EXPECT_EQ(calls[i + 1], "fsync " + p("d")) << "after: " << calls[i];
  }
  EXPECT_EQ(synced_names, 4u) << "the results written twice, the journal made and removed:\n"
                              << read_text(path("calls.log"));
  for (const std::string& call : calls) EXPECT_EQ(call.find(".attnbench-probe"), std::string::npos) << call;

  // Killed where a probe file would be removed: nothing is left beside the output.
  const Ended killed = run_with({"run", scenario.string(), "-o", p("e/r.json")},
                                signal_at("unlink", ".attnbench-probe-%p", 1, SIGKILL), "killed.log");
  EXPECT_EQ(killed.code, 0) << read_text(path("killed.log"));
  for (const auto& entry : fs::directory_iterator(path("e"))) {
    EXPECT_EQ(entry.path().filename().string().find(".attnbench-probe"), std::string::npos) << entry.path();
  }
}

TEST_F(CliResultsFaults, ASampleThatSpansAStopOfTheProcessIsMarked) {
  Json scenario = Json::parse(sweep_scenario(1, 32));
  scenario["sweep"]["seqlen"] = {512};  // samples of milliseconds: a stop falls in one, not between two
  scenario["measure"]["max_samples"] = 1000000;
  scenario["measure"]["target_ci_width"] = 1e-9;  // samples until max_seconds
  scenario["measure"]["max_seconds"] = 1.0;
  const fs::path file = write("stop.json", scenario.dump());
  const fs::path output = path("r.json");
  const pid_t run = start_attnbench({"run", file.string(), "-o", output.string()}, path("run.log"));
  ASSERT_TRUE(wait_until([&] { return fs::exists(journal_path(output.string())); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the samples
  kill(run, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(run, SIGCONT);
  const Ended ended = wait_for(run);
  const std::string log = read_text(path("run.log"));
  ASSERT_EQ(ended.code, 0) << log;
  const Json record = load_results_file(output.string())["records"][0];
  ASSERT_TRUE(record["timing"].contains("stopped_samples")) << record["timing"].dump().substr(0, 500);
  ASSERT_EQ(record["timing"]["stopped_samples"].size(), 1u);
  const std::size_t stopped = record["timing"]["stopped_samples"][0].get<std::size_t>();
  EXPECT_GE(record["timing"]["samples_seconds"][stopped].get<double>(), 0.25) << "the sample spans the stop";
  ASSERT_TRUE(record.contains("warnings"));
  const std::string warning = record["warnings"][0].get<std::string>();
  EXPECT_NE(warning.find("the process was stopped (SIGSTOP or Ctrl-Z) during samples_seconds[" +
                         std::to_string(stopped) + "]"),
            std::string::npos)
      << warning;
  EXPECT_NE(log.find("warning: the process was stopped"), std::string::npos) << "shown in the summary\n" << log;
}

}  // namespace
}  // namespace attnbench
