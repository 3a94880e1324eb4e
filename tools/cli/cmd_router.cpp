// `radixkv router`: the cache-aware router service (router/router_cli.h, docs/cluster.md). Flags
// with the command line's conventions (tools/cli/flags.h); router::run_router() runs it until
// SIGTERM or SIGINT.
#include <fmt/format.h>

#include <ostream>

#include "router/router_cli.h"
#include "tools/cli/cli.h"
#include "tools/cli/flags.h"

namespace radixkv::tools {

namespace {

constexpr const char* kDescription =
    "Routes requests to the worker whose KV cache holds the longest prefix, balanced against "
    "load,\nfrom the workers' KV events in vLLM's wire format (radixkv replay --kv-events, or vLLM "
    "with\n--kv-events-config). Answers POST /route, GET /metrics (Prometheus), GET /healthz and "
    "GET\n/index over HTTP; stops gracefully on SIGTERM. docs/cluster.md says how to run it in "
    "front\nof engines.";

}  // namespace

int run_router_command(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  router::RouterFlags f;
  uint64_t max_index_pages = f.max_index_pages;
  CommandLine cli("router", kDescription);
  cli.texts("--worker", f.workers, "NAME=PUB,REPLAY",
            "a worker's KV event endpoints, e.g. gpu0=tcp://10.0.0.5:5557,tcp://10.0.0.5:5558 "
            "(repeat per worker)")
      ->required();
  cli.text(
      "--listen", f.listen, "HOST:PORT",
      fmt::format("HTTP address (default {}; port 0: any free port, printed first)", f.listen));
  cli.text("--topic", f.topic, "TOPIC", "event topic the workers publish on (default \"\")");
  cli.count("--max-index-pages", max_index_pages, "N",
            fmt::format("bound of the index in blocks; least recently used leaves go first "
                        "(default {})",
                        f.max_index_pages),
            1);
  cli.real(
      "--worker-timeout", f.worker_timeout_seconds, "SECONDS",
      fmt::format("a silent worker is dropped after this (default {})", f.worker_timeout_seconds),
      0, 86400);
  cli.real("--overlap-weight", f.overlap_weight, "W",
           "weight of the blocks to prefill against the load (Dynamo's overlap_score_weight, "
           "default 1)",
           0, 1e9);
  if (!cli.parse(args, out)) return kExitOk;  // --help
  f.max_index_pages = max_index_pages;
  return router::run_router(f, out, err);
}

}  // namespace radixkv::tools
