// events/endpoint.h: the ZeroMQ endpoints radixkv's sockets take, refused with the reason before a
// socket sees them (issue 28: tcp://256.1.1.1:5557 was taken, and a connecting socket retried it
// silently forever).
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "events/endpoint.h"

using radixkv::events::check_endpoint;
using radixkv::events::check_endpoints;
using radixkv::events::EndpointUse;

TEST_CASE("issue 28: endpoints a socket takes, binding or connecting") {
  for (const char* endpoint :
       {"tcp://127.0.0.1:5557", "tcp://10.0.0.5:1", "tcp://255.255.255.255:65535",
        "tcp://localhost:5557", "tcp://worker-0.cache.svc.cluster.local.:5557", "tcp://gpu_0:5557",
        "tcp://[::1]:5557", "tcp://::1:5557", "ipc:///tmp/radixkv.sock", "inproc://events"}) {
    CAPTURE(endpoint);
    CHECK_NOTHROW(check_endpoint(endpoint, EndpointUse::kConnect));
    CHECK_NOTHROW(check_endpoint(endpoint, EndpointUse::kBind));
  }
  for (const char* endpoint : {"tcp://*:5557", "tcp://127.0.0.1:*", "tcp://*:*", "tcp://[::]:0",
                               "tcp://eth0:5557", "tcp://:::5557"}) {
    CAPTURE(endpoint);
    CHECK_NOTHROW(check_endpoint(endpoint, EndpointUse::kBind));
  }
}

TEST_CASE("issue 28: endpoints no socket takes are refused, saying why") {
  const std::pair<const char*, const char*> cases[] = {
      {"tcp://256.1.1.1:5557", "'256.1.1.1' is not an IPv4 address (four numbers from 0 to 255"},
      {"tcp://1.2.3:5557", "'1.2.3' is not an IPv4 address"},
      {"tcp://1.2.3.4.5:5557", "'1.2.3.4.5' is not an IPv4 address"},
      {"tcp://127.0.0.1:65536", "port '65536' is not a number from 1 to 65535"},
      {"tcp://127.0.0.1:55x", "port '55x' is not a number"},
      {"tcp://127.0.0.1:", "port '' is not a number"},
      {"tcp://127.0.0.1", "expected tcp://HOST:PORT"},
      {"tcp://:5557", "no host before the port"},
      {"tcp://[::1:5557", "'[::1' is not an IPv6 address in brackets"},
      {"tcp://[::g]:5557", "'[::g]' is not an IPv6 address in brackets"},
      {"tcp://bad host:5557", "'bad host' is not a host name"},
      {"tcp://-lead.example:5557", "'-lead.example' is not a host name"},
      {"tcp://a..b:5557", "'a..b' is not a host name"},
      {"tcp://10.0.0.1;10.0.0.2:5557", "a source address (SOURCE;HOST:PORT) is not supported"},
      {"udp://127.0.0.1:5557", "unknown transport 'udp' (known: tcp, ipc, inproc)"},
      {"127.0.0.1:5557", "expected TRANSPORT://ADDRESS"},
      {"ipc://", "an ipc path needs 1 to 107 bytes"},
      {"inproc://", "an inproc endpoint needs a name"},
  };
  for (const auto& [endpoint, why] : cases) {
    CAPTURE(endpoint);
    const std::string message = "endpoint '" + std::string(endpoint) + "': " + why;
    for (EndpointUse use : {EndpointUse::kBind, EndpointUse::kConnect}) {
      CHECK_THROWS_WITH_AS(check_endpoint(endpoint, use), doctest::Contains(message.c_str()),
                           std::invalid_argument);
    }
  }
  CHECK_THROWS_WITH_AS(check_endpoint("ipc://" + std::string(108, 'p'), EndpointUse::kBind),
                       doctest::Contains("an ipc path needs 1 to 107 bytes"),
                       std::invalid_argument);
  CHECK_NOTHROW(check_endpoint("ipc://" + std::string(107, 'p'), EndpointUse::kBind));
  CHECK_THROWS_WITH_AS(
      check_endpoint("tcp://a" + std::string(63, 'b') + ":1", EndpointUse::kConnect),
      doctest::Contains("is not a host name"), std::invalid_argument);
  // What only a socket that binds takes.
  for (const auto& [endpoint, why] :
       {std::pair{"tcp://*:5557", "'*' (every interface) is for binding only"},
        std::pair{"tcp://127.0.0.1:*", "port '*' (any free port) is for binding only"},
        std::pair{"tcp://127.0.0.1:0", "port 0 (any free port) is for binding only"}}) {
    CAPTURE(endpoint);
    CHECK_THROWS_WITH_AS(check_endpoint(endpoint, EndpointUse::kConnect), doctest::Contains(why),
                         std::invalid_argument);
  }
  // Several at once: the first bad one, after the context.
  CHECK_THROWS_WITH_AS(check_endpoints({"tcp://127.0.0.1:1", "tcp://256.0.0.1:2"},
                                       EndpointUse::kConnect, "--worker w0=..."),
                       "--worker w0=...: endpoint 'tcp://256.0.0.1:2': '256.0.0.1' is not an IPv4 "
                       "address (four numbers from 0 to 255, dot-separated)",
                       std::invalid_argument);
}
