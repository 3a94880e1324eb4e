// What the router's tests ask of a running router over HTTP, and how they wait for it.
#pragma once

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

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

}  // namespace radixkv::testing
