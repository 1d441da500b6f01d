#include "progress.hpp"

#include <cstdio>

namespace attnbench {

Progress::Progress(std::size_t total_cases, bool interactive)
    : total_(total_cases), interactive_(interactive), start_(std::chrono::steady_clock::now()) {}

std::string Progress::eta() const {
  if (done_ == 0) return "ETA --";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const auto remaining = static_cast<long>(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "ETA %ld:%02ld", remaining / 60, remaining % 60);
  return buffer;
}

void Progress::draw(const std::string& text) {
  if (interactive_) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void Progress::start_case(std::size_t number, const std::string& label) {
  current_ = number;
  label_ = label;
  if (interactive_) draw("[" + std::to_string(number) + "/" + std::to_string(total_) + "] " + label + "  " + eta());
}

void Progress::start_implementation(const std::string& name) {
  if (interactive_) {
    draw("[" + std::to_string(current_) + "/" + std::to_string(total_) + "] " + label_ + "  " + name + "  " + eta());
  }
}

void Progress::finish_case(const std::string& outcome) {
  ++done_;
  if (!interactive_) {
    draw("[" + std::to_string(current_) + "/" + std::to_string(total_) + "] " + label_ + "  " + outcome);
  }
}

void Progress::finish() {
  if (interactive_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace attnbench
