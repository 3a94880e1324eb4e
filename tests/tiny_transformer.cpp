#include "tests/tiny_transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

namespace radixkv::testing {

namespace {

// Uniform in [-scale, scale), from raw generator bits so every standard library agrees.
std::vector<double> random_values(std::mt19937_64& rng, size_t n, double scale) {
  std::vector<double> values(n);
  for (double& v : values) {
    const double unit = static_cast<double>(rng() >> 11) * 0x1p-53;  // [0, 1)
    v = (2.0 * unit - 1.0) * scale;
  }
  return values;
}

// y = W x, W row-major rows x cols.
void matvec(const std::vector<double>& w, const double* x, uint32_t rows, uint32_t cols,
            double* y) {
  for (uint32_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    const double* row = w.data() + size_t{r} * cols;
    for (uint32_t c = 0; c < cols; ++c) sum += row[c] * x[c];
    y[r] = sum;
  }
}

void rms_norm(const double* x, const std::vector<double>& gain, double* y) {
  const size_t n = gain.size();
  double squares = 0.0;
  for (size_t i = 0; i < n; ++i) squares += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(squares / static_cast<double>(n) + 1e-6);
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * inv * gain[i];
}

}  // namespace

PagedKv::PagedKv(PagePool& pool, std::span<const PageId> block_table, const TinyConfig& config)
    : pool_(pool),
      block_table_(block_table),
      config_(config),
      page_tokens_(pool.layout().page_tokens) {
  const KvLayout& layout = pool.layout();
  if (layout.layers != config.layers || layout.kv_heads != config.kv_heads ||
      layout.head_dim != config.head_dim || layout.dtype_bytes != sizeof(double)) {
    throw std::invalid_argument("PagedKv: the pool's KvLayout does not match the model (" +
                                layout.to_string() + ")");
  }
}

std::byte* PagedKv::address(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head) const {
  const uint32_t page_index = position / page_tokens_;
  if (page_index >= block_table_.size()) {
    throw std::out_of_range(fmt::format("PagedKv: position {} is beyond the block table ({} pages)",
                                        position, block_table_.size()));
  }
  const size_t slot = position % page_tokens_;
  const size_t index =
      ((size_t{layer} * 2 + kv) * page_tokens_ + slot) * config_.kv_heads * config_.head_dim +
      size_t{head} * config_.head_dim;
  return pool_.host_bytes(block_table_[page_index]).data() + index * sizeof(double);
}

void PagedKv::write(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
                    const double* data) {
  std::memcpy(address(layer, kv, position, head), data, config_.head_dim * sizeof(double));
}

void PagedKv::read(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
                   double* data) const {
  std::memcpy(data, address(layer, kv, position, head), config_.head_dim * sizeof(double));
}

size_t DenseKv::index(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head) const {
  return (((size_t{position} * config_.layers + layer) * 2 + kv) * config_.kv_heads + head) *
         config_.head_dim;
}

void DenseKv::write(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
                    const double* data) {
  const size_t per_position = size_t{config_.layers} * 2 * config_.kv_heads * config_.head_dim;
  if (values_.size() < (size_t{position} + 1) * per_position) {
    values_.resize((size_t{position} + 1) * per_position, 0.0);
  }
  std::copy_n(data, config_.head_dim, values_.begin() + index(layer, kv, position, head));
}

void DenseKv::read(uint32_t layer, uint32_t kv, uint32_t position, uint32_t head,
                   double* data) const {
  const size_t at = index(layer, kv, position, head);
  if (at + config_.head_dim > values_.size()) {
    throw std::out_of_range(fmt::format("DenseKv: position {} was never written", position));
  }
  std::copy_n(values_.begin() + at, config_.head_dim, data);
}

TinyTransformer::TinyTransformer(const TinyConfig& config, uint64_t seed) : config_(config) {
  if (config.heads % config.kv_heads != 0 || config.head_dim % 2 != 0) {
    throw std::invalid_argument(
        "TinyTransformer: heads must be a multiple of kv_heads and "
        "head_dim even");
  }
  std::mt19937_64 rng(seed);
  const uint32_t d = config.d_model;
  const uint32_t q_dim = config.heads * config.head_dim;
  const uint32_t kv_dim = config.kv_heads * config.head_dim;
  const auto norm_gain = [&] {
    std::vector<double> gain = random_values(rng, d, 0.2);
    for (double& g : gain) g += 1.0;
    return gain;
  };
  embedding_ = random_values(rng, size_t{config.vocab} * d, 1.0);
  for (uint32_t l = 0; l < config.layers; ++l) {
    Layer layer;
    layer.attn_norm = norm_gain();
    layer.wq = random_values(rng, size_t{q_dim} * d, 1.0 / std::sqrt(d));
    layer.wk = random_values(rng, size_t{kv_dim} * d, 1.0 / std::sqrt(d));
    layer.wv = random_values(rng, size_t{kv_dim} * d, 1.0 / std::sqrt(d));
    layer.wo = random_values(rng, size_t{d} * q_dim, 1.0 / std::sqrt(q_dim));
    layer.mlp_norm = norm_gain();
    layer.w_up = random_values(rng, size_t{config.ffn} * d, 1.0 / std::sqrt(d));
    layer.w_down = random_values(rng, size_t{d} * config.ffn, 1.0 / std::sqrt(config.ffn));
    layers_.push_back(std::move(layer));
  }
  final_norm_ = norm_gain();
  unembedding_ = random_values(rng, size_t{config.vocab} * d, 1.0 / std::sqrt(d));
  for (uint32_t i = 0; i < config.head_dim / 2; ++i) {
    inv_freq_.push_back(std::pow(config.rope_base, -2.0 * i / config.head_dim));
  }
}

KvLayout TinyTransformer::kv_layout(uint32_t page_tokens) const {
  return KvLayout{config_.layers, config_.kv_heads, config_.head_dim, sizeof(double), page_tokens};
}

void TinyTransformer::rope(double* vec, uint32_t position) const {
  for (uint32_t i = 0; i < config_.head_dim / 2; ++i) {
    const double angle = position * inv_freq_[i];
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = vec[2 * i], b = vec[2 * i + 1];
    vec[2 * i] = a * c - b * s;
    vec[2 * i + 1] = a * s + b * c;
  }
}

void TinyTransformer::forward(KvStorage& kv, std::span<const int32_t> tokens,
                              uint32_t first_position, std::vector<double>& logits,
                              std::optional<uint32_t> rope_first_position) const {
  const TinyConfig& c = config_;
  const uint32_t d = c.d_model, hd = c.head_dim;
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  const uint32_t rope_first = rope_first_position.value_or(first_position);
  const uint32_t group = c.heads / c.kv_heads;

  // Residual stream of the chunk, one row per token; the chunk runs layer by layer, as a real
  // prefill does, with a causal mask over positions.
  std::vector<double> x(size_t{n} * d);
  for (uint32_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c.vocab) {
      throw std::invalid_argument(
          fmt::format("TinyTransformer: token {} at index {} is outside "
                      "the vocabulary [0, {})",
                      tokens[i], i, c.vocab));
    }
    std::copy_n(embedding_.begin() + size_t{static_cast<uint32_t>(tokens[i])} * d, d,
                x.begin() + size_t{i} * d);
  }

