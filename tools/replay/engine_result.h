// What engine mode adds to a replay's report (ReplayResult::engine), and the cost model that
// turns the scheduler's steps into simulated seconds. docs/engine.md explains both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace radixkv::tools {

// Simulated seconds of one batch step:
//   step = decode_s_per_step                      (one forward pass: reading the weights)
//        + prefill_s_per_token * prefill tokens   (compute-bound prompt work)
//        + decode_s_per_seq * decoding sequences  (each one's KV read, at a typical context)
// A step that computes nothing costs nothing. Defaults: Llama-3-8B in bf16 on one H100 SXM
// (989 dense bf16 TFLOPS, 3.35 TB/s): prefill 2 * 8.0e9 FLOP per token at 50 % MFU = 3.2e-5 s;
// a forward pass reads 16 GB of weights at 70 % of peak bandwidth = 7 ms; a sequence's KV at
// ~2,600 tokens of context (128 KiB per token) at that bandwidth = 1.5e-4 s.
struct CostModel {
  double prefill_s_per_token = 3.2e-5;
  double decode_s_per_step = 7e-3;
  double decode_s_per_seq = 1.5e-4;

  double step_seconds(uint64_t prefill_tokens, uint64_t decode_seqs) const {
    if (prefill_tokens == 0 && decode_seqs == 0) return 0.0;
    return decode_s_per_step + prefill_s_per_token * static_cast<double>(prefill_tokens) +
           decode_s_per_seq * static_cast<double>(decode_seqs);
  }
};

// One engine run over the whole trace. Times are simulated seconds on the cost model's clock,
// except where the name says wall.
struct EngineRun {
  bool cache = true;  // false: the same run with caching off (the baseline)
  uint64_t finished = 0;
  uint64_t rejected = 0;  // could never fit the pool (0 after the up-front check)
  uint64_t preemptions = 0;
  uint64_t readmitted = 0;
  uint64_t steps = 0;
  uint64_t held = 0;            // candidate-steps held behind an in-batch sharing leader
  uint64_t hit_tokens = 0;      // reused at each request's first admission
  uint64_t prefill_tokens = 0;  // prompt tokens computed, recomputation after preemption included
  uint64_t output_tokens = 0;   // answer tokens sampled
  uint64_t peak_running = 0;    // the largest batch one step ran (what finished in it included)
  uint64_t peak_waiting = 0;
  double simulated_seconds = 0;  // first arrival to last finish
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0, ttft_mean_s = 0, ttft_max_s = 0;

  double output_tokens_per_second() const {
    return simulated_seconds > 0 ? static_cast<double>(output_tokens) / simulated_seconds : 0.0;
  }
  double requests_per_second() const {
    return simulated_seconds > 0 ? static_cast<double>(finished) / simulated_seconds : 0.0;
  }
};

struct EngineResult {
  std::string schedule;  // fcfs, lpm, share, lpm-share
  uint32_t max_running = 0;
  uint32_t chunk_tokens = 0;
  CostModel cost;
  uint64_t out_of_order = 0;  // requests that arrive before one written above them in the trace
  EngineRun run;              // the run the rest of the report describes
  std::optional<EngineRun> no_cache;  // the same trace with caching off, side by side
  // With a host tier: the same trace on the device pool alone, side by side, and the copy
  // bandwidths (GB/s) the run was priced with.
  std::optional<EngineRun> device_only;
  double h2d_gbps = 0, d2h_gbps = 0;
};

}  // namespace radixkv::tools
