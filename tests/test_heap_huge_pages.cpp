// heap::use_huge_pages (kv_store/heap.h): memory the heap maps after the call asks the system for
// transparent huge pages, memory mapped before it does not. Checked where it is decided, in the
// VmFlags of the mappings ("hg": madvise(MADV_HUGEPAGE)), not by whether the system then granted
// huge pages, which depends on what else the machine holds. Its own process: the setting is
// process-wide.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kv_store/heap.h"
#include "tests/skip.h"

using namespace radixkv;

namespace {

struct Mapping {
  std::uintptr_t begin = 0, end = 0;
  bool huge_pages_asked = false;  // "hg" among its VmFlags
};

// The process's mappings, from /proc/self/smaps.
std::vector<Mapping> mappings() {
  std::ifstream smaps("/proc/self/smaps");
  std::vector<Mapping> out;
  std::string line;
  while (std::getline(smaps, line)) {
    if (line.rfind("VmFlags:", 0) == 0) {
      if (!out.empty()) out.back().huge_pages_asked = line.find(" hg") != std::string::npos;
      continue;
    }
    // A mapping's first line: "begin-end perms ...", in hex; field lines start with a name.
    const std::size_t dash = line.find('-');
    const std::size_t space = line.find(' ');
    if (dash == std::string::npos || space == std::string::npos || dash > space) continue;
    const std::string begin = line.substr(0, dash), end = line.substr(dash + 1, space - dash - 1);
    if (begin.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
    out.push_back({std::stoull(begin, nullptr, 16), std::stoull(end, nullptr, 16), false});
  }
  return out;
}

// How many of `blocks` lie in mappings that asked for huge pages.
std::size_t in_huge_page_mappings(const std::vector<void*>& blocks) {
  const std::vector<Mapping> maps = mappings();
  std::size_t count = 0;
  for (void* block : blocks) {
    const auto address = reinterpret_cast<std::uintptr_t>(block);
    for (const Mapping& map : maps) {
      if (address >= map.begin && address < map.end) {
        count += map.huge_pages_asked ? 1 : 0;
        break;
      }
    }
  }
  return count;
}

// ~150 MB of node-sized blocks, written. mimalloc maps memory a segment (32 MiB) at a time, and the
// first blocks fill what is left of a segment mapped before; the rest, more than three quarters,
// come from segments mapped now.
std::vector<void*> allocate_nodes() {
  std::vector<void*> blocks(800'000);
  for (void*& block : blocks) {
    block = heap::allocate(192);
    std::memset(block, 1, 192);
  }
  return blocks;
}

bool huge_pages_never() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  return !std::getline(file, modes) || modes.find("[never]") != std::string::npos;
}

}  // namespace

TEST_CASE("use_huge_pages: memory mapped afterwards asks for huge pages, memory before does not") {
  if (heap::allocator_name() != "mimalloc") {
    CHECK_FALSE(heap::use_huge_pages(true));
    CHECK(heap::use_huge_pages(false));
    RADIXKV_SKIP("the system allocator (sanitizer build) maps its own memory");
  }
  if (huge_pages_never()) {
    CHECK_FALSE(heap::use_huge_pages(true));
    RADIXKV_SKIP("transparent huge pages are off on this machine ([never])");
  }
  // Off (the default): nothing the heap maps asks.
  const std::vector<void*> before = allocate_nodes();
  CHECK(in_huge_page_mappings(before) == 0);
  // On: the blocks allocated now come mostly from new segments (the earlier ones are still held),
  // and those ask; the earlier ones still do not.
  REQUIRE(heap::use_huge_pages(true));
  const std::vector<void*> after = allocate_nodes();
  const std::size_t huge = in_huge_page_mappings(after);
  CAPTURE(huge);
  CHECK(huge * 4 >= after.size() * 3);
  CHECK(in_huge_page_mappings(before) == 0);
  // Off again: segments mapped from now on do not ask (the on ones are still held).
  REQUIRE(heap::use_huge_pages(false));
  const std::vector<void*> last = allocate_nodes();
  CHECK(in_huge_page_mappings(last) * 4 <= last.size());
  for (const auto* set : {&before, &after, &last}) {
    for (void* block : *set) heap::release(block);
  }
}
