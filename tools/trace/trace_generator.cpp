#include "tools/trace/trace_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <string_view>

#include "tools/trace/random.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

constexpr uint32_t kNoRequest = ~uint32_t{0};

struct GenRequest {
  double t = 0;
  uint64_t conversation = 0;
  uint64_t ns = 0;
  int32_t priority = kDefaultPriority;
  uint32_t parent = kNoRequest;  // index in generation order
  std::vector<Segment> segs;     // here key = content id as written in the file
  uint32_t out = 0;
  uint32_t agent = 0;  // 0: the conversation's main agent; k: its k-th sub-agent
  const char* kind = "chat";
};

// Stored once generated: the segments move into one array shared by all requests.
struct StoredRequest {
  double t = 0;
  uint64_t conversation = 0;
  uint64_t ns = 0;
  int32_t priority = kDefaultPriority;
  uint32_t parent = kNoRequest;
  uint64_t first_seg = 0;
  uint32_t num_segs = 0;
  uint32_t out = 0;
  uint64_t input = 0;  // prompt tokens: parent's input and answer, then own segments
  uint32_t agent = 0;
  const char* kind = "chat";
};

struct Generated {
  std::vector<StoredRequest> requests;
  std::vector<Segment> segs;
};

// Whole milliseconds, so that the written times are exactly the ones that were sorted.
double to_ms_grid(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

class Generator {
 public:
  explicit Generator(const GenConfig& config) : config_(config), rng_(config.seed) {
    // The system prompt pool: lengths, then the Zipf CDF of their popularity.
    double total = 0;
    for (uint64_t k = 0; k < config.system_prompts; ++k) {
      system_lengths_.push_back(config.system_tokens.sample_count(rng_, 1));
      total += 1.0 / std::pow(static_cast<double>(k + 1), config.zipf);
      zipf_cdf_.push_back(total);
    }
    for (double& c : zipf_cdf_) c /= total;
    next_content_ = config.system_prompts;
  }

  Generated run() {
    double arrival = 0;
    for (uint64_t c = 0; c < config_.conversations; ++c) {
      arrival += rng_.exponential(1.0 / config_.rate);
      const uint64_t ns = rng_.below(config_.namespaces);
      const int32_t priority = config_.priorities[rng_.below(config_.priorities.size())];
      if (rng_.chance(config_.agent_fraction)) {
        agent(c, ns, priority, arrival);
      } else {
        chat(c, ns, priority, arrival);
      }
    }
    return std::move(out_);
  }

 private:
  uint64_t pick_system_prompt() {
    const double u = rng_.uniform();
    const auto it = std::upper_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u);
    return std::min<uint64_t>(static_cast<uint64_t>(it - zipf_cdf_.begin()),
                              config_.system_prompts - 1);
  }

  Segment fresh(uint32_t length) { return {next_content_++, length}; }

  uint32_t add(const GenRequest& request) {
    StoredRequest stored;
    stored.t = request.t;
    stored.input = 0;
    if (request.parent != kNoRequest) {
      const StoredRequest& parent = out_.requests[request.parent];
      // A child arrives strictly after its parent, even on the millisecond grid.
      stored.t = std::max(stored.t, parent.t + 0.001);
      stored.input = parent.input + parent.out;
    }
    for (const Segment& seg : request.segs) stored.input += seg.length;
    check_limits(request, stored.input);
    stored.t = to_ms_grid(stored.t);
    stored.conversation = request.conversation;
    stored.ns = request.ns;
    stored.priority = request.priority;
    stored.parent = request.parent;
    stored.first_seg = out_.segs.size();
    stored.num_segs = static_cast<uint32_t>(request.segs.size());
    stored.out = request.out;
    stored.agent = request.agent;
    stored.kind = request.kind;
    out_.segs.insert(out_.segs.end(), request.segs.begin(), request.segs.end());
    out_.requests.push_back(stored);
    return static_cast<uint32_t>(out_.requests.size() - 1);
  }

  // What replay cannot read is refused here, naming the flags that made it.
  void check_limits(const GenRequest& request, uint64_t input) const {
    const bool agent = std::string_view(request.kind) != "chat";
    if (request.out > kMaxInputTokens) {
      throw UsageError(fmt::format(
          "{}: an answer of {} tokens is more than the {} tokens replay reads",
          agent ? "--tool-call-tokens" : "--answer-tokens", request.out, kMaxInputTokens));
    }
    if (input > kMaxInputTokens) {
      throw UsageError(fmt::format(
          "{}: conversation {} reaches a prompt of {} tokens, more than the {} tokens replay "
          "reads; lower these",
          agent ? "--agent-steps, --tool-tokens, --tool-call-tokens, --message-tokens, "
                  "--system-tokens"
                : "--turns, --answer-tokens, --message-tokens, --system-tokens",
          request.conversation, input, kMaxInputTokens));
    }
  }

  GenRequest base(uint64_t c, uint64_t ns, int32_t priority, double t, const char* kind) {
    GenRequest r;
    r.conversation = c;
    r.ns = ns;
    r.priority = priority;
    r.t = t;
    r.kind = kind;
    return r;
  }

  void chat(uint64_t c, uint64_t ns, int32_t priority, double t) {
    const uint64_t system = pick_system_prompt();
    const Segment system_segment{system, system_lengths_[system]};
    const uint32_t turns = config_.turns.sample_count(rng_, 1);
    std::vector<uint32_t> history;  // the current branch, turn by turn
    for (uint32_t turn = 0; turn < turns; ++turn) {
      if (turn > 0) t = out_.requests[history.back()].t + config_.think_s.sample(rng_);
      GenRequest r = base(c, ns, priority, t, "chat");
      if (turn > 0 && rng_.chance(config_.regenerate)) {
        // Ask the last turn again: same parent, same message, a new answer.
        const StoredRequest& last = out_.requests[history.back()];
        r.parent = last.parent;
        r.segs.assign(
            out_.segs.begin() + static_cast<std::ptrdiff_t>(last.first_seg),
            out_.segs.begin() + static_cast<std::ptrdiff_t>(last.first_seg + last.num_segs));
        r.kind = "regen";
        history.pop_back();
      } else if (turn > 0 && rng_.chance(config_.edit)) {
        // Edit an earlier turn j: its history stays, its message changes.
        const auto j = static_cast<std::size_t>(rng_.below(history.size()));
        r.parent = out_.requests[history[j]].parent;
        if (j == 0) r.segs.push_back(system_segment);
        r.segs.push_back(fresh(config_.message_tokens.sample_count(rng_, 1)));
        r.kind = "edit";
        history.resize(j);
      } else {
        if (turn == 0) {
          r.segs.push_back(system_segment);
        } else {
          r.parent = history.back();
        }
        r.segs.push_back(fresh(config_.message_tokens.sample_count(rng_, 1)));
      }
      r.out = config_.answer_tokens.sample_count(rng_, 1);
      history.push_back(add(std::move(r)));
    }
  }

  void agent(uint64_t c, uint64_t ns, int32_t priority, double t) {
    const uint64_t system = pick_system_prompt();
    uint32_t subagents = 0;  // started so far in this conversation
    agent_loop(base(c, ns, priority, t, "agent"), system, config_.agent_steps, &subagents);
  }

  // An agent's loop: its first request (system prompt and a task), then tool steps (their number
  // drawn from `steps` after the first request); the main agent's may start sub-agents
  // (`subagents` numbers them). Returns its last request.
  uint32_t agent_loop(GenRequest first, uint64_t system, const Distribution& steps,
                      uint32_t* subagents) {
    const uint64_t c = first.conversation, ns = first.ns;
    const int32_t priority = first.priority;
    const uint32_t agent = first.agent;
    first.segs.push_back({system, system_lengths_[system]});
    first.segs.push_back(fresh(config_.message_tokens.sample_count(rng_, 1)));
    first.out = config_.tool_call_tokens.sample_count(rng_, 1);
    uint32_t last = add(std::move(first));
    const uint32_t step_count = steps.sample_count(rng_, 0);
    for (uint32_t s = 0; s < step_count; ++s) {
      GenRequest r =
          base(c, ns, priority, out_.requests[last].t + config_.tool_time_s.sample(rng_), "agent");
      r.parent = last;
      r.agent = agent;
      if (agent == 0 && config_.subagent_chance > 0 && rng_.chance(config_.subagent_chance)) {
        // Sub-agents instead of a tool: each one's result is a tool result of this step, which
        // arrives a tool time after the last of them ends.
        const uint32_t count = config_.subagents.sample_count(rng_, 1);
        double done = out_.requests[last].t;
        for (uint32_t k = 0; k < count; ++k) {
          GenRequest task = base(c, ns, priority, r.t, "subagent");
          task.agent = ++*subagents;
          const uint32_t end =
              agent_loop(std::move(task), system, config_.subagent_steps, subagents);
          done = std::max(done, out_.requests[end].t);
          r.segs.push_back(fresh(config_.tool_tokens.sample_count(rng_, 1)));
        }
        r.t = done + config_.tool_time_s.sample(rng_);
      } else {
        r.segs.push_back(fresh(config_.tool_tokens.sample_count(rng_, 1)));
      }
      r.kind = out_.requests[last].kind;
      r.out = config_.tool_call_tokens.sample_count(rng_, 1);
      last = add(std::move(r));
    }
    return last;
  }

  const GenConfig& config_;
  Rng rng_;
  std::vector<uint32_t> system_lengths_;
  std::vector<double> zipf_cdf_;
  uint64_t next_content_ = 0;
  Generated out_;
};

}  // namespace

