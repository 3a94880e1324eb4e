// The router service's settings as `radixkv router` takes them (tools/cli/cmd_router.cpp parses
// the flags), and its run loop.
//
//   --worker NAME=PUB,REPLAY   a worker's KV event endpoints (repeat per worker), e.g.
//                              w0=tcp://10.0.0.5:5557,tcp://10.0.0.5:5558
//   --listen HOST:PORT         the HTTP address (default 127.0.0.1:8000; port 0: any free port,
//                              printed on the first line of output)
//   --topic TOPIC              the event topic the workers publish on (default "")
//   --max-index-pages N        the index's bound in blocks (default 1,000,000)
//   --worker-timeout SECONDS   a silent worker is dropped after this (default 10)
//   --overlap-weight W         Dynamo's overlap_score_weight (default 1.0)
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
};

// Throws std::invalid_argument naming the flag.
RouterOptions router_options(const RouterFlags& flags);
int run_router(const RouterFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace radixkv::router
