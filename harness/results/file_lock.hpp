// One writer per output: an exclusive lock on a lock file beside the file it
// protects (TARGET.lock), taken with fcntl(F_SETLK) before anything is written,
// so a second writer is refused at once, naming the process that holds it.
// The lock file holds the holder's process id for people; the kernel's lock is
// what counts, so a lock file left by a killed process is simply taken over.
// The lock belongs to the process: it survives an exec of the same process
// (the restart after a lost device context) when keep_across_exec() is called.
#pragma once

#include <string>

namespace attnbench {

class FileLock {
 public:
  // Takes the lock of `target`. Throws InputError naming `role` (how the user
  // gave the file, e.g. "-o out.json"), the lock file and the holder's process
  // id when another process holds it, and InputError when the lock file cannot
  // be made.
  FileLock(const std::string& target, const std::string& role);
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Removes the lock file and releases the lock (unless kept across exec).
  ~FileLock();

  // Keeps the lock through an exec() of this process: the descriptor stays open
  // in the new program, which then takes the lock again as its holder.
  void keep_across_exec();

  // Removes the lock file and releases the lock now.
  void release();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int descriptor_ = -1;
};

std::string lock_file_path(const std::string& target);  // TARGET.lock

}  // namespace attnbench