void GenConfig::validate() const {
  auto require = [](bool ok, std::string_view flag, std::string_view why) {
    if (!ok) throw UsageError(fmt::format("{}: {}", flag, why));
  };
  require(conversations >= 1, "--conversations", "must be at least 1");
  require(conversations <= kMaxConversations, "--conversations",
          "more than 1e7 conversations is beyond what gen holds in memory");
  require(system_prompts >= 1, "--system-prompts", "must be at least 1");
  // The pool's lengths and popularity are held in memory up front.
  require(system_prompts <= kMaxSystemPrompts, "--system-prompts",
          "more than 1e7 is beyond what gen holds");
  require(zipf >= 0 && zipf <= 10, "--zipf", "must lie in [0, 10]");
  require(rate > 0 && std::isfinite(rate), "--rate", "must be a positive number");
  require(regenerate >= 0 && regenerate <= 1, "--regenerate", "must lie in [0, 1]");
  require(edit >= 0 && edit <= 1, "--edit", "must lie in [0, 1]");
  require(agent_fraction >= 0 && agent_fraction <= 1, "--agent-fraction", "must lie in [0, 1]");
  require(namespaces >= 1, "--namespaces", "must be at least 1");
  require(namespaces <= kMaxNamespaces, "--namespaces",
          "more than 2^53 namespaces is beyond what replay reads (ids exact in JSON)");
  require(!priorities.empty(), "--priorities", "needs at least one priority");
  for (int32_t p : priorities) {
    require(p >= kMinPriority && p <= kMaxPriority, "--priorities",
            fmt::format("priority {} is outside [{}, {}]", p, kMinPriority, kMaxPriority));
  }
  // Turns and agent steps accumulate context: keep every prompt far below kMaxInputTokens.
  require(turns.mean() <= 1000, "--turns", "a mean above 1000 turns is not a conversation");
  require(agent_steps.mean() <= 10000, "--agent-steps", "a mean above 10000 steps is too many");
  require(subagent_chance >= 0 && subagent_chance <= 1, "--subagent-chance", "must lie in [0, 1]");
  require(subagents.mean() <= 64, "--subagents", "a mean above 64 sub-agents a step is too many");
  require(subagent_steps.mean() <= 10000, "--subagent-steps",
          "a mean above 10000 steps is too many");
}

