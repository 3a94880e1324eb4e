// The host keeps its allocator (issue 13). This program is linked the way an engine links radixkv
// (radixkv::radixkv, nothing else of radixkv's), and its malloc, free, operator new and operator
// delete must be the C and C++ runtime libraries' own, while radixkv's metadata heap is mimalloc
// (the system allocator in sanitizer builds). Before kv_store/heap.h's shared-library scheme,
// linking radixkv put Debian's libmimalloc.so among the program's direct dependencies, and every
// one of these resolved to mimalloc.
#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <new>
#include <string>

#include "kv_store/heap.h"
#include "runtime/prefix_cache_runtime.h"

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
