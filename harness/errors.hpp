// Exit codes (docs/design.md §8) and the exceptions that carry them to main, which is the
// only place that turns errors into exit codes.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace attnbench {

enum ExitCode : int {
  kExitSuccess = 0,
  kExitGateFailed = 1,      // a regression or an accuracy failure
  kExitBadInput = 2,        // bad usage or a bad input file
  kExitNotComparable = 3,   // results not comparable, or inconclusive
  kExitEnvironment = 4,     // this machine cannot run what was asked
};

// One problem found in an input file: which file, which key, what is wrong.
struct Diagnostic {
  std::string file;  // empty for a problem with the command line itself
  std::string path;  // key path inside the file ("defaults.head_dim", "cases[2]"); empty for the file
  std::string message;
  std::string format() const {
    return (file.empty() ? "" : file + ": ") + (path.empty() ? "" : path + ": ") + message;
  }
};

// Bad input: every problem found, reported together (exit code 2).
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Diagnostic> diagnostics)
      : std::runtime_error(join(diagnostics)), diagnostics_(std::move(diagnostics)) {}
  explicit InputError(const std::string& message)
      : InputError(std::vector<Diagnostic>{Diagnostic{"", "", message}}) {}
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  static std::string join(const std::vector<Diagnostic>& diagnostics) {
    std::string text;
    for (const auto& d : diagnostics) {
      if (!text.empty()) text += '\n';
      text += d.format();
    }
    return text;
  }
  std::vector<Diagnostic> diagnostics_;
};

// A device call failed. `context_lost` marks an error that leaves the device
// unusable for the rest of the process (an illegal address poisons a CUDA
// context): the runner records it, checkpoints and restarts to go on.
class DeviceError : public std::runtime_error {
 public:
  DeviceError(const std::string& message, bool context_lost)
      : std::runtime_error(message), context_lost_(context_lost) {}
  bool context_lost() const { return context_lost_; }

 private:
  bool context_lost_;
};

// A run whose device context was lost: its finished records are saved in
// `results_path`, and the process must restart to continue (`run --resume`).
class RestartRequired : public std::runtime_error {
 public:
  RestartRequired(const std::string& message, std::string results_path)
      : std::runtime_error(message), results_path_(std::move(results_path)) {}
  const std::string& results_path() const { return results_path_; }

 private:
  std::string results_path_;
};

// The machine cannot do what was asked, e.g. a CUDA implementation without a GPU (exit code 4).
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnbench
