// A small decoder-only transformer for the runtime's end-to-end tests: float64, seeded weights,
// RMSNorm, grouped-query attention with RoPE, a SiLU MLP, tied to no framework.
//
// Attention keeps K and V only in a KvStorage. PagedKv stores them in PagePool pages through a
// block table (position t lives in block_table[t / P], slot t % P), which is how the cache is
// exercised; DenseKv keeps them in plain vectors and is the no-cache reference.
//
// Page layout (KvLayout{layers, kv_heads, head_dim, dtype_bytes = 8, P}): doubles indexed
//   ((layer * 2 + kv) * P + slot) * kv_heads * head_dim + head * head_dim + d,   kv: 0 = K, 1 = V
//
// Summation order: every dot product and the attention sum run in a fixed order (over positions
// 0..t for token t), independent of how a prompt is cut into chunks, so a cached run and a
// from-scratch run give bitwise equal logits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv_store/page_pool.h"

namespace radixkv::testing {

struct TinyConfig {
  uint32_t vocab = 256;
  uint32_t d_model = 32;
  uint32_t layers = 2;
  uint32_t heads = 4;
  uint32_t kv_heads = 2;  // grouped-query: heads / kv_heads query heads share one K/V head
  uint32_t head_dim = 8;
  uint32_t ffn = 64;
  double rope_base = 10000.0;
};

class KvStorage {
 public:
  virtual ~KvStorage() = default;
  // kv: 0 = K, 1 = V. head_dim doubles at `data`.
  virtual void write(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
                     const double* data) = 0;
  virtual void read(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
                    double* data) const = 0;
};

// K/V in host pages of `pool`, addressed through `block_table`; positions beyond the table throw.
class PagedKv final : public KvStorage {
 public:
  PagedKv(PagePool& pool, std::span<const PageId> block_table, const TinyConfig& config);
  void write(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
             const double* data) override;
  void read(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
            double* data) const override;

 private:
  std::byte* address(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head) const;

  PagePool& pool_;
  std::span<const PageId> block_table_;
  TinyConfig config_;
  uint32_t page_tokens_;
};

// K/V in plain vectors that grow with the positions written.
class DenseKv final : public KvStorage {
 public:
  explicit DenseKv(const TinyConfig& config) : config_(config) {}
  void write(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
             const double* data) override;
  void read(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
            double* data) const override;

 private:
  size_t index(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head) const;

  TinyConfig config_;
  std::vector<double> values_;
};

class TinyTransformer {
 public:
  TinyTransformer(const TinyConfig& config, uint64_t seed);

  const TinyConfig& config() const { return config_; }
  // The KV layout whose pages PagedKv uses.
  KvLayout kv_layout(uint32_t page_tokens) const;

  // Runs `tokens` at positions first_position, first_position + 1, ...: writes their K and V at
  // those positions, lets each attend to positions 0..its own, and appends tokens.size() rows of
  // vocab logits to `logits`. `rope_first_position`, when given, rotates queries and keys as if
  // the tokens sat at rope_first_position, ... instead: only the offset-bug control uses it.
  // Throws std::invalid_argument for a token outside [0, vocab).
  void forward(KvStorage& kv, std::span<const int32_t> tokens, uint32_t first_position,
               std::vector<double>& logits,
               std::optional<uint32_t> rope_first_position = std::nullopt) const;

  static uint32_t argmax(std::span<const double> row);

 private:
  struct Layer {
    std::vector<double> attn_norm, wq, wk, wv, wo, mlp_norm, w_up, w_down;
  };

  void rope(double* vec, uint32_t position) const;

  TinyConfig config_;
  std::vector<double> embedding_;  // vocab x d_model
  std::vector<Layer> layers_;
  std::vector<double> final_norm_;
  std::vector<double> unembedding_;  // vocab x d_model
  std::vector<double> inv_freq_;     // head_dim / 2 rotation frequencies
};

}  // namespace radixkv::testing
