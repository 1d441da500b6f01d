// A switch of the simulator that a variable of the environment sets for a run
// and a test may set: on or off by default, turned the other way when the
// variable says so ("0" or "off" for a switch that is on by default, "1" or
// "on" for one that is off). The variable is read once, at the first question.
#pragma once

#include <atomic>
#include <cstdlib>
#include <string>

namespace cudasim {

class EnvironmentSwitch {
 public:
  EnvironmentSwitch(const char* variable, bool on_by_default) : variable_(variable), default_(on_by_default) {}

  bool enabled() {
    int setting = setting_.load(std::memory_order_relaxed);
    if (setting < 0) {
      const char* value = std::getenv(variable_);
      const std::string text = value ? value : "";
      const bool turned = default_ ? (text == "0" || text == "off") : (text == "1" || text == "on");
      setting = default_ != turned ? 1 : 0;
      setting_.store(setting);
    }
    return setting == 1;
  }
  void set(bool enabled) { setting_.store(enabled ? 1 : 0); }

 private:
  const char* variable_;
  bool default_;
  std::atomic<int> setting_{-1};  // -1: not decided yet
};

}  // namespace cudasim
