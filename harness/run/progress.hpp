// Live progress of a run on stderr. On a terminal: one rewritten line (case k
// of n, the implementation running, its phase — set-up, check, warm-up, sample
// k — the time it has taken so far and the run's ETA: the time the running
// implementation is expected to take still, when the run has an estimate of
// it (harness/run/case_estimate.hpp), plus the finished cases' average for
// each case after this one), redrawn every second
// even while one call runs for minutes. Otherwise: one plain line per finished
// case, and a status line at least every 30 seconds while a case runs, so a
// log never goes silent. The rewritten line never exceeds the terminal's width
// (the case label is shortened instead), so the terminal never wraps it and
// leaves no stale lines. Notes (a long case ahead) are printed above it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace attnbench {

// `head + label + tail` in at most `width` - 1 characters: the label loses
// its end (marked with "...") first, then the head.
std::string fit_progress_line(const std::string& head, const std::string& label, const std::string& tail,
                              std::size_t width);

// Columns of the terminal on stderr (the COLUMNS variable, else 80, when it is
// no terminal or does not say).
std::size_t terminal_columns();

// "0:42", "12:05", "3:04:59".
std::string format_clock(double seconds);

struct ProgressTiming {
  double redraw_seconds = 1;      // the live line, on a terminal
  double heartbeat_seconds = 30;  // the longest silence without one
};

class Progress {
 public:
  Progress(std::size_t total_cases, bool interactive, std::size_t columns = terminal_columns(),
           ProgressTiming timing = {}, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void start_case(std::size_t number, const std::string& label);  // number is 1-based
  void start_implementation(const std::string& name);
  // What the implementation is doing: "set-up", "check", "warm-up 2", "sample 3 of 10-1000".
  void set_phase(const std::string& phase);
  // The running implementation is expected to take `seconds` more (an
  // estimate before its case, its checked call's time after): the ETA counts
  // it even before any case has finished, so that a run of one long case has
  // one. Until the next start_implementation or start_case.
  void expect_remaining(double seconds);
  // A line of its own, above the live line.
  void note(const std::string& text);
  void finish_case(const std::string& outcome);
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void tick();  // the thread that redraws and keeps the log alive
  void draw_live_locked();
  void print_status_locked();
  std::string counter() const;
  std::string eta() const;
  std::string activity() const;  // "cpu.flash: sample 3 of 10-1000, 0:42"

  std::size_t total_;
  bool interactive_;
  std::size_t columns_;
  ProgressTiming timing_;
  std::FILE* out_;
  std::size_t current_ = 0;
  std::size_t done_ = 0;
  std::string label_, implementation_, phase_;
  Clock::time_point start_, implementation_start_, last_line_;
  std::optional<Clock::time_point> expected_end_;  // of the running implementation, when estimated
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace attnbench
