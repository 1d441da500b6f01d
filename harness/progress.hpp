// Live progress of a run on stderr: one rewritten line on a terminal (case k of
// n, the implementation running, ETA), one plain line per finished case otherwise.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace attnbench {

class Progress {
 public:
  Progress(std::size_t total_cases, bool interactive);
  void start_case(std::size_t number, const std::string& label);  // number is 1-based
  void start_implementation(const std::string& name);
  void finish_case(const std::string& outcome);
  void finish();

 private:
  void draw(const std::string& text);
  std::string eta() const;

  std::size_t total_;
  bool interactive_;
  std::size_t current_ = 0;
  std::size_t done_ = 0;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace attnbench
