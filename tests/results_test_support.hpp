// Helpers of the tests that run the attnbench binary in the background and
// interrupt it (test_cli_results*.cpp): a sweep of small cases, starting the
// binary with its output in a file and extra environment variables, waiting
// for it, counting the records its journal holds, and checking what a run
// left: every record once, nothing beside the results file.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"

namespace attnbench::test {

// `cases` small forward cases of one implementation, each warmed up for
// `warmup_seconds`.
inline std::string sweep_scenario(int cases, int head_dim = 32, double max_seconds = 0.02,
                                  double warmup_seconds = 0) {
  nlohmann::ordered_json seqlens = nlohmann::ordered_json::array();
  for (int i = 0; i < cases; ++i) seqlens.push_back(16 + i);
  return nlohmann::ordered_json{
      {"name", "sweep"},
      {"description", "small cases"},
      {"defaults", {{"batch", 1}, {"heads", 1}, {"head_dim", head_dim}, {"direction", "fwd"}}},
      {"sweep", {{"seqlen", seqlens}}},
      {"implementations", {"cpu.flash"}},
      {"accuracy", {{"check", false}}},
      {"measure", {{"cache", "hot"}, {"warmup_min_iterations", 0}, {"warmup_min_seconds", warmup_seconds},
                   {"min_samples", 2}, {"max_samples", 3}, {"min_seconds", 0}, {"max_seconds", max_seconds}}}}
      .dump(1);
}

// How the binary is started in the background.
struct StartOptions {
  std::optional<rlim_t> file_size_limit;                     // RLIMIT_FSIZE, bytes
  std::vector<std::pair<std::string, std::string>> environment;  // set in the child
  int output_descriptor = -1;  // where stdout and stderr go instead of the log (a pipe)
};

// The binary started in the background, its output in `log`.
inline pid_t start_attnbench(const std::vector<std::string>& arguments, const std::filesystem::path& log,
                             const StartOptions& options = {}) {
  const pid_t child = fork();
  if (child != 0) return child;
  const int out = options.output_descriptor >= 0 ? options.output_descriptor
                                                  : open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(out, STDOUT_FILENO);
  dup2(out, STDERR_FILENO);
  if (options.file_size_limit) {
    const rlimit limit{*options.file_size_limit, *options.file_size_limit};
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  for (const auto& [name, value] : options.environment) setenv(name.c_str(), value.c_str(), 1);
  std::vector<std::string> all{ATTNBENCH_BINARY};
  all.insert(all.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& argument : all) argv.push_back(argument.data());
  argv.push_back(nullptr);
  execv(ATTNBENCH_BINARY, argv.data());
  _exit(127);
}

struct Ended {
  bool exited = false;
  int code = -1;   // when exited
  int signal = 0;  // when killed by a signal
};

inline Ended wait_for(pid_t child) {
  int status = 0;
  waitpid(child, &status, 0);
  Ended ended;
  ended.exited = WIFEXITED(status);
  ended.code = ended.exited ? WEXITSTATUS(status) : -1;
  ended.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return ended;
}

// Waits (up to 10 s) until `ready` holds.
template <class Condition>
bool wait_until(Condition ready) {
  for (int i = 0; i < 1000; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// How many record lines a journal holds.
inline std::size_t journal_records(const std::filesystem::path& journal) {
  std::ifstream in(journal);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) lines += line.find("\"record\":") != std::string::npos ? 1 : 0;
  return lines;
}

// Every (case_key, implementation) of a results file, with how often it appears.
inline std::multiset<std::string> cells(const nlohmann::ordered_json& results) {
  std::multiset<std::string> found;
  for (const nlohmann::ordered_json& record : results["records"]) {
    found.insert(record["case_key"].get<std::string>() + " " + record["implementation"].get<std::string>());
  }
  return found;
}

// Expects each (case_key, implementation) of `results` exactly once, `count` in all.
inline void expect_every_record_once(const nlohmann::ordered_json& results, std::size_t count) {
  const std::multiset<std::string> found = cells(results);
  EXPECT_EQ(found.size(), count);
  EXPECT_EQ(std::set<std::string>(found.begin(), found.end()).size(), count) << "every record exactly once";
}

// Expects no lock, journal or temporary beside `results` in `directory`.
inline void expect_nothing_beside(const std::filesystem::path& directory, const std::filesystem::path& results) {
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(results.filename().string() + ".", 0) == 0) ADD_FAILURE() << "left behind: " << name;
  }
}

}  // namespace attnbench::test
