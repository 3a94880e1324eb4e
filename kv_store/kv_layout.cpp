#include "kv_store/kv_layout.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <stdexcept>

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

}  // namespace

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
}

std::string KvLayout::to_string() const {
  return fmt::format(
      "{} layers x {} kv heads x {} dim x {} B, {} tokens/page ({} B/token, {} B/page)", layers,
      kv_heads, head_dim, dtype_bytes, page_tokens, bytes_per_token(), bytes_per_page());
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

uint64_t kv_layout_id(const KvLayout& layout, std::string_view model) {
  std::string bytes = "radixkv-kv-layout-v1";
  const uint32_t fields[] = {layout.layers, layout.kv_heads, layout.head_dim, layout.dtype_bytes,
                             layout.page_tokens};
  for (const uint32_t field : fields) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(field >> (8 * i)));
  }
  bytes += model;
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace radixkv
