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
    "load,\nfrom the workers' KV events in vLLM's wire format (vLLM with --kv-events-config, "
    "SGLang, "
    "LMCache,\nradixkv replay --kv-events), keying blocks by their tokens so that any engine's "
    "blocks are\nfound by a request's tokens. Answers POST /route, GET /metrics (Prometheus), GET "
    "/healthz and\nGET /index over HTTP; stops on SIGTERM. docs/cluster.md says how to run it in "
    "front of engines.";

}  // namespace

int run_router_command(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  router::RouterFlags f;
  uint64_t max_index_pages = f.max_index_pages;
  CommandLine cli("router", kDescription);
  cli.texts("--worker", f.workers, "NAME=PUB,REPLAY[,dp=N]",
            "a worker's KV event endpoints, e.g. gpu0=tcp://10.0.0.5:5557,tcp://10.0.0.5:5558 "
            "(repeat per worker); dp=N: N data parallel ranks, workers NAME/dp0.., on ports "
            "offset by rank as vLLM offsets them")
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
  cli.texts("--tier-weight", f.tier_weights, "MEDIUM=W",
            "weight in [0, 1] of a block on MEDIUM (repeat; defaults GPU=1, CPU=0.8, DISK=0.3, "
            "*=0.3 for any other: llm-d's tiered scorer)");
  uint64_t max_batch_bytes = f.max_batch_bytes, max_body_bytes = f.max_body_bytes,
           max_connections = f.max_connections, max_pending_routes = f.max_pending_routes;
  cli.size("--max-batch-bytes", max_batch_bytes,
           "a larger KV event message drops its connection (default 64MiB)");
  cli.size("--max-body-bytes", max_body_bytes,
           "a larger HTTP body is refused with 413 (default 16MiB)");
  cli.real("--http-timeout", f.http_timeout_seconds, "SECONDS",
           fmt::format("a connection's time to send a whole request (default {})",
                       f.http_timeout_seconds),
           0.01, 3600);
  cli.count("--max-connections", max_connections, "N",
            fmt::format("open HTTP connections; past it new ones are closed (default {})",
                        f.max_connections),
            1);
  cli.count("--max-pending-routes", max_pending_routes, "N",
            fmt::format("routes kept for POST /observe; an older one is forgotten (default {})",
                        f.max_pending_routes),
            1, 1u << 24);
  cli.real(
      "--route-ttl", f.route_ttl_seconds, "SECONDS",
      fmt::format("a route older than this cannot be observed (default {})", f.route_ttl_seconds),
      0.001, 86400);
  if (!cli.parse(args, out)) return kExitOk;  // --help
  f.max_index_pages = max_index_pages;
  f.max_batch_bytes = max_batch_bytes;
  f.max_body_bytes = max_body_bytes;
  f.max_connections = max_connections;
  f.max_pending_routes = max_pending_routes;
  return router::run_router(f, out, err);
}

}  // namespace radixkv::tools
