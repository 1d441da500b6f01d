#include "harness/run/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "harness/measure/openmp_threads.hpp"

namespace attnbench {

std::string fit_progress_line(const std::string& head, const std::string& label, const std::string& tail,
                              std::size_t width) {
  const std::size_t room = width > 1 ? width - 1 : 0;  // the last column would make some terminals wrap
  if (head.size() + label.size() + tail.size() <= room) return head + label + tail;
  const std::string ellipsis = "...";
  if (head.size() + ellipsis.size() + tail.size() <= room) {
    return head + label.substr(0, room - head.size() - ellipsis.size() - tail.size()) + ellipsis + tail;
  }
  return (head + tail).substr(0, room);
}

std::size_t terminal_columns() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    const long value = std::strtol(columns, nullptr, 10);
    if (value > 0) return static_cast<std::size_t>(value);
  }
  return 80;
}

std::string format_clock(double seconds) {
  const long total = seconds > 0 ? static_cast<long>(seconds) : 0;
  char buffer[32];
  if (total >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", total / 60, total % 60);
  }
  return buffer;
}

Progress::Progress(std::size_t total_cases, bool interactive, std::size_t columns, ProgressTiming timing,
                   std::FILE* out)
    : total_(total_cases),
      interactive_(interactive),
      columns_(columns),
      timing_(timing),
      out_(out),
      start_(Clock::now()),
      implementation_start_(start_),
      last_line_(start_),
      ticker_(start_named_thread("progress", [this] { tick(); })) {}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  ticker_.join();
}

void Progress::tick() {
  const double period = interactive_ ? timing_.redraw_seconds : std::min(timing_.redraw_seconds, timing_.heartbeat_seconds);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::duration<double>(period));
    if (stopping_ || implementation_.empty()) continue;
    if (interactive_) {
      draw_live_locked();
    } else if (std::chrono::duration<double>(Clock::now() - last_line_).count() >= timing_.heartbeat_seconds) {
      print_status_locked();
    }
  }
}

std::string Progress::counter() const {
  return "[" + std::to_string(current_) + "/" + std::to_string(total_) + "] ";
}

std::string Progress::eta() const {
  const Clock::time_point now = Clock::now();
  const double per_case = done_ == 0 ? 0 : std::chrono::duration<double>(now - start_).count() / static_cast<double>(done_);
  if (!expected_end_) {
    if (done_ == 0) return "ETA --";
    return "ETA " + format_clock(per_case * static_cast<double>(total_ - done_));
  }
  // The running implementation's remaining time, then the cases after this one
  // at the finished cases' average; a ">" where later cases have no average yet.
  const double running = std::max(0.0, std::chrono::duration<double>(*expected_end_ - now).count());
  const std::size_t later = total_ > current_ ? total_ - current_ : 0;
  const bool unknown_rest = later > 0 && done_ == 0;
  return std::string("ETA ") + (unknown_rest ? ">" : "") + format_clock(running + per_case * static_cast<double>(later));
}

std::string Progress::activity() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - implementation_start_).count();
  return implementation_ + (phase_.empty() ? "" : ": " + phase_) + ", " + format_clock(elapsed);
}

void Progress::draw_live_locked() {
  const std::string tail = implementation_.empty() ? "  " + eta() : "  " + activity() + "  " + eta();
  std::fprintf(out_, "\r\033[K%s", fit_progress_line(counter(), label_, tail, columns_).c_str());
  std::fflush(out_);
}

void Progress::print_status_locked() {
  const std::string eta_text = expected_end_ ? ", " + eta() : "";
  std::fprintf(out_, "%s%s  %s elapsed%s\n", counter().c_str(), label_.c_str(), activity().c_str(), eta_text.c_str());
  std::fflush(out_);
  last_line_ = Clock::now();
}

void Progress::start_case(std::size_t number, const std::string& label) {
  std::lock_guard<std::mutex> guard(mutex_);
  current_ = number;
  label_ = label;
  implementation_.clear();
  phase_.clear();
  expected_end_.reset();
  if (interactive_) draw_live_locked();
}

void Progress::start_implementation(const std::string& name) {
  std::lock_guard<std::mutex> guard(mutex_);
  implementation_ = name;
  phase_ = "set-up";
  implementation_start_ = Clock::now();
  expected_end_.reset();
  if (interactive_) draw_live_locked();
}

void Progress::expect_remaining(double seconds) {
  std::lock_guard<std::mutex> guard(mutex_);
  expected_end_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void Progress::set_phase(const std::string& phase) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (phase == phase_) return;
  phase_ = phase;
  // Redrawn by the ticker: a phase may change every microsecond.
}

void Progress::note(const std::string& text) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (interactive_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", text.c_str());
  last_line_ = Clock::now();
  if (interactive_) draw_live_locked();
  std::fflush(out_);
}

void Progress::finish_case(const std::string& outcome) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++done_;
  implementation_.clear();
  if (!interactive_) {
    std::fprintf(out_, "%s%s  %s\n", counter().c_str(), label_.c_str(), outcome.c_str());
    std::fflush(out_);
    last_line_ = Clock::now();
  }
}

void Progress::finish() {
  std::lock_guard<std::mutex> guard(mutex_);
  implementation_.clear();
  if (interactive_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
}

}  // namespace attnbench
