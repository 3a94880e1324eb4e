// Runs the independent cells of a sweep (capacities x policies x host tiers) on several threads.
//
// Cells share nothing but read-only inputs (the trace, a Belady index): each builds its own pool,
// tree and policy, so a cell's result does not depend on which thread ran it or when. Results go
// to the cell's own slot, so the caller prints them in cell order whatever order they finished
// in. On several threads an exception thrown by a cell (out of memory, a bad policy) stops no other
// cell; once all have ended, the first failed cell's exception (in cell order) is rethrown on the
// caller's thread. On one, cells run in order and the first exception ends the run.
#pragma once

#include <cstddef>
#include <functional>

namespace radixkv::tools {

// Calls cell(i) for every i in [0, count), on min(jobs, count) threads (jobs 0 or 1: in order, on
// the calling thread).
void run_cells(std::size_t count, unsigned jobs, const std::function<void(std::size_t)>& cell);

// The default --jobs: the machine's cores (1 when the library cannot tell).
unsigned default_jobs();

}  // namespace radixkv::tools
