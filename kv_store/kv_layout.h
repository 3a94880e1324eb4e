// KvLayout: the shape of one model's KV cache, and what a token and a page of it cost in bytes.
//
// A page holds the K and V of `page_tokens` consecutive tokens for every layer:
//   bytes_per_token = 2 (K and V) * layers * kv_heads * head_dim * dtype_bytes
//   bytes_per_page  = bytes_per_token * page_tokens
// Every field must be at least 1, and both sizes must fit in 64 bits: validate() names the field
// that is zero or that makes a size pass 2^64, and the two sizes are computed with checked
// arithmetic (they throw the same error rather than wrap to a small page).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv {

struct KvLayout {
  uint32_t layers = 1;
  uint32_t kv_heads = 1;
  uint32_t head_dim = 1;
  uint32_t dtype_bytes = 2;
  uint32_t page_tokens = 16;

  friend bool operator==(const KvLayout&, const KvLayout&) = default;

  // Throw std::invalid_argument naming the field at which the size passes 2^64 bytes.
  uint64_t bytes_per_token() const;
  uint64_t bytes_per_page() const;

  // Throws std::invalid_argument naming the first field that is zero, or the field at which a
  // size passes 2^64 bytes.
  void validate() const;
  // The fields and both sizes (or "more than 2^64"); never throws for a bad layout.
  std::string to_string() const;

  // Published shapes of real models (bf16 KV). Names: llama-3-8b, llama-3-70b, qwen2.5-7b,
  // mistral-7b. Throws std::invalid_argument listing the known names for any other.
  static KvLayout preset(std::string_view name, uint32_t page_tokens);
  static std::vector<std::string_view> preset_names();
};

}  // namespace radixkv