  std::vector<double> normed(d), q(size_t{n} * c.heads * hd), k(c.kv_heads * hd),
      v(c.kv_heads * hd), attn(c.heads * hd), out(d), hidden(c.ffn), scores, key(hd), value(hd);
  for (uint32_t l = 0; l < c.layers; ++l) {
    const Layer& layer = layers_[l];
    // Queries, keys and values of every token of the chunk; K and V go to the storage.
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t rope_position = rope_first + i;
      rms_norm(x.data() + size_t{i} * d, layer.attn_norm, normed.data());
      double* qi = q.data() + size_t{i} * c.heads * hd;
      matvec(layer.wq, normed.data(), c.heads * hd, d, qi);
      matvec(layer.wk, normed.data(), c.kv_heads * hd, d, k.data());
      matvec(layer.wv, normed.data(), c.kv_heads * hd, d, v.data());
      for (uint32_t h = 0; h < c.heads; ++h) rope(qi + size_t{h} * hd, rope_position);
      for (uint32_t h = 0; h < c.kv_heads; ++h) {
        rope(k.data() + size_t{h} * hd, rope_position);
        kv.write(l, 0, first_position + i, h, k.data() + size_t{h} * hd);
        kv.write(l, 1, first_position + i, h, v.data() + size_t{h} * hd);
      }
    }
    // Attention of each token over positions 0..its own, then the MLP.
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t position = first_position + i;
      const double* qi = q.data() + size_t{i} * c.heads * hd;
      for (uint32_t h = 0; h < c.heads; ++h) {
        const uint32_t kvh = h / group;
        scores.assign(position + 1, 0.0);
        double max_score = -INFINITY;
        for (uint32_t s = 0; s <= position; ++s) {
          kv.read(l, 0, s, kvh, key.data());
          double dot = 0.0;
          for (uint32_t e = 0; e < hd; ++e) dot += qi[size_t{h} * hd + e] * key[e];
          scores[s] = dot / std::sqrt(static_cast<double>(hd));
          max_score = std::max(max_score, scores[s]);
        }
        double total = 0.0;
        for (double& score : scores) total += (score = std::exp(score - max_score));
        double* ah = attn.data() + size_t{h} * hd;
        std::fill_n(ah, hd, 0.0);
        for (uint32_t s = 0; s <= position; ++s) {
          kv.read(l, 1, s, kvh, value.data());
          const double w = scores[s] / total;
          for (uint32_t e = 0; e < hd; ++e) ah[e] += w * value[e];
        }
      }
      double* xi = x.data() + size_t{i} * d;
      matvec(layer.wo, attn.data(), d, c.heads * hd, out.data());
      for (uint32_t e = 0; e < d; ++e) xi[e] += out[e];
      rms_norm(xi, layer.mlp_norm, normed.data());
      matvec(layer.w_up, normed.data(), c.ffn, d, hidden.data());
      for (double& h : hidden) h = h / (1.0 + std::exp(-h));  // SiLU
      matvec(layer.w_down, hidden.data(), d, c.ffn, out.data());
      for (uint32_t e = 0; e < d; ++e) xi[e] += out[e];
    }
  }
  const size_t first_row = logits.size();
  logits.resize(first_row + size_t{n} * c.vocab);
  for (uint32_t i = 0; i < n; ++i) {
    rms_norm(x.data() + size_t{i} * d, final_norm_, normed.data());
    matvec(unembedding_, normed.data(), c.vocab, d,
           logits.data() + first_row + size_t{i} * c.vocab);
  }
}

uint32_t TinyTransformer::argmax(std::span<const double> row) {
  return static_cast<uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace radixkv::testing
