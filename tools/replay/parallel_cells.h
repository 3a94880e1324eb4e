// Runs the independent cells of a sweep (capacities x policies x host tiers) on several threads.
//
// Cells share nothing but read-only inputs (the trace, a Belady index): each builds its own pool,
// tree and policy, so a cell's result does not depend on which thread ran it or when. Results go
// to the cell's own slot, so the caller prints them in cell order whatever order they ran and
// finished in. On several threads an exception thrown by a cell (out of memory, a bad policy)
// stops no other cell; once all have ended, the first failed cell's exception (in cell order, not
// in the order they ran) is rethrown on the caller's thread. On one, cells run in the given order
// and the first exception ends the run.
//
// Scheduling: the threads share one queue, `order`, and each takes its next cell from the front
// as soon as it is free. Given longest_first(), the cells that take longest start first and the
// short ones fill in at the end, so the threads finish close together instead of one thread
// running a long cell alone at the end (the longest-processing-time rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace radixkv::tools {

// The indices of `expected_work` ordered by it, largest first; equal work keeps index order.
std::vector<std::size_t> longest_first(std::span<const uint64_t> expected_work);

// Calls cell(i) once for every i in `order` (a permutation of [0, order.size())), on
// min(jobs, order.size()) threads that take cells from `order` front to back (jobs 0 or 1: in
// that order, on the calling thread).
void run_cells(std::span<const std::size_t> order, unsigned jobs,
               const std::function<void(std::size_t)>& cell);

// The default --jobs: the machine's cores (1 when the library cannot tell).
unsigned default_jobs();

}  // namespace radixkv::tools
