#include "tools/replay/parallel_cells.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <numeric>
#include <thread>

namespace radixkv::tools {

std::vector<std::size_t> longest_first(std::span<const uint64_t> expected_work) {
  std::vector<std::size_t> order(expected_work.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return expected_work[a] > expected_work[b];
  });
  return order;
}

void run_cells(std::span<const std::size_t> order, unsigned jobs,
               const std::function<void(std::size_t)>& cell) {
  const std::size_t count = order.size();
  if (jobs <= 1 || count <= 1) {
    for (const std::size_t i : order) cell(i);
    return;
  }
  std::vector<std::exception_ptr> failures(count);  // by cell index
  std::atomic<std::size_t> next{0};                 // position in `order`
  const auto work = [&] {
    for (std::size_t k = next++; k < count; k = next++) {
      const std::size_t i = order[k];
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
