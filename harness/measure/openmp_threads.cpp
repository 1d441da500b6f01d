#include "harness/measure/openmp_threads.hpp"

#include <omp.h>
#include <pthread.h>

#include <filesystem>
#include <iterator>
#include <utility>
#include <system_error>

namespace attnbench {

void release_idle_openmp_threads() { omp_pause_resource_all(omp_pause_soft); }

int process_thread_count() {
  std::error_code error;
  const std::filesystem::directory_iterator tasks("/proc/self/task", error);
  if (error) return 0;
  return static_cast<int>(std::distance(tasks, std::filesystem::directory_iterator{}));
}

std::thread start_named_thread(const char* name, std::function<void()> function) {
  char creator[16] = {};
  pthread_getname_np(pthread_self(), creator, sizeof creator);
  pthread_setname_np(pthread_self(), name);
  std::thread thread(std::move(function));
  pthread_setname_np(pthread_self(), creator);
  return thread;
}

}  // namespace attnbench
