#include "tools/trace/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace radixkv::tools {

// The size trace.h states (a trace of 10M requests holds them in 560 MB).
static_assert(sizeof(TraceRequest) == 56);

std::string_view format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kNative:
      return "native";
    case TraceFormat::kMooncake:
      return "mooncake";
    case TraceFormat::kBailian:
      return "bailian";
    case TraceFormat::kAgentic:
      return "agentic";
  }
  return "?";
}

std::optional<TraceFormat> parse_format_name(std::string_view name) {
  if (name == "native") return TraceFormat::kNative;
  if (name == "mooncake") return TraceFormat::kMooncake;
  if (name == "bailian") return TraceFormat::kBailian;
  if (name == "agentic") return TraceFormat::kAgentic;
  return std::nullopt;
}

std::string_view format_names() { return "native, mooncake, bailian, agentic"; }

uint64_t content_key(ContentDomain domain, uint64_t salt, uint64_t id) {
  const uint64_t base = splitmix64(splitmix64(static_cast<uint64_t>(domain)) ^ salt);
  return splitmix64(base ^ splitmix64(id));
}

void fill_content(uint64_t key, uint32_t begin, uint32_t length, TokenId* out) {
  // Token j depends on j % 3 only: the first 24 tokens are written from the 3 values, then the
  // written run is copied after itself, doubling (each run a multiple of 3 tokens, so the phase
  // carries over), so a 512-token block is 5 memcpy calls, not a loop of 24-token stores.
  constexpr uint32_t kFirst = 24;
  const TokenId phase[3] = {content_token(key, begin), content_token(key, begin + 1),
                            content_token(key, begin + 2)};
  const uint32_t first = std::min(length, kFirst);
  for (uint32_t k = 0; k < first; ++k) out[k] = phase[k % 3];
  for (uint32_t j = first; j < length;) {
    const uint32_t n = std::min(j, length - j);
    std::memcpy(out + j, out, n * sizeof(TokenId));
    j += n;
  }
}

void append_content(uint64_t key, uint32_t begin, uint32_t length, std::vector<TokenId>& out) {
  const std::size_t start = out.size();
  out.resize(start + length);
  fill_content(key, begin, length, out.data() + start);
}

uint64_t Trace::input_tokens() const {
  uint64_t total = 0;
  for (const TraceRequest& r : requests) total += r.input_tokens;
  return total;
}

uint64_t Trace::output_tokens() const {
  uint64_t total = 0;
  for (const TraceRequest& r : requests) total += r.output_tokens;
  return total;
}

TraceError::TraceError(std::string file, uint64_t line, std::string reason)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: {}", file, line, reason)
                                  : fmt::format("{}: {}", file, reason)),
      file_(std::move(file)),
      line_(line),
      reason_(std::move(reason)) {}

TraceBuilder::TraceBuilder(Trace& trace) : trace_(trace) {
  for (std::size_t c = 0; c < trace_.class_names.size(); ++c) {
    classes_.emplace(trace_.class_names[c], static_cast<uint16_t>(c));
  }
  for (std::size_t n = 0; n < trace_.namespace_names.size(); ++n) {
    namespaces_.emplace(trace_.namespace_names[n], n);
  }
}

uint16_t TraceBuilder::class_of(std::string_view name) {
  if (const auto found = classes_.find(name); found != classes_.end()) return found->second;
  const auto [it, added] =
      classes_.try_emplace(std::string(name), static_cast<uint16_t>(trace_.class_names.size()));
  if (added) {
    if (trace_.class_names.size() >= kMaxRequestClasses) {
      classes_.erase(it);
      throw std::invalid_argument(
          fmt::format("request type \"{}\" would be class {}, more than the {} a trace may hold",
                      name, trace_.class_names.size(), kMaxRequestClasses));
    }
    trace_.class_names.emplace_back(name);
  }
  return it->second;
}

Namespace TraceBuilder::namespace_of(std::string_view name) {
  if (const auto found = namespaces_.find(name); found != namespaces_.end()) return found->second;
  const auto [it, added] =
      namespaces_.try_emplace(std::string(name), trace_.namespace_names.size());
  if (added) trace_.namespace_names.emplace_back(name);
  return it->second;
}

uint32_t TraceBuilder::session_of(uint64_t key) {
  if (const auto found = sessions_.find(key); found != sessions_.end()) return found->second;
  if (trace_.sessions == UINT32_MAX) throw std::invalid_argument("too many sessions for one trace");
  return sessions_.emplace(key, ++trace_.sessions).first->second;
}

uint32_t TraceBuilder::add(TraceRequest request, std::span<const Segment> segments) {
  if (trace_.requests.size() >= kNoParent - 1) {
    throw std::invalid_argument("too many requests for one trace");
  }
  uint64_t input = 0;
  if (request.parent != kNoParent) {
    if (request.parent >= trace_.requests.size()) {
      throw std::invalid_argument("the parent must be an earlier request");
    }
    const TraceRequest& parent = trace_.requests[request.parent];
    input = uint64_t{parent.input_tokens} + parent.output_tokens;
  }
  for (const Segment& s : segments) input += s.length;
  if (input == 0) throw std::invalid_argument("the prompt is empty (0 input tokens)");
  if (input > kMaxInputTokens) {
    throw std::invalid_argument(
        fmt::format("the prompt has {} tokens, more than the limit of {}", input, kMaxInputTokens));
  }
  if (request.priority < kMinPriority || request.priority > kMaxPriority) {
    throw std::invalid_argument(fmt::format("priority {} is outside [{}, {}]", request.priority,
                                            kMinPriority, kMaxPriority));
  }
  if (request.request_class >= trace_.class_names.size()) {
    throw std::invalid_argument(fmt::format("request class {} has no name (the trace names {})",
                                            request.request_class, trace_.class_names.size()));
  }
  if (trace_.segments.size() + segments.size() >= (uint64_t{1} << 32)) {
    throw std::invalid_argument("too many segments for one trace");
  }
  request.input_tokens = static_cast<uint32_t>(input);
  request.first_segment = static_cast<uint32_t>(trace_.segments.size());
  request.num_segments = static_cast<uint32_t>(segments.size());
  trace_.segments.insert(trace_.segments.end(), segments.begin(), segments.end());
  trace_.requests.push_back(request);
  return static_cast<uint32_t>(trace_.requests.size() - 1);
}

std::span<const TokenId> TokenExpander::expand(std::size_t index, uint64_t limit) {
  chain_.clear();
  for (uint32_t i = static_cast<uint32_t>(index); i != kNoParent; i = trace_.requests[i].parent) {
    chain_.push_back(i);
  }
  const uint64_t want = std::min<uint64_t>(trace_.requests[index].input_tokens, limit);
  // The buffer only grows, so it is zeroed once, not before every prompt is written over it.
  if (tokens_.size() < want) tokens_.resize(want);
  uint64_t filled = 0;
  // Oldest ancestor first: its segments, its answer, then the next generation.
  const auto take = [&](uint64_t key, uint32_t length) {
    const auto n = static_cast<uint32_t>(std::min<uint64_t>(length, want - filled));
    fill_content(key, 0, n, tokens_.data() + filled);
    filled += n;
  };
  for (auto it = chain_.rbegin(); it != chain_.rend() && filled < want; ++it) {
    const TraceRequest& r = trace_.requests[*it];
    for (const Segment& s : trace_.segments_of(r)) take(s.key, s.length);
    if (*it != index) take(answer_key(r), r.output_tokens);
  }
  return {tokens_.data(), filled};
}

}  // namespace radixkv::tools
