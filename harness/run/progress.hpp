// Live progress of a run on stderr: one rewritten line on a terminal (case k of
// n, the implementation running, ETA), one plain line per finished case otherwise.
// The rewritten line never exceeds the terminal's width (the case label is
// shortened instead), so the terminal never wraps it and leaves no stale lines.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace attnbench {

// `head + label + tail` in at most `width` - 1 characters: the label loses
// its end (marked with "...") first, then the head.
std::string fit_progress_line(const std::string& head, const std::string& label, const std::string& tail,
                              std::size_t width);

// Columns of the terminal on stderr (the COLUMNS variable, else 80, when it is
// no terminal or does not say).
std::size_t terminal_columns();

class Progress {
 public:
  Progress(std::size_t total_cases, bool interactive, std::size_t columns = terminal_columns());
  void start_case(std::size_t number, const std::string& label);  // number is 1-based
  void start_implementation(const std::string& name);
  void finish_case(const std::string& outcome);
  void finish();

 private:
  void draw_live(const std::string& tail);
  std::string counter() const;
  std::string eta() const;

  std::size_t total_;
  bool interactive_;
  std::size_t columns_;
  std::size_t current_ = 0;
  std::size_t done_ = 0;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace attnbench
