// Test helpers for the end-to-end tests of the attnbench binary (test_cli*.cpp):
// running it with arguments and capturing its exit code and output (also under
// a time and memory limit), reading
// JSON and text files, the shipped scenarios' paths, and a GoogleTest fixture
// with a fresh temporary directory for each test.
//
// The including test target defines ATTNBENCH_BINARY (the binary's path) and
// ATTNBENCH_SOURCE_DIR (the source tree); see tests/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/json_schema.hpp"
#include "harness/results/document.hpp"

#ifndef ATTNBENCH_BINARY
#error "cli_test_support.hpp needs ATTNBENCH_BINARY, the path of the attnbench binary"
#endif

namespace attnbench::test {

// What run_attnbench captures of the binary's output.
enum class Capture {
  stdout_and_stderr,  // both streams together (2>&1)
  stdout_only,        // standard output; standard error is discarded (2>/dev/null)
};

struct CommandResult {
  int exit_code = -1;  // -1 when the binary could not be started or did not exit normally
  std::string output;  // as captured, see Capture
};

// Runs `ATTNBENCH_BINARY arguments` through the shell and waits for it.
inline CommandResult run_attnbench(const std::string& arguments, Capture capture = Capture::stdout_and_stderr) {
  const std::string command = std::string(ATTNBENCH_BINARY) + " " + arguments +
                              (capture == Capture::stdout_and_stderr ? " 2>&1" : " 2>/dev/null");
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Whether this build runs under AddressSanitizer (the whole build has the same
// flags, so the binary under test does too).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

// What run_attnbench_bounded saw of one run.
struct BoundedResult {
  int exit_code = -1;      // -1 unless the process exited normally
  int signal = 0;          // the signal that ended it, if one did
  bool timed_out = false;  // killed after the time limit
  std::string output;      // standard output and standard error together
};

// Runs ATTNBENCH_BINARY with `arguments` (passed as they are, bytes and all: no
// shell) in a child limited to `address_space_bytes` of virtual memory
// (setrlimit; not under AddressSanitizer), killed after `seconds`. For the reproducers whose point is that
// the tool finishes and stays small whatever the input. With `stop_at`, the
// child is also killed as soon as its output holds that text (a run that would
// go on for hours, once it has said what the test checks).
inline BoundedResult run_attnbench_bounded(const std::vector<std::string>& arguments, double seconds = 10,
                                           rlim_t address_space_bytes = rlim_t{2} << 30,
                                           const std::string& stop_at = "") {
  BoundedResult result;
  char output_name[] = "/tmp/attnbench_bounded_XXXXXX";
  const int output = mkstemp(output_name);
  if (output < 0) return result;
  unlink(output_name);
  const pid_t child = fork();
  if (child == 0) {
    if (!kUnderAddressSanitizer) {  // it reserves terabytes of address space for its shadow memory
      const rlimit limit{address_space_bytes, address_space_bytes};
      setrlimit(RLIMIT_AS, &limit);
    }
    dup2(output, STDOUT_FILENO);
    dup2(output, STDERR_FILENO);
    std::vector<std::string> argv_storage{ATTNBENCH_BINARY};
    argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& argument : argv_storage) argv.push_back(argument.data());
    argv.push_back(nullptr);
    execv(ATTNBENCH_BINARY, argv.data());
    _exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  const auto output_holds = [&](const std::string& text) {
    std::string seen(static_cast<std::size_t>(std::max<off_t>(0, lseek(output, 0, SEEK_END))), '\0');
    return pread(output, seen.data(), seen.size(), 0) > 0 && seen.find(text) != std::string::npos;
  };
  while (waitpid(child, &status, WNOHANG) == 0) {
    const bool stop = !stop_at.empty() && output_holds(stop_at);
    if (stop || std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      result.timed_out = !stop;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  lseek(output, 0, SEEK_SET);
  std::array<char, 4096> buffer{};
  for (ssize_t count; (count = read(output, buffer.data(), buffer.size())) > 0;) {
    result.output.append(buffer.data(), static_cast<std::size_t>(count));
  }
  close(output);
  return result;
}

// A shipped scenario: <source dir>/scenarios/<name>.
inline std::string scenario_path(const std::string& name) {
  return std::string(ATTNBENCH_SOURCE_DIR) + "/scenarios/" + name;
}

inline nlohmann::ordered_json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::ordered_json::parse(in);
}

// Expects `document` to satisfy the results schema, listing every error.
inline void expect_results_schema_valid(const nlohmann::ordered_json& document) {
  static const JsonSchema schema(results_schema());
  std::string all;
  for (const auto& error : schema.validate(document)) all += format_error(error) + "\n";
  EXPECT_TRUE(all.empty()) << all;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_json(const std::filesystem::path& path, const nlohmann::ordered_json& document) {
  std::ofstream(path) << document.dump(1);
}

// An empty directory <gtest temp dir>/attnbench_<stem>_<process id>. The id keeps
// apart the processes that CTest runs in parallel, one per test.
inline std::filesystem::path fresh_temp_directory(const std::string& stem) {
  const std::filesystem::path directory =
      std::filesystem::path(::testing::TempDir()) / ("attnbench_" + stem + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

// A fixture whose every test gets an empty directory of its own, named after the
// suite, the test and the process, made in SetUp and removed in TearDown.
class TempDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    directory_ = fresh_temp_directory(std::string(test->test_suite_name()) + "_" + test->name());
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path path(const std::string& name) const { return directory_ / name; }
  // Writes `text` to path(name) and returns that path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  std::filesystem::path directory_;
};

}  // namespace attnbench::test
