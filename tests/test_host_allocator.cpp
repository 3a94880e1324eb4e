// The host keeps its allocator (issue 13). This program is linked the way an engine links radixkv
// (radixkv::radixkv, nothing else of radixkv's), and its malloc, free, operator new and operator
// delete must be the C and C++ runtime libraries' own, while radixkv's metadata heap is mimalloc
// (the system allocator in sanitizer builds). Before kv_store/heap.h's shared-library scheme,
// linking radixkv put Debian's libmimalloc.so among the program's direct dependencies, and every
// one of these resolved to mimalloc.
#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

#include "kv_store/heap.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/skip.h"

namespace {

// The file name of the shared object that defines `address`.
std::string library_of(const void* address) {
  Dl_info info{};
  REQUIRE(dladdr(address, &info) != 0);
  REQUIRE(info.dli_fname != nullptr);
  return info.dli_fname;
}

template <typename Function>
const void* address_of(Function* function) {
  return reinterpret_cast<const void*>(function);
}

}  // namespace

TEST_CASE("host allocator: malloc and free are the C library's, operator new the C++ runtime's") {
  void* (*scalar_new)(std::size_t) = &::operator new;
  void (*scalar_delete)(void*) noexcept = &::operator delete;
  const std::string malloc_from = library_of(address_of(&std::malloc));
  const std::string free_from = library_of(address_of(&std::free));
  const std::string calloc_from = library_of(address_of(&std::calloc));
  const std::string new_from = library_of(address_of(scalar_new));
  const std::string delete_from = library_of(address_of(scalar_delete));
  for (const std::string& from : {malloc_from, free_from, calloc_from, new_from, delete_from}) {
    CHECK(from.find("mimalloc") == std::string::npos);
  }
#ifdef RADIXKV_SYSTEM_MALLOC
  // A sanitizer build: the sanitizer's runtime defines them, as it should.
  MESSAGE("sanitizer build: malloc comes from " << malloc_from);
#else
  CHECK(malloc_from.find("libc.so") != std::string::npos);
  CHECK(free_from.find("libc.so") != std::string::npos);
  CHECK(calloc_from.find("libc.so") != std::string::npos);
  CHECK(new_from.find("libstdc++.so") != std::string::npos);
  CHECK(delete_from.find("libstdc++.so") != std::string::npos);

  // What a lookup by name finds (dlsym, as plugins do) is the same definition.
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(libc != nullptr);
  CHECK(dlsym(RTLD_DEFAULT, "malloc") == dlsym(libc, "malloc"));
  CHECK(dlsym(RTLD_DEFAULT, "free") == dlsym(libc, "free"));
  dlclose(libc);
#endif
}

TEST_CASE("host allocator: radixkv's own heap is mimalloc, loaded beside the C library") {
  // Something of radixkv's that allocates metadata, so its heap is really in use.
  radixkv::PagePool pool(radixkv::KvLayout{1, 1, 4, 2, 4}, 16);
  radixkv::PrefixCacheRuntime runtime(pool);
  const std::vector<radixkv::TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const radixkv::AdmitResult admitted = runtime.admit({1, 0, prompt});
  REQUIRE(admitted.ok());
  runtime.finish(admitted.seq);
  CHECK(runtime.check_accounting() == 0);

#ifdef RADIXKV_SYSTEM_MALLOC
  CHECK(radixkv::heap::allocator_name() == "system");
#else
  CHECK(radixkv::heap::allocator_name() == "mimalloc");
  void* mimalloc = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_NOLOAD);
  CHECK(mimalloc != nullptr);  // loaded, yet malloc above is not its
  if (mimalloc != nullptr) {
    CHECK(dlsym(RTLD_DEFAULT, "malloc") != dlsym(mimalloc, "malloc"));
    dlclose(mimalloc);
  }
#endif
}

namespace {

// kB of transparent huge pages in the mapping of this process that holds `address`
// (/proc/self/smaps), or -1 when no mapping holds it.
long huge_kb_at(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= target && target < end;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stol(line.substr(std::strlen("AnonHugePages:")));
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("host allocator: radixkv's heap maps huge pages unless MIMALLOC_LARGE_OS_PAGES says no") {
#ifdef RADIXKV_SYSTEM_MALLOC
  CHECK_FALSE(radixkv::heap::large_os_pages_enabled());
#else
  if (const char* set = std::getenv("MIMALLOC_LARGE_OS_PAGES")) {
    RADIXKV_SKIP("MIMALLOC_LARGE_OS_PAGES=" << set << " is set: the user decides, not radixkv");
  }
  CHECK(radixkv::heap::large_os_pages_enabled());
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  if (modes.empty() || modes.find("[never]") != std::string::npos) {
    RADIXKV_SKIP("the kernel gives no transparent huge pages (" << modes << ")");
  }
  // A block as large as a big tree's child table, touched: the kernel backs it with huge pages
  // because mimalloc advised them (4 KiB pages otherwise, under "madvise").
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  void* block = radixkv::heap::allocate(kBytes);
  std::memset(block, 1, kBytes);
  const long huge_kb = huge_kb_at(block);
  radixkv::heap::release(block);
  CHECK(huge_kb > 0);
#endif
}
