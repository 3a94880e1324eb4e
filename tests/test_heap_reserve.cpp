// heap::reserve (kv_store/heap.h): memory handed out after a reservation was faulted in ahead of
// use, so the thread that writes it first takes almost no page faults. Its own process: a
// reservation lasts as long as the process.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "kv_store/heap.h"
#include "tests/skip.h"

using namespace radixkv;

namespace {

// Minor faults of the calling thread so far.
long thread_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// Resident bytes of the process (/proc/self/statm).
long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Faults taken while `blocks` tree-sized blocks are allocated and written, then freed.
long faults_to_fill(std::size_t blocks) {
  std::vector<void*> held(blocks);
  const long before = thread_faults();
  for (void*& block : held) {
    block = heap::allocate(96);  // about a node with its arrays
    std::memset(block, 1, 96);
  }
  const long taken = thread_faults() - before;
  for (void* block : held) heap::release(block);
  return taken;
}

}  // namespace

TEST_CASE("reserve: what a tree allocates afterwards is already faulted in") {
  if (heap::allocator_name() != "mimalloc") {
    CHECK_FALSE(heap::reserve(std::size_t{1} << 20));
    RADIXKV_SKIP("the system allocator (sanitizer build) reserves nothing");
  }
  // Before anything else in this process allocates from the heap, so that mimalloc has no
  // segment of its own yet to fill first.
  const std::size_t bytes = std::size_t{128} << 20;
  REQUIRE(heap::reserve(bytes, heap::FaultIn::kNow));
  CHECK(heap::reserved_bytes() == bytes);
  // ~38 MB in blocks the size of a node: ~9,400 pages of 4 KiB, each a fault when fresh (about
  // 9,500 faults measured without the reservation).
  constexpr std::size_t kBlocks = 400'000;
  const long pages = static_cast<long>(kBlocks * 96 / 4096);
  const long faults = faults_to_fill(kBlocks);
  CAPTURE(faults);
  CHECK(faults * 10 < pages);
  // The reservation only grows: asking for less sets nothing more aside.
  REQUIRE(heap::reserve(bytes / 2));
  CHECK(heap::reserved_bytes() == bytes);

  // Ahead of use, not all at once: 384 MiB more, with nothing allocated, gets about kReserveLead
  // faulted in by the thread (waited for up to 10 s on a busy machine), and no more.
  const long before = resident_bytes();
  REQUIRE(heap::reserve(bytes * 4));
  CHECK(heap::reserved_bytes() == bytes * 4);
  const auto lead = static_cast<long>(heap::kReserveLead);
  for (int wait = 0; wait < 1000 && resident_bytes() - before < lead / 2; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // time to overrun, were it to
  const long grown = resident_bytes() - before;
  CAPTURE(grown);
  CHECK(grown >= lead / 2);
  CHECK(grown < 2 * lead);
}