GenConfig agents_preset() {
  GenConfig config;
  config.conversations = 400;
  config.rate = 2;
  config.agent_fraction = 1;
  config.subagent_chance = 0.15;
  config.tool_time_s = Distribution::parse("lognormal:6:1.0", "--tool-time");
  return config;
}

namespace {

// The generated requests and the order they are written in: by arrival; a child is strictly later
// than its parent, so parents stay first.
struct ArrivalOrder {
  Generated generated;
  std::vector<uint32_t> order;  // generation index of the request at each position
  std::vector<uint32_t> id_of;  // position (the written id) of each generated request
};

ArrivalOrder generate_in_arrival_order(const GenConfig& config) {
  config.validate();
  ArrivalOrder sorted{Generator(config).run(), {}, {}};
  const std::vector<StoredRequest>& requests = sorted.generated.requests;
  sorted.order.resize(requests.size());
  for (uint32_t i = 0; i < sorted.order.size(); ++i) sorted.order[i] = i;
  std::stable_sort(sorted.order.begin(), sorted.order.end(),
                   [&](uint32_t a, uint32_t b) { return requests[a].t < requests[b].t; });
  sorted.id_of.resize(requests.size());
  for (uint32_t pos = 0; pos < sorted.order.size(); ++pos) sorted.id_of[sorted.order[pos]] = pos;
  return sorted;
}

}  // namespace

