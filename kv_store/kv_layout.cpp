#include "kv_store/kv_layout.h"

#include <fmt/format.h>

#include <array>
#include <span>
#include <stdexcept>
#include <utility>

namespace radixkv {

namespace {

struct Preset {
  std::string_view name;
  uint32_t layers, kv_heads, head_dim;
};

// Shapes from each model's published config.json (num_hidden_layers, num_key_value_heads,
// hidden_size / num_attention_heads); all ship bf16 weights, so KV is 2 bytes an element.
constexpr std::array kPresets = {
    Preset{"llama-3-8b", 32, 8, 128},   // 128 KiB per token
    Preset{"llama-3-70b", 80, 8, 128},  // 320 KiB per token
    Preset{"qwen2.5-7b", 28, 4, 128},   // 56 KiB per token
    Preset{"mistral-7b", 32, 8, 128},   // 128 KiB per token
};

// A size of the layout: 2 (K and V) times the fields named, in order, or the first of them at
// which the product passes 2^64 (overflow_at; bytes is then meaningless).
struct Size {
  uint64_t bytes = 2;
  const char* overflow_at = nullptr;
};

Size size_of(const KvLayout& l, bool per_page) noexcept {
  const std::pair<uint32_t, const char*> factors[] = {{l.layers, "layers"},
                                                      {l.kv_heads, "kv_heads"},
                                                      {l.head_dim, "head_dim"},
                                                      {l.dtype_bytes, "dtype_bytes"},
                                                      {l.page_tokens, "page_tokens"}};
  Size size;
  for (const auto& [value, field] : std::span(factors).first(per_page ? 5 : 4)) {
    if (__builtin_mul_overflow(size.bytes, uint64_t{value}, &size.bytes)) {
      size.overflow_at = field;
      break;
    }
  }
  return size;
}

uint64_t checked_size(const KvLayout& l, bool per_page) {
  const Size size = size_of(l, per_page);
  if (size.overflow_at != nullptr) {
    throw std::invalid_argument(fmt::format(
        "KvLayout: {} passes 2^64 bytes at {} ({} layers x {} kv_heads x {} head_dim x {} "
        "dtype_bytes x 2 (K and V){})",
        std::string_view(size.overflow_at) == "page_tokens" ? "a page" : "a token",
        size.overflow_at, l.layers, l.kv_heads, l.head_dim, l.dtype_bytes,
        per_page ? fmt::format(" x {} page_tokens", l.page_tokens) : ""));
  }
  return size.bytes;
}

}  // namespace

uint64_t KvLayout::bytes_per_token() const { return checked_size(*this, false); }
uint64_t KvLayout::bytes_per_page() const { return checked_size(*this, true); }

void KvLayout::validate() const {
  auto require = [](uint32_t value, const char* field) {
    if (value == 0)
      throw std::invalid_argument(fmt::format("KvLayout: {} must be at least 1", field));
  };
  require(layers, "layers");
  require(kv_heads, "kv_heads");
  require(head_dim, "head_dim");
  require(dtype_bytes, "dtype_bytes");
  require(page_tokens, "page_tokens");
  checked_size(*this, true);  // the page's product includes the token's
}

std::string KvLayout::to_string() const {
  const auto text = [](Size size) {
    return size.overflow_at == nullptr ? fmt::format("{} B", size.bytes)
                                       : std::string("more than 2^64 B");
  };
  return fmt::format("{} layers x {} kv heads x {} dim x {} B, {} tokens/page ({}/token, {}/page)",
                     layers, kv_heads, head_dim, dtype_bytes, page_tokens,
                     text(size_of(*this, false)), text(size_of(*this, true)));
}

KvLayout KvLayout::preset(std::string_view name, uint32_t page_tokens) {
  for (const Preset& p : kPresets) {
    if (p.name == name) {
      KvLayout layout{p.layers, p.kv_heads, p.head_dim, 2, page_tokens};
      layout.validate();
      return layout;
    }
  }
  std::string known;
  for (const Preset& p : kPresets) known += fmt::format("{}{}", known.empty() ? "" : ", ", p.name);
  throw std::invalid_argument(fmt::format("unknown model preset '{}' (known: {})", name, known));
}

std::vector<std::string_view> KvLayout::preset_names() {
  std::vector<std::string_view> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

}  // namespace radixkv
