// Test helpers for the end-to-end tests of the attnbench binary (test_cli*.cpp):
// running it with arguments and capturing its exit code and output, reading
// JSON and text files, the shipped scenarios' paths, and a GoogleTest fixture
// with a fresh temporary directory for each test.
//
// The including test target defines ATTNBENCH_BINARY (the binary's path) and
// ATTNBENCH_SOURCE_DIR (the source tree); see tests/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

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

// A shipped scenario: <source dir>/scenarios/<name>.
inline std::string scenario_path(const std::string& name) {
  return std::string(ATTNBENCH_SOURCE_DIR) + "/scenarios/" + name;
}

inline nlohmann::ordered_json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::ordered_json::parse(in);
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
