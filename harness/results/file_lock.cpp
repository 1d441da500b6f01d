#include "harness/results/file_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/errors.hpp"

namespace attnbench {

std::string lock_file_path(const std::string& target) { return target + ".lock"; }

namespace {

// The process holding a write lock on `descriptor`'s file, or 0 when none does.
pid_t lock_holder(int descriptor) {
  struct flock query {};
  query.l_type = F_WRLCK;
  query.l_whence = SEEK_SET;
  if (fcntl(descriptor, F_GETLK, &query) != 0 || query.l_type == F_UNLCK) return 0;
  return query.l_pid;
}

// Whether `descriptor` is still the file named `path` (a releasing holder
// removes the lock file; whoever locked the removed one must try again).
bool still_named(int descriptor, const std::string& path) {
  struct stat opened {}, named {};
  return fstat(descriptor, &opened) == 0 && stat(path.c_str(), &named) == 0 && opened.st_dev == named.st_dev &&
         opened.st_ino == named.st_ino;
}

}  // namespace

FileLock::FileLock(const std::string& target, const std::string& role) : path_(lock_file_path(target)) {
  constexpr int kAttempts = 20;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const int descriptor = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (descriptor < 0) {
      throw InputError(role + ": cannot make the lock file " + path_ + " (" + std::strerror(errno) + ")");
    }
    struct flock request {};
    request.l_type = F_WRLCK;
    request.l_whence = SEEK_SET;
    if (fcntl(descriptor, F_SETLK, &request) != 0) {
      const int error = errno;
      const pid_t holder = error == EACCES || error == EAGAIN ? lock_holder(descriptor) : 0;
      close(descriptor);
      if (error != EACCES && error != EAGAIN) {
        throw InputError(role + ": cannot lock " + path_ + " (" + std::strerror(error) + ")");
      }
      if (holder == 0) continue;  // released meanwhile
      throw InputError(role + ": is being written by process " + std::to_string(holder) + " (it holds " + path_ +
                       "); wait for it to finish, or write to another file");
    }
    if (!still_named(descriptor, path_)) {
      close(descriptor);
      continue;
    }
    // The process id is for people; the lock is held whether or not it is written.
    const std::string pid = std::to_string(getpid()) + "\n";
    const bool noted = ftruncate(descriptor, 0) == 0 && write(descriptor, pid.data(), pid.size()) > 0;
    static_cast<void>(noted);
    descriptor_ = descriptor;
    return;
  }
  throw InputError(role + ": could not take the lock " + path_ + " (other processes kept replacing it)");
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (descriptor_ < 0) return;
  unlink(path_.c_str());
  close(descriptor_);
  descriptor_ = -1;
}

void FileLock::keep_across_exec() {
  if (descriptor_ < 0) return;
  const int flags = fcntl(descriptor_, F_GETFD);
  if (flags >= 0) fcntl(descriptor_, F_SETFD, flags & ~FD_CLOEXEC);
  descriptor_ = -1;  // left open on purpose: closing it would release the lock
}

}  // namespace attnbench
