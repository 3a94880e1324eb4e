// radixkv-router: the cache-aware router service (router/router_cli.h says what it does).
#include <iostream>

#include "router/router_cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "radixkv router: routes requests to the worker whose KV cache holds the longest prefix, "
      "balanced against load, from the workers' KV events (vLLM's wire format)"};
  radixkv::router::RouterFlags flags;
  radixkv::router::add_router_flags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  return radixkv::router::run_router(flags, std::cout, std::cerr);
}
