#include "harness/results/file_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

// Whether `name` in `directory` is the file open as `descriptor`.
bool names_descriptor(int directory, const std::string& name, int descriptor) {
  struct stat opened {}, named {};
  return fstat(descriptor, &opened) == 0 && fstatat(directory, name.c_str(), &named, 0) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

std::string last_component(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

void FileLock::refuse_symbolic_link(const std::string& name, const std::string& role) const {
  struct stat status {};
  if (fstatat(directory_, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(status.st_mode)) return;
  char target[4096];
  const ssize_t length = readlinkat(directory_, name.c_str(), target, sizeof target - 1);
  const std::string shown = (std::filesystem::path(directory_path_) / name).string();
  throw InputError(role + ": " + shown + " is a symbolic link" +
                   (length > 0 ? " to " + std::string(target, static_cast<std::size_t>(length)) : std::string()) +
                   "; attnbench never writes through a link: remove it, or name the file itself");
}

FileLock::FileLock(const std::string& target, const std::string& role)
    : target_(target), path_(lock_file_path(target)) {
  const std::filesystem::path parent = std::filesystem::path(target).parent_path();
  directory_path_ = parent.empty() ? "." : parent.string();
  directory_ = open(directory_path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat directory_status {};
  if (directory_ < 0 || fstat(directory_, &directory_status) != 0) {
    const int error = errno;
    if (directory_ >= 0) close(directory_);
    throw InputError(role + ": cannot open the directory " + directory_path_ + " (" + std::strerror(error) + ")");
  }
  directory_device_ = directory_status.st_dev;
  directory_inode_ = directory_status.st_ino;
  try {
    refuse_symbolic_link(last_component(target_), role);
  } catch (...) {
    close(directory_);
    throw;
  }
  const std::string name = last_component(path_);
  constexpr int kAttempts = 20;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    // Never through a symbolic link planted at the lock's name: its target is not touched.
    const int descriptor = openat(directory_, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (descriptor < 0) {
      const int error = errno;
      close(directory_);
      if (error == ELOOP) {
        throw InputError(role + ": the lock file " + path_ +
                         " is a symbolic link; attnbench does not follow links where it writes: remove it, or "
                         "write to another file");
      }
      throw InputError(role + ": cannot make the lock file " + path_ + " (" + std::strerror(error) + ")");
    }
    struct flock request {};
    request.l_type = F_WRLCK;
    request.l_whence = SEEK_SET;
    if (fcntl(descriptor, F_SETLK, &request) != 0) {
      const int error = errno;
      const pid_t holder = error == EACCES || error == EAGAIN ? lock_holder(descriptor) : 0;
      close(descriptor);
      if (error != EACCES && error != EAGAIN) {
        close(directory_);
        throw InputError(role + ": cannot lock " + path_ + " (" + std::strerror(error) + ")");
      }
      if (holder == 0) continue;  // released meanwhile
      close(directory_);
      throw InputError(role + ": is being written by process " + std::to_string(holder) + " (it holds " + path_ +
                       "); wait for it to finish, or write to another file");
    }
    // A releasing holder removes the lock file: whoever locked the removed one
    // must try again on the file now named.
    if (!names_descriptor(directory_, name, descriptor)) {
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
  close(directory_);
  throw InputError(role + ": could not take the lock " + path_ + " (other processes kept replacing it)");
}

FileLock::~FileLock() {
  release();
  if (directory_ >= 0) close(directory_);
}

std::string FileLock::target_name() const { return last_component(target_); }

bool FileLock::holds_lock_file() const { return names_descriptor(directory_, last_component(path_), descriptor_); }

void FileLock::release() {
  const std::lock_guard<std::mutex> guard(release_mutex_);
  if (descriptor_ < 0) return;
  // Removed while still locked, and only when the name is this lock's file:
  // after a removal of it, the name may be another writer's live lock.
  if (holds_lock_file()) unlinkat(directory_, last_component(path_).c_str(), 0);
  close(descriptor_);
  descriptor_ = -1;
}

void FileLock::check_in_place() const {
  if (descriptor_ < 0) throw OutputDisplacedError(target_, "this process no longer holds its lock " + path_);
  struct stat now {};
  if (stat(directory_path_.c_str(), &now) != 0 || now.st_dev != directory_device_ ||
      now.st_ino != directory_inode_) {
    throw OutputDisplacedError(target_, "its directory " + directory_path_ +
                                            " was deleted, moved or replaced while this process wrote it");
  }
  if (!holds_lock_file()) {
    throw OutputDisplacedError(target_, "its lock file " + path_ +
                                            " was removed or replaced while this process held it, so another "
                                            "process may be writing it");
  }
}

void FileLock::keep_across_exec() {
  const std::lock_guard<std::mutex> guard(release_mutex_);
  if (descriptor_ < 0) return;
  const int flags = fcntl(descriptor_, F_GETFD);
  if (flags >= 0) fcntl(descriptor_, F_SETFD, flags & ~FD_CLOEXEC);
  descriptor_ = -1;  // left open on purpose: closing it would release the lock
}

}  // namespace attnbench
