// One writer per output: an exclusive lock on a lock file beside the file it
// protects (TARGET.lock), taken with fcntl(F_SETLK) before anything is written,
// so a second writer is refused at once, naming the process that holds it.
// The lock file holds the holder's process id for people; the kernel's lock is
// what counts, so a lock file left by a killed process is simply taken over.
// The lock belongs to the process: it survives an exec of the same process
// (the restart after a lost device context) when keep_across_exec() is called.
//
// The lock also pins the place: the directory TARGET is in is opened when the
// lock is taken, and every file written under the lock is made relative to
// that directory (write_file_atomically(const FileLock&, ...), the journal).
// Should the directory be deleted, moved or replaced, or the lock file be
// removed, while the lock is held, another process may take a fresh lock on the
// same name: check_in_place() says so (OutputDisplacedError) before each write,
// and nothing is ever written into a directory made later under the old name.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>

#include "harness/errors.hpp"

namespace attnbench {

// The output is no longer where its lock was taken: its directory was deleted,
// moved or replaced, or its lock file was removed or replaced (exit code 4).
class OutputDisplacedError : public FileWriteError {
 public:
  using FileWriteError::FileWriteError;
};

class FileLock {
 public:
  // Takes the lock of `target`. Throws InputError naming `role` (how the user
  // gave the file, e.g. "-o out.json"), the lock file and the holder's process
  // id when another process holds it, and InputError when the directory cannot
  // be opened, the lock file cannot be made, or the target or its lock file is
  // a symbolic link (attnbench never writes through one).
  FileLock(const std::string& target, const std::string& role);
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Releases the lock (unless kept across exec), as release() does.
  ~FileLock();

  // Keeps the lock through an exec() of this process: the descriptor stays open
  // in the new program, which then takes the lock again as its holder.
  void keep_across_exec();

  // Releases the lock now. The lock file is removed only while it is still the
  // file this process locked: a lock file that another process made (after
  // this one's was removed) is never touched. Safe to call from two threads.
  void release();

  // Throws OutputDisplacedError (naming the target) when the target's directory
  // is no longer the one opened with the lock, or the lock file is no longer
  // the one locked.
  void check_in_place() const;

  const std::string& path() const { return path_; }      // TARGET.lock as given
  const std::string& target() const { return target_; }  // TARGET as given
  std::string target_name() const;                       // TARGET's last component
  int directory() const { return directory_; }           // TARGET's directory, opened with the lock

  // Throws InputError naming `role` when `name` in the target's directory is a
  // symbolic link (a file attnbench would write there, e.g. the journal).
  void refuse_symbolic_link(const std::string& name, const std::string& role) const;

 private:
  bool holds_lock_file() const;  // the name TARGET.lock still names the locked file

  std::string target_;
  std::string path_;
  std::string directory_path_;
  int directory_ = -1;
  dev_t directory_device_ = 0;
  ino_t directory_inode_ = 0;
  int descriptor_ = -1;
  std::mutex release_mutex_;
};

std::string lock_file_path(const std::string& target);  // TARGET.lock

}  // namespace attnbench
