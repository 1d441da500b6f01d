// Exit codes (docs/design.md §8) and the exceptions that carry them to main, which is the
// only place that turns errors into exit codes.
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace attnbench {

enum ExitCode : int {
  kExitSuccess = 0,
  kExitGateFailed = 1,      // a regression or an accuracy failure
  kExitBadInput = 2,        // bad usage or a bad input file
  kExitNotComparable = 3,   // results not comparable, or inconclusive
  kExitEnvironment = 4,     // this machine cannot run what was asked
  kExitSignalBase = 128,    // + the signal: 130 SIGINT, 143 SIGTERM (`run` saved what it finished)
};

// One problem found in an input file: which file, which key, what is wrong.
struct Diagnostic {
  std::string file;     // empty for a problem with the command line itself
  std::string path;     // key path inside the file ("defaults.head_dim", "cases[2]"); empty for the file
  std::string message;
  std::string context = {};  // where it showed ("in cases[1] x sweep{seqlen=512}"); may be empty
  std::size_t repeats = 0;  // further places with the same file, path and message
  // "file: path: message (context and 3 more)"
  std::string format() const {
    std::string text = (file.empty() ? "" : file + ": ") + (path.empty() ? "" : path + ": ") + message;
    const std::string more = repeats == 0 ? "" : "and " + std::to_string(repeats) + " more";
    if (!context.empty()) return text + " (" + context + (more.empty() ? "" : " " + more) + ")";
    return more.empty() ? text : text + " (" + std::to_string(repeats + 1) + " times)";
  }
};

// Bad input: every problem found, reported together (exit code 2). A problem
// found in many places (every case of a sweep) is kept once, with the first
// place and how many more there were.
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Diagnostic> diagnostics)
      : InputError(collapse_repeats(std::move(diagnostics)), 0) {}
  explicit InputError(const std::string& message)
      : InputError(std::vector<Diagnostic>{Diagnostic{"", "", message}}) {}
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  InputError(std::vector<Diagnostic> collapsed, int)
      : std::runtime_error(join(collapsed)), diagnostics_(std::move(collapsed)) {}

  static std::vector<Diagnostic> collapse_repeats(std::vector<Diagnostic> diagnostics) {
    std::vector<Diagnostic> kept;
    std::map<std::tuple<std::string, std::string, std::string>, std::size_t> position;
    for (Diagnostic& diagnostic : diagnostics) {
      const auto found = position.emplace(std::make_tuple(diagnostic.file, diagnostic.path, diagnostic.message),
                                          kept.size());
      if (found.second) {
        kept.push_back(std::move(diagnostic));
      } else {
        kept[found.first->second].repeats += diagnostic.repeats + 1;
      }
    }
    return kept;
  }
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

// Device work that did not finish within the wait limit (a kernel that never
// ends; harness/cuda/device_wait.hpp). The context counts as lost, and the
// runner runs none of that implementation's later cases in the run.
class DeviceTimeout : public DeviceError {
 public:
  explicit DeviceTimeout(const std::string& message) : DeviceError(message, true) {}
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

// A file could not be written (the disk is full or read-only, a file-size
// limit): "cannot write PATH: REASON" (exit code 4). `path` is the file.
class FileWriteError : public EnvironmentError {
 public:
  FileWriteError(const std::string& path, const std::string& reason)
      : EnvironmentError("cannot write " + path + ": " + reason), path_(path), reason_(reason) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

}  // namespace attnbench
