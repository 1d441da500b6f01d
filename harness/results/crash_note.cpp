#include "harness/results/crash_note.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/errors.hpp"
#include "harness/results/journal.hpp"

namespace attnbench {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr std::size_t kLineCapacity = 4096;

// What the handler reads: prepared while no note is armed, so it never sees
// half of it. The line is `{"crc32c":"XXXXXXXX",` + rest, rest being
// `"seq":N,"crashed":{...,"signal":` + the signal + `}}`; the checksum covers
// the run id and rest, so the handler carries the CRC of the part it knows
// and adds the signal's digits.
volatile sig_atomic_t armed = 0;
int descriptor = -1;
char rest_prefix[kLineCapacity];  // "seq":N,"crashed":{...,"signal":
std::size_t rest_prefix_length = 0;
std::uint32_t prefix_crc = 0;  // crc32c of the run id and rest_prefix
// The message to stderr: message_head + the signal's name + message_tail.
char message_head[kLineCapacity];
std::size_t message_head_length = 0;
char message_tail[kLineCapacity];
std::size_t message_tail_length = 0;
struct sigaction previous[sizeof kFatalSignals / sizeof kFatalSignals[0]];

// A fatal signal's name and what it usually means (strsignal is not
// async-signal-safe).
const char* signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV, a segmentation fault";
    case SIGBUS: return "SIGBUS, a bus error";
    case SIGILL: return "SIGILL, an illegal instruction";
    case SIGFPE: return "SIGFPE, an arithmetic error";
    case SIGABRT: return "SIGABRT, an abort";
    default: return "a fatal signal";
  }
}

// Copies `text` into `buffer` when it fits; returns its length, or 0.
std::size_t prepare(char* buffer, const std::string& text) {
  if (text.size() > kLineCapacity) return 0;
  std::memcpy(buffer, text.data(), text.size());
  return text.size();
}
bool installed = false;

// Appends `text` (of `length` bytes) to `line` at `at`; returns the new end.
std::size_t append(char* line, std::size_t at, const char* text, std::size_t length) {
  std::memcpy(line + at, text, length);
  return at + length;
}

void on_fatal_signal(int signal) {
  if (armed) {
    armed = 0;
    char digits[12];
    std::size_t count = 0;
    for (int value = signal; value > 0 || count == 0; value /= 10) digits[count++] = static_cast<char>('0' + value % 10);
    char tail[16];  // the digits in order, then }}
    std::size_t tail_length = 0;
    while (count > 0) tail[tail_length++] = digits[--count];
    tail[tail_length++] = '}';
    tail[tail_length++] = '}';
    const std::uint32_t checksum = crc32c(std::string_view(tail, tail_length), prefix_crc);
    char hex[8];
    for (int i = 0; i < 8; ++i) hex[i] = "0123456789abcdef"[(checksum >> (28 - 4 * i)) & 15];
    char line[kLineCapacity + 64];
    std::size_t length = append(line, 0, "{\"crc32c\":\"", 11);
    length = append(line, length, hex, 8);
    length = append(line, length, "\",", 2);
    length = append(line, length, rest_prefix, rest_prefix_length);
    length = append(line, length, tail, tail_length);
    line[length++] = '\n';
    const ssize_t written = write(descriptor, line, length);
    static_cast<void>(written);
    if (message_head_length > 0 && message_tail_length > 0) {
      const char* name = signal_name(signal);
      const ssize_t parts[] = {write(STDERR_FILENO, message_head, message_head_length),
                               write(STDERR_FILENO, name, std::strlen(name)),
                               write(STDERR_FILENO, message_tail, message_tail_length)};
      static_cast<void>(parts);
    }
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

CrashNote::CrashNote(int journal_descriptor, const std::string& run_id, std::uint64_t seq,
                     const std::string& scenario, const std::string& case_key, const std::string& implementation,
                     const std::string& results_path)
    : descriptor_(journal_descriptor),
      run_id_(run_id),
      scenario_(scenario),
      case_key_(case_key),
      implementation_(implementation),
      results_path_(results_path),
      seq_(seq) {
  install_handlers();
  const std::string entry = nlohmann::ordered_json{{"seq", seq},
                                                   {"crashed", {{"scenario", scenario},
                                                                {"case_key", case_key},
                                                                {"implementation", implementation},
                                                                {"signal", 0}}}}
                                .dump();
  // After the opening brace, up to "signal": (without its 0}}).
  const std::string rest = entry.substr(1, entry.size() - 1 - 3);
  armed = 0;
  if (rest.size() > kLineCapacity) return;  // names too long to note: the case runs again on resume
  std::memcpy(rest_prefix, rest.data(), rest.size());
  rest_prefix_length = rest.size();
  prefix_crc = crc32c(rest, crc32c(run_id));
  descriptor = journal_descriptor;
  message_head_length = prepare(message_head, "\nattnbench: " + implementation + " crashed the process in case " +
                                                  scenario + "/" + case_key + " (");
  message_tail_length =
      prepare(message_tail, "). The cases finished before it are saved in " + journal_path(results_path) +
                                "; go on with the same command and -o " + results_path +
                                " --resume: this case is then recorded as failed and the run continues with the "
                                "next.\n");
  armed = 1;
}

CrashNote::~CrashNote() { armed = 0; }

void CrashNote::note_timeout(double limit_seconds) {
  armed = 0;
  const std::string line =
      journal_line(nlohmann::ordered_json{{"seq", seq_},
                                          {"crashed", {{"scenario", scenario_},
                                                       {"case_key", case_key_},
                                                       {"implementation", implementation_},
                                                       {"timeout_seconds", limit_seconds}}}},
                   run_id_);
  if (write(descriptor_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      fdatasync(descriptor_) != 0) {
    throw FileWriteError(journal_path(results_path_), std::strerror(errno));
  }
}

}  // namespace attnbench
