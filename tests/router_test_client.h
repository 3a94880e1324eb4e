// What the router's tests ask of a running router over HTTP, and how they wait for it.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/child_process.h"
#include "tests/event_script.h"

namespace radixkv::testing {

// Waits up to `limit` for `done()` to hold, checking after 10 ms, then less and less often (up to
// every 200 ms): a check that asks the router for its whole index must not keep it from the work
// being waited for.
template <typename Pred>
bool eventually(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  std::chrono::milliseconds pause(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 3 / 2, std::chrono::milliseconds(200));
  }
  return true;
}

// GET /index?worker=NAME as (medium, block) pairs; empty when the router does not answer 200.
inline std::set<MediumBlock> router_index(httplib::Client& http, const std::string& worker) {
  std::set<MediumBlock> out;
  const auto res = http.Get(fmt::format("/index?worker={}", worker).c_str());
  if (!res || res->status != 200) return out;
  const nlohmann::json answer = nlohmann::json::parse(res->body);
  for (const auto& block : answer["blocks"]) {
    for (const auto& medium : block["mediums"]) {
      out.emplace(medium.get<std::string>(), block["hash"].get<uint64_t>());
    }
  }
  return out;
}

// The value of the series (`name{labels}`) in GET /metrics, or -1 when it is not there.
inline double router_metric(httplib::Client& http, const std::string& series) {
  const auto res = http.Get("/metrics");
  if (!res) return -1;
  const size_t at = res->body.find(fmt::format("\n{} ", series));
  return at == std::string::npos ? -1 : std::stod(res->body.substr(at + series.size() + 2));
}

// `radixkv router` as a process on a free loopback port, with an HTTP client to it.
struct RouterProcess {
  RouterProcess(const std::string& radixkv, std::vector<std::string> args)
      : process([&] {
          std::vector<std::string> argv = {radixkv, "router", "--listen", "127.0.0.1:0"};
          argv.insert(argv.end(), args.begin(), args.end());
          return argv;
        }()) {
    const std::optional<std::string> line = process.read_line(std::chrono::seconds(30));
    REQUIRE(line);
    const size_t colon = line->rfind(':', line->find(" for "));
    REQUIRE(colon != std::string::npos);
    port = std::stoi(line->substr(colon + 1));
    http = std::make_unique<httplib::Client>("127.0.0.1", port);
    http->set_read_timeout(10, 0);
  }
  // Stops it with SIGTERM; it must say so and exit 0.
  void terminate() {
    process.signal(SIGTERM);
    CHECK(process.read_line_starting("radixkv router: stopped", std::chrono::seconds(20)));
    CHECK(process.wait(std::chrono::seconds(20)) == 0);
  }
  std::set<MediumBlock> index_of(const std::string& worker) { return router_index(*http, worker); }
  std::string get_text(const std::string& path) {
    const auto res = http->Get(path.c_str());
    REQUIRE(res);
    return res->body;
  }
  nlohmann::json get_json(const std::string& path) { return nlohmann::json::parse(get_text(path)); }
  nlohmann::json route(const nlohmann::json& body) {
    const auto res = http->Post("/route", body.dump(), "application/json");
    REQUIRE(res);
    CHECK_MESSAGE(res->status == 200, res->body);
    return nlohmann::json::parse(res->body);
  }
  double metric(const std::string& series) { return router_metric(*http, series); }

  ChildProcess process;
  int port = 0;
  std::unique_ptr<httplib::Client> http;
};

}  // namespace radixkv::testing
