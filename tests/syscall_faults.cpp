// A test-only LD_PRELOAD library that watches the file system calls of the
// attnbench binary, to reproduce the crash windows of its results writing at
// a chosen system call, with no tracer (tests/test_cli_results_faults.cpp and
// scripts/fault_campaign.py load it; it is never part of the tool).
//
//   ATTNBENCH_FAULTS_LOG=FILE     appends one line per call:
//                                 "open PATH" (an open that may create it),
//                                 "rename FROM TO", "unlink PATH", "fsync PATH",
//                                 "fdatasync PATH"
//   ATTNBENCH_FAULTS_SIGNAL=CALL:SUFFIX:N:SIGNAL
//                                 before the N-th CALL (write, fsync, fdatasync,
//                                 rename, unlink (and remove), open) on a path
//                                 ending in
//                                 SUFFIX, the process sends itself SIGNAL (a
//                                 number: 9 kills it there, 2 interrupts it);
//                                 for rename the path is the new name; %p in
//                                 SUFFIX stands for the process id
//   ATTNBENCH_FAULTS_NO_SPACE=PREFIX
//                                 an open that may create a file whose name
//                                 (last component) starts with PREFIX fails
//                                 with ENOSPC, as on a full disk
//
// Paths are absolute (a descriptor's from /proc/self/fd). Each function calls
// the C library's own through dlsym(RTLD_NEXT).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

