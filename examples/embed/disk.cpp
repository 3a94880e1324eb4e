// examples/embed/disk.cpp: the disk tier from an installed radixkv::disk: a tier opened on a
// scratch directory, a page handed to it as the radix tree would as the page leaves the trie, and
// the tier opened again, as a restarted process would, serving the page with its bytes.
// scripts/check-install.sh builds and runs it both with find_package(radixkv) and with pkg-config
// (radixkv-disk.pc).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <radixkv/disk/disk_tier.h>
#include <radixkv/kv_store/page_pool.h>
#include <radixkv/radix/page_hash.h>

namespace {

int failed(const char* what) {
  std::fprintf(stderr, "embed_disk: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  namespace disk = radixkv::disk;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("radixkv_embed_disk_" + std::to_string(::getpid()));
  const radixkv::KvLayout layout{2, 2, 16, 2, 16};  // 4 KiB pages
  const disk::DiskTierConfig config{dir.string(), layout, "embed", 1u << 20};
  radixkv::PagePool pool(layout, 2, radixkv::make_host_backend());
  std::vector<radixkv::PageId> pages;
  pool.allocate(2, pages);
  std::vector<radixkv::TokenId> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 100);
  const radixkv::PageHash parent = radixkv::namespace_seed(1);
  const radixkv::PageHash hash = radixkv::chain_page_hash(parent, tokens);
  std::memset(pool.host_bytes(pages[0]).data(), 0x5a, pool.bytes_per_page());
  int status = 0;
  {
    disk::DiskTier tier(config);
    tier.attach_pools(&pool, nullptr);
    tier.stored(radixkv::Tier::kDevice, 1, std::nullopt, {&hash, 1}, tokens);
    tier.dropping({radixkv::Tier::kDevice, hash, parent, tokens, pages[0]});
    tier.flush();
  }  // written when the tier closes
  {
    disk::DiskTier tier(config);
    if (tier.stats().recovered_pages != 1) status = failed("the page was not recovered");
    if (status == 0 && tier.load(parent, {&hash, 1}, tokens, pool, {&pages[1], 1}) != 1) {
      status = failed("the page did not load");
    }
    if (status == 0 && std::memcmp(pool.host_bytes(pages[0]).data(),
                                   pool.host_bytes(pages[1]).data(), pool.bytes_per_page()) != 0) {
      status = failed("the page loaded other bytes");
    }
    if (status == 0)
      std::printf("radixkv::disk: %s, a page back after a restart\n", tier.describe().c_str());
  }
  pool.release(pages);
  std::filesystem::remove_all(dir);
  return status;
}
