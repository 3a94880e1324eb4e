// ZeroMQ endpoints as radixkv's sockets take them (the KV event publisher and its replay socket,
// the router's feed from each worker), checked before any socket sees them. ZeroMQ resolves the
// host of a connecting tcp socket later, in the background, and keeps retrying: a typo such as
// tcp://256.1.1.1:5557 would be taken without a word and publish or receive nothing.
//
//   tcp://HOST:PORT   HOST: an IPv4 address (four numbers from 0 to 255), an IPv6 address in
//                     brackets ([::1]; bare, as ZeroMQ also reads it), or a host name (letters,
//                     digits, '-', '_', dots; labels of 1 to 63 characters, 253 at most); a socket
//                     that binds also takes '*' (every interface) or an interface name (eth0).
//                     PORT: 1 to 65535; a socket that binds also takes '*' or 0 (a free port).
//   ipc://PATH        a path of 1 to 107 bytes (a Unix socket's sun_path)
//   inproc://NAME     a name of at least 1 byte
// Other transports (pgm, epgm, vmci, ws, udp) and tcp's source address form (SRC;HOST:PORT) are
// refused: nothing in radixkv speaks them.
#pragma once

#include <initializer_list>
#include <string_view>

namespace radixkv::events {

enum class EndpointUse { kBind, kConnect };

// Throws std::invalid_argument "endpoint 'ENDPOINT': why" when `endpoint` is not one a socket
// used that way takes.
void check_endpoint(std::string_view endpoint, EndpointUse use);
// Each of `endpoints` as above; the message of the first bad one starts with "CONTEXT: " (a flag
// and its value, say).
void check_endpoints(std::initializer_list<std::string_view> endpoints, EndpointUse use,
                     std::string_view context);

}  // namespace radixkv::events