template <class Function>
Function real(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

std::string descriptor_path(int descriptor) {
  if (descriptor == AT_FDCWD) {
    char buffer[4096];
    return getcwd(buffer, sizeof buffer) ? buffer : "";
  }
  char link[64], target[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
  const ssize_t length = readlink(link, target, sizeof target - 1);
  return length > 0 ? std::string(target, static_cast<std::size_t>(length)) : std::string();
}

std::string absolute(int directory, const char* path) {
  if (!path) return "";
  if (path[0] == '/') return path;
  return descriptor_path(directory) + "/" + path;
}

// ATTNBENCH_FAULTS_SIGNAL, parsed once.
struct SignalAt {
  std::string call, suffix;
  long nth = 0;
  int signal = 0;
  std::atomic<long> seen{0};
};

SignalAt* signal_at() {
  static SignalAt* parsed = [] {
    const char* text = std::getenv("ATTNBENCH_FAULTS_SIGNAL");
    if (!text) return static_cast<SignalAt*>(nullptr);
    auto* at = new SignalAt;
    std::string fields[4];
    std::size_t field = 0;
    for (const char* c = text; *c && field < 4; ++c) {
      if (*c == ':') {
        ++field;
      } else {
        fields[field] += *c;
      }
    }
    at->call = fields[0];
    at->suffix = fields[1];
    if (const std::size_t pid = at->suffix.find("%p"); pid != std::string::npos) {
      at->suffix.replace(pid, 2, std::to_string(getpid()));
    }
    at->nth = std::atol(fields[2].c_str());
    at->signal = std::atoi(fields[3].c_str());
    return at;
  }();
  return parsed;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Logs `call` on `path` (and `second`) and sends the signal when this is the call asked for.
void observe(const char* call, const std::string& path, const std::string& second = "") {
  if (const char* log = std::getenv("ATTNBENCH_FAULTS_LOG")) {
    const std::string line = std::string(call) + " " + path + (second.empty() ? "" : " " + second) + "\n";
    const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    const int descriptor = static_cast<int>(syscall(SYS_openat, AT_FDCWD, log, flags, 0644));
    if (descriptor >= 0) {
      const long written = syscall(SYS_write, descriptor, line.data(), line.size());
      static_cast<void>(written);
      syscall(SYS_close, descriptor);
    }
  }
  SignalAt* at = signal_at();
  const std::string& target = second.empty() ? path : second;
  if (at && at->call == call && ends_with(target, at->suffix) && ++at->seen == at->nth) kill(getpid(), at->signal);
}

bool watched(const char* call) {
  SignalAt* at = signal_at();
  return std::getenv("ATTNBENCH_FAULTS_LOG") || (at && at->call == call);
}

// Whether an open may create a file: O_CREAT, or O_TMPFILE (a file with no name).
bool creates(int flags) { return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE; }

}  // namespace

extern "C" {

ssize_t write(int descriptor, const void* data, size_t size) {
  static const auto next = real<ssize_t (*)(int, const void*, size_t)>("write");
  SignalAt* at = signal_at();
  if (at && at->call == "write") observe("write", descriptor_path(descriptor));
  return next(descriptor, data, size);
}

int fsync(int descriptor) {
  static const auto next = real<int (*)(int)>("fsync");
  if (watched("fsync")) observe("fsync", descriptor_path(descriptor));
  return next(descriptor);
}

int fdatasync(int descriptor) {
  static const auto next = real<int (*)(int)>("fdatasync");
  if (watched("fdatasync")) observe("fdatasync", descriptor_path(descriptor));
  return next(descriptor);
}

int rename(const char* from, const char* to) {
  static const auto next = real<int (*)(const char*, const char*)>("rename");
  if (watched("rename")) observe("rename", absolute(AT_FDCWD, from), absolute(AT_FDCWD, to));
  return next(from, to);
}

int renameat(int from_directory, const char* from, int to_directory, const char* to) {
  static const auto next = real<int (*)(int, const char*, int, const char*)>("renameat");
  if (watched("rename")) observe("rename", absolute(from_directory, from), absolute(to_directory, to));
  return next(from_directory, from, to_directory, to);
}

int unlink(const char* path) {
  static const auto next = real<int (*)(const char*)>("unlink");
  if (watched("unlink")) observe("unlink", absolute(AT_FDCWD, path));
  return next(path);
}

int remove(const char* path) {  // std::filesystem::remove's way to unlink
  static const auto next = real<int (*)(const char*)>("remove");
  if (watched("unlink")) observe("unlink", absolute(AT_FDCWD, path));
  return next(path);
}

int unlinkat(int directory, const char* path, int flags) {
  static const auto next = real<int (*)(int, const char*, int)>("unlinkat");
  if (watched("unlink")) observe("unlink", absolute(directory, path));
  return next(directory, path, flags);
}

// Opens that may create a file are logged.
int open_logged(int directory, const char* path, int flags, mode_t mode) {
  static const auto next = real<int (*)(int, const char*, int, ...)>("openat");
  if (creates(flags) && watched("open")) {
    const bool unnamed = (flags & O_TMPFILE) == O_TMPFILE;
    observe("open", absolute(directory, path) + (unnamed ? " (O_TMPFILE)" : ""));
  }
  if (const char* prefix = std::getenv("ATTNBENCH_FAULTS_NO_SPACE"); prefix && creates(flags) && path) {
    const char* slash = std::strrchr(path, '/');
    if (std::strncmp(slash ? slash + 1 : path, prefix, std::strlen(prefix)) == 0) {
      errno = ENOSPC;
      return -1;
    }
  }
  return next(directory, path, flags, mode);
}

int openat(int directory, const char* path, int flags, ...) {
  va_list arguments;
  va_start(arguments, flags);
  const mode_t mode = creates(flags) ? static_cast<mode_t>(va_arg(arguments, int)) : 0;
  va_end(arguments);
  return open_logged(directory, path, flags, mode);
}

int open(const char* path, int flags, ...) {
  va_list arguments;
  va_start(arguments, flags);
  const mode_t mode = creates(flags) ? static_cast<mode_t>(va_arg(arguments, int)) : 0;
  va_end(arguments);
  return open_logged(AT_FDCWD, path, flags, mode);
}

int open64(const char* path, int flags, ...) __attribute__((alias("open")));
int openat64(int directory, const char* path, int flags, ...) __attribute__((alias("openat")));

}  // extern "C"
