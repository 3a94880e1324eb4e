#include "events/block_hash.h"

#include <msgpack.hpp>
#include <stdexcept>

namespace radixkv::events {

std::vector<BlockHash> prefix_block_hashes(Namespace ns, std::span<const TokenId> tokens,
                                           uint32_t page_tokens) {
  if (page_tokens == 0) throw std::invalid_argument("page size must be at least 1 token");
  // The page hashes the trie and the remote tier use, cut to the events' 64 bits.
  std::vector<PageHash> pages;
  chain_page_hashes(ns, tokens, page_tokens, 0, tokens.size() / page_tokens, pages);
  std::vector<BlockHash> hashes;
  hashes.reserve(pages.size());
  for (const PageHash& hash : pages) hashes.push_back(block_hash(hash));
  return hashes;
}

ExtraKeys namespace_extra_keys(Namespace ns) {
  msgpack::sbuffer bytes;
  msgpack::packer<msgpack::sbuffer> pk(&bytes);
  pk.pack_array(1);
  pk.pack(ns);
  return {bytes.data(), bytes.size()};
}

std::optional<Namespace> namespace_from_extra_keys(const ExtraKeys& keys) {
  // At most 10 bytes (fixarray + uint64): anything longer is not this shape, so nothing is parsed.
  if (keys.size() < 2 || keys.size() > 10 || static_cast<unsigned char>(keys[0]) != 0x91) {
    return std::nullopt;
  }
  try {
    const msgpack::object_handle handle = msgpack::unpack(keys.data(), keys.size());
    const msgpack::object& o = handle.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size != 1 ||
        o.via.array.ptr[0].type != msgpack::type::POSITIVE_INTEGER) {
      return std::nullopt;
    }
    return o.via.array.ptr[0].via.u64;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace radixkv::events
