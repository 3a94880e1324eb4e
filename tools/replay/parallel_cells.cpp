#include "tools/replay/parallel_cells.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace radixkv::tools {

void run_cells(std::size_t count, unsigned jobs, const std::function<void(std::size_t)>& cell) {
  if (jobs <= 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i) cell(i);
    return;
  }
  std::vector<std::exception_ptr> failures(count);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    // Cells are taken in order, so the longest-running ones do not all wait for the end.
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        cell(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  std::vector<std::jthread> threads;
  const std::size_t helpers = std::min<std::size_t>(jobs, count) - 1;
  for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();           // the calling thread is one of the jobs
  threads.clear();  // joins
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace radixkv::tools
