// LinearIndex: the prefix cache of exo, rebuilt as a baseline for bench/: a list of every stored
// prompt (its own copy of the tokens), and a match that scans all of them for the longest common
// prefix. The scan here stops each comparison at the first difference (exo compares the whole
// common length), and the result is cut to whole pages so that it answers what the other indexes
// answer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "radix/radix_node.h"

namespace radixkv::bench {

class LinearIndex {
 public:
  explicit LinearIndex(uint32_t page_tokens);

  struct Match {
    uint32_t tokens = 0;          // a multiple of page_tokens
    uint32_t prompt = kNoPrompt;  // index of the stored prompt that gave it
  };
  static constexpr uint32_t kNoPrompt = ~uint32_t{0};

  Match match(std::span<const TokenId> tokens) const;
  void insert(std::span<const TokenId> tokens);
  void pop_back() { prompts_.pop_back(); }
  std::size_t size() const { return prompts_.size(); }

 private:
  uint32_t page_tokens_;
  std::vector<std::vector<TokenId>> prompts_;
};

// Tokens the two sequences share from the start (memcmp by blocks, then the first difference).
uint32_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b);

}  // namespace radixkv::bench
