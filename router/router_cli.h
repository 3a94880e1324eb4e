// The router service's settings as `radixkv router` takes them (tools/cli/cmd_router.cpp parses
// the flags), and its run loop.
//
//   --worker NAME=PUB,REPLAY[,dp=N]   a worker's KV event endpoints (repeat per worker), e.g.
//                              w0=tcp://10.0.0.5:5557,tcp://10.0.0.5:5558; with dp=N, an engine
//                              of N data parallel ranks, each its own worker NAME/dpR on the
//                              endpoints offset by R as vLLM offsets them (tcp: port + R; inproc:
//                              suffix _dpR), taking only batches of rank R
//   --listen HOST:PORT         the HTTP address (default 127.0.0.1:8000; port 0: any free port,
//                              printed on the first line of output)
//   --topic TOPIC              the event topic the workers publish on (default "")
//   --max-index-pages N        the index's bound in blocks (default 1,000,000)
//   --worker-timeout SECONDS   a silent worker is dropped after this (default 10)
//   --overlap-weight W         Dynamo's overlap_score_weight (default 1.0)
//   --tier-weight MEDIUM=W     a medium's weight in [0, 1] (repeat; defaults GPU=1, CPU=0.8,
//                              DISK=0.3, any other 0.3, set as *=W: router/tier_weights.h)
//   --max-batch-bytes N        a larger event message drops its connection (default 64 MiB)
//   --max-body-bytes N         a larger HTTP body is refused, 413 (default 16 MiB)
//   --http-timeout SECONDS     a connection's time to send a whole request (default 10)
//   --max-connections N        open HTTP connections; past it, new ones are closed (default 1024)
//   --max-pending-routes N     routes kept for POST /observe (default 65,536; at most 2^24)
//   --route-ttl SECONDS        a route older than this cannot be observed (default 600)
//
// run_router() runs until SIGTERM or SIGINT, then stops gracefully and returns 0; it returns 2
// with a message naming the flag when the flags are wrong or the service cannot start.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "router/router_service.h"

namespace radixkv::router {

struct RouterFlags {
  std::vector<std::string> workers;
  std::string listen = "127.0.0.1:8000";
  std::string topic;
  size_t max_index_pages = 1'000'000;
  double worker_timeout_seconds = 10;
  double overlap_weight = 1.0;
  std::vector<std::string> tier_weights;
  size_t max_batch_bytes = 64u << 20;
  size_t max_body_bytes = 16u << 20;
  double http_timeout_seconds = 10;
  size_t max_connections = 1024;
  size_t max_pending_routes = 65'536;
  double route_ttl_seconds = 600;
};

// vLLM's offset of an endpoint for data parallel rank `rank` (ZmqEventPublisher's
// offset_endpoint_port): tcp's port + rank, inproc's name + "_dp<rank>". Throws
// std::invalid_argument for other transports, or a tcp endpoint without a numeric port.
std::string offset_endpoint(const std::string& endpoint, int64_t rank);

// Throws std::invalid_argument naming the flag.
RouterOptions router_options(const RouterFlags& flags);
int run_router(const RouterFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace radixkv::router
