// examples/embed/remote.cpp: the remote tier's pieces from an installed radixkv::remote, with no
// server: a Redis URL parsed (its password masked), one page's key and value made and checked
// back (and a value for another parent refused), and a store that finds no server there
// failing with RemoteError, as the remote tier expects. scripts/check-install.sh builds and runs
// it both with find_package(radixkv) and with pkg-config (radixkv-remote.pc).
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <radixkv/radix/page_hash.h>
#include <radixkv/remote/page_value.h>
#include <radixkv/remote/redis_store.h>

namespace {

int failed(const char* what) {
  std::fprintf(stderr, "embed_remote: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  namespace remote = radixkv::remote;
  const remote::RedisUrl url = remote::RedisUrl::parse("redis://app:s3cret@127.0.0.1:1/2", {});
  if (url.describe() != "redis://app:***@127.0.0.1:1/2") return failed("URL not masked");

  const radixkv::KvLayout layout = radixkv::KvLayout::preset("llama-3-8b", 16);
  const uint64_t layout_id = remote::layout_id(layout, "llama-3-8b");
  std::vector<radixkv::TokenId> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 100);
  const radixkv::PageHash parent = radixkv::namespace_seed(1);
  const radixkv::PageHash hash = radixkv::chain_page_hash(parent, tokens);
  const std::string key = remote::page_key("embed", layout_id, hash);
  const std::string value = remote::encode_page_value(layout_id, parent, tokens, 64);
  if (remote::check_page_value(value, {layout_id, parent, tokens, 64}) != remote::ValueCheck::kOk) {
    return failed("a page value does not check out");
  }
  if (remote::check_page_value(value, {layout_id, hash, tokens, 64}) !=
      remote::ValueCheck::kParent) {
    return failed("a value for another parent was not refused");
  }

  // Nothing listens on port 1: the store's call fails (hiredis linked and running), never hangs.
  auto store = remote::make_redis_store(url, {});
  try {
    store->get(std::vector<std::string>{key});
    return failed("a get without a server succeeded");
  } catch (const remote::RemoteError& e) {
    if (std::string(e.what()).find("s3cret") != std::string::npos) {
      return failed("an error message shows the password");
    }
    std::printf("radixkv::remote: key %s, a %zu-byte value checked; no server: %s\n", key.c_str(),
                value.size(), e.what());
  }
  return 0;
}