void write_native(const GenConfig& config, std::ostream& out) {
  const ArrivalOrder sorted = generate_in_arrival_order(config);
  const Generated& generated = sorted.generated;
  const std::vector<StoredRequest>& requests = generated.requests;
  const std::vector<uint32_t>& order = sorted.order;
  const std::vector<uint32_t>& id_of = sorted.id_of;

  fmt::memory_buffer text;
  fmt::format_to(
      std::back_inserter(text),
      "{{\"radixkv_trace\":1,\"generator\":\"radixkv gen\",\"seed\":{},\"requests\":{}}}\n",
      config.seed, requests.size());
  for (uint32_t pos = 0; pos < order.size(); ++pos) {
    const StoredRequest& r = requests[order[pos]];
    auto it = std::back_inserter(text);
    fmt::format_to(it, "{{\"id\":{},\"t\":{:.3f},\"ns\":{},\"pri\":{},", pos, r.t, r.ns,
                   r.priority);
    if (r.parent != kNoRequest) fmt::format_to(it, "\"parent\":{},", id_of[r.parent]);
    fmt::format_to(it, "\"segs\":[");
    for (uint32_t s = 0; s < r.num_segs; ++s) {
      const Segment& seg = generated.segs[r.first_seg + s];
      fmt::format_to(it, "{}[{},{}]", s ? "," : "", seg.key, seg.length);
    }
    fmt::format_to(it, "],\"out\":{},\"kind\":\"{}\",\"conv\":{}", r.out, r.kind, r.conversation);
    if (r.agent != 0) fmt::format_to(it, ",\"agent\":{}", r.agent);
    fmt::format_to(it, "}}\n");
    if (text.size() >= (1u << 20)) {  // written in pieces: the text is never held whole
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string generate_native(const GenConfig& config) {
  std::ostringstream out;
  write_native(config, out);
  return std::move(out).str();
}

Trace generate_trace(const GenConfig& config, std::string source) {
  const ArrivalOrder sorted = generate_in_arrival_order(config);
  Trace trace;
  trace.source = std::move(source);
  trace.format = TraceFormat::kNative;
  TraceBuilder builder(trace);
  std::vector<Segment> segments;
  for (uint32_t pos = 0; pos < sorted.order.size(); ++pos) {
    const StoredRequest& r = sorted.generated.requests[sorted.order[pos]];
    // What the native reader makes of the line write_native writes for r. r.t is on the
    // millisecond grid, so it is the double that its "%.3f" text reads back as.
    TraceRequest request;
    request.id = pos;
    request.arrival_s = r.t;
    request.ns = r.ns;
    request.priority = static_cast<int16_t>(r.priority);
    request.output_tokens = r.out;
    request.parent = r.parent == kNoRequest ? kNoParent : sorted.id_of[r.parent];
    request.request_class = builder.class_of(r.kind);
    request.session = builder.session_of(r.conversation);
    request.agent = r.agent;
    segments.clear();
    for (uint32_t s = 0; s < r.num_segs; ++s) {
      const Segment& seg = sorted.generated.segs[r.first_seg + s];
      segments.push_back({content_key(ContentDomain::kNative, 0, seg.key), seg.length});
    }
    builder.add(request, segments);
  }
  return trace;
}

}  // namespace radixkv::tools
