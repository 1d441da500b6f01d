#include "harness/results/crash_note.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

namespace attnbench {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr std::size_t kLineCapacity = 4096;

// What the handler reads: prepared while no note is armed, so it never sees half of it.
volatile sig_atomic_t armed = 0;
int descriptor = -1;
char line_prefix[kLineCapacity];  // {"crashed":{...,"signal":
std::size_t prefix_length = 0;
struct sigaction previous[sizeof kFatalSignals / sizeof kFatalSignals[0]];
bool installed = false;

void on_fatal_signal(int signal) {
  if (armed) {
    armed = 0;
    char line[kLineCapacity + 16];
    std::memcpy(line, line_prefix, prefix_length);
    std::size_t length = prefix_length;
    char digits[12];
    int count = 0;
    for (int value = signal; value > 0 || count == 0; value /= 10) digits[count++] = static_cast<char>('0' + value % 10);
    while (count > 0) line[length++] = digits[--count];
    line[length++] = '}';
    line[length++] = '}';
    line[length++] = '\n';
    const ssize_t written = write(descriptor, line, length);
    static_cast<void>(written);
  }
  for (std::size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
    if (kFatalSignals[i] == signal) sigaction(signal, &previous[i], nullptr);
  }
  raise(signal);  // delivered when this handler returns, with the earlier action
}

void install_handlers() {
  if (installed) return;
  installed = true;
  // An alternate stack, so that a stack overflow in the main thread is noted too.
  static char alternate_stack[1 << 16];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof alternate_stack;
  sigaltstack(&stack, nullptr);
  struct sigaction action{};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
    sigaction(kFatalSignals[i], &action, &previous[i]);
  }
}

}  // namespace

CrashNote::CrashNote(int journal_descriptor, const std::string& scenario, const std::string& case_key,
                     const std::string& implementation) {
  install_handlers();
  std::string prefix = nlohmann::ordered_json{{"scenario", scenario},
                                              {"case_key", case_key},
                                              {"implementation", implementation},
                                              {"signal", 0}}
                           .dump();
  prefix = "{\"crashed\":" + prefix.substr(0, prefix.size() - 2);  // up to "signal":, without 0}
  armed = 0;
  if (prefix.size() > kLineCapacity) return;  // names too long to note: the case runs again on resume
  std::memcpy(line_prefix, prefix.data(), prefix.size());
  prefix_length = prefix.size();
  descriptor = journal_descriptor;
  armed = 1;
}

CrashNote::~CrashNote() { armed = 0; }

}  // namespace attnbench
