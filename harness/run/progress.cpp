#include "harness/run/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

Progress::Progress(std::size_t total_cases, bool interactive, std::size_t columns)
    : total_(total_cases), interactive_(interactive), columns_(columns), start_(std::chrono::steady_clock::now()) {}

std::string Progress::counter() const {
  return "[" + std::to_string(current_) + "/" + std::to_string(total_) + "] ";
}

std::string Progress::eta() const {
  if (done_ == 0) return "ETA --";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const auto remaining = static_cast<long>(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "ETA %ld:%02ld", remaining / 60, remaining % 60);
  return buffer;
}

void Progress::draw_live(const std::string& tail) {
  std::fprintf(stderr, "\r\033[K%s", fit_progress_line(counter(), label_, tail, columns_).c_str());
  std::fflush(stderr);
}

void Progress::start_case(std::size_t number, const std::string& label) {
  current_ = number;
  label_ = label;
  if (interactive_) draw_live("  " + eta());
}

void Progress::start_implementation(const std::string& name) {
  if (interactive_) draw_live("  " + name + "  " + eta());
}

void Progress::finish_case(const std::string& outcome) {
  ++done_;
  if (!interactive_) {
    std::fprintf(stderr, "%s%s  %s\n", counter().c_str(), label_.c_str(), outcome.c_str());
    std::fflush(stderr);
  }
}

void Progress::finish() {
  if (interactive_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace attnbench
