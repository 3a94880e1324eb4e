// radixkv_router_load: the router end to end (bench/README.md, "The router"). Eight publishers
// (radixkv's ZmqEventPublisher on loopback, vLLM's wire format) fill a `radixkv router` process
// with bench/router_world.h's 10^6 blocks of 4,096-token prompts; the fill's rate is events (and
// blocks) applied per second, from the first publish until the router's index holds them all. Then
// client threads POST /route with 4,096-token prompts (half cached prompts, a third a system
// prompt and new tokens, the rest new) for --seconds while the publishers go on storing prompts
// (--churn events a second), and the client-side latencies give p50 / p99.
//
//   radixkv_router_load --radixkv build/tools/radixkv [--workers 8] [--blocks 1000000]
//                       [--clients 4] [--seconds 20] [--churn 50] [--json]
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/router_world.h"
#include "events/zmq_publisher.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace radixkv;

struct Flags {
  std::string radixkv;
  uint32_t workers = 8;
  uint64_t blocks = 1'000'000;
  int clients = 4;
  double seconds = 20;
  double churn = 50;  // events a second, over all publishers
  bool json = false;
};

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(name + ": needs a value");
      return argv[++i];
    };
    if (name == "--radixkv")
      f.radixkv = value();
    else if (name == "--workers")
      f.workers = static_cast<uint32_t>(std::stoul(value()));
    else if (name == "--blocks")
      f.blocks = std::stoull(value());
    else if (name == "--clients")
      f.clients = std::stoi(value());
    else if (name == "--seconds")
      f.seconds = std::stod(value());
    else if (name == "--churn")
      f.churn = std::stod(value());
    else if (name == "--json")
      f.json = true;
    else
      throw std::invalid_argument("unknown flag " + name);
  }
  if (f.radixkv.empty()) throw std::invalid_argument("--radixkv PATH is required");
  return f;
}

// `radixkv router` as a child, its stdout read for the port.
struct Router {
  Router(const std::string& radixkv, const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> argv = {radixkv, "router", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> c;
    for (std::string& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    if (::posix_spawn(&pid, c[0], &actions, nullptr, c.data(), environ) != 0) {
      throw std::runtime_error("cannot start " + radixkv);
    }
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    std::string line;
    char ch;
    while (::read(fds[0], &ch, 1) == 1 && ch != '\n') line += ch;
    ::close(fds[0]);
    const size_t colon = line.rfind(':', line.find(" for "));
    if (colon == std::string::npos) throw std::runtime_error("the router said: " + line);
    port = std::stoi(line.substr(colon + 1));
  }
  ~Router() {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  size_t rss_bytes() const {
    std::ifstream status(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
  }
  pid_t pid = -1;
  int port = 0;
};

double metric(httplib::Client& http, const std::string& series) {
  const auto res = http.Get("/metrics");
  if (!res) return -1;
  const size_t at = res->body.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(res->body.substr(at + series.size() + 2));
}

std::string route_body(const std::vector<TokenId>& tokens) {
  std::string body = R"({"page_size": 16, "tokens": [)";
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (t > 0) body.push_back(',');
    body.append(std::to_string(tokens[t]));
  }
  return body.append("]}");
}

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

int run(const Flags& flags) {
  bench::RouterWorld world({.workers = flags.workers, .blocks = flags.blocks});
  std::vector<std::unique_ptr<events::ZmqEventPublisher>> publishers;
  std::vector<std::string> router_args;
  for (uint32_t w = 0; w < flags.workers; ++w) {
    events::PublisherOptions o;
    o.endpoint = "tcp://127.0.0.1:*";
    o.replay_endpoint = "tcp://127.0.0.1:*";
    o.replay_batches = 1'000'000;
    publishers.push_back(std::make_unique<events::ZmqEventPublisher>(o));
    router_args.insert(router_args.end(),
                       {"--worker", fmt::format("w{}={},{}", w, publishers.back()->bound_endpoint(),
                                                publishers.back()->bound_replay_endpoint())});
  }
  router_args.insert(router_args.end(),
                     {"--max-index-pages", std::to_string(flags.blocks), "--worker-timeout", "60"});
  Router router(flags.radixkv, router_args);
  httplib::Client http("127.0.0.1", router.port);
  http.set_read_timeout(30, 0);

  // The fill: every event one batch, as an engine publishes a step's.
  const auto fill_start = Clock::now();
  uint64_t fill_events = 0;
  std::vector<uint64_t> published(flags.workers, 0);
  uint32_t worker = 0;
  events::BlockStored event;
  while (world.next_fill(worker, event)) {
    publishers[worker]->publish({0, {std::move(event)}, 0});
    ++published[worker];
    ++fill_events;
  }
  const double target = static_cast<double>(world.blocks_stored());
  const auto applied = [&] {  // every batch of every worker
    for (uint32_t w = 0; w < flags.workers; ++w) {
      if (metric(http, fmt::format("radixkv_router_batches_applied_total{{worker=\"w{}\"}}", w)) <
          static_cast<double>(published[w])) {
        return false;
      }
    }
    return true;
  };
  while (!applied()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double fill_seconds = std::chrono::duration<double>(Clock::now() - fill_start).count();
  const size_t rss_filled = router.rss_bytes();

  // Routing, with the publishers still storing prompts.
  std::mt19937_64 rng(7);
  std::vector<std::string> bodies;
  for (int i = 0; i < 240; ++i) {
    const auto kind = i % 6 < 3   ? bench::RouterWorld::Query::kCached
                      : i % 6 < 5 ? bench::RouterWorld::Query::kSystem
                                  : bench::RouterWorld::Query::kMiss;
    bodies.push_back(route_body(world.query(kind, static_cast<uint32_t>(i % flags.workers), rng)));
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> churned{0};
  std::thread churn([&] {
    const auto gap = std::chrono::duration<double>(1.0 / std::max(flags.churn, 1e-3));
    for (uint32_t w = 0; !stop.load(); w = (w + 1) % flags.workers) {
      if (flags.churn <= 0) break;
      publishers[w]->publish({0, {world.churn(w)}, 0});
      ++churned;
      std::this_thread::sleep_for(gap);
    }
  });
  std::mutex mutex;
  std::vector<double> latencies;
  std::atomic<uint64_t> errors{0};
  std::vector<std::thread> clients;
  const auto route_start = Clock::now();
  const auto route_end = route_start + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(flags.seconds));
  for (int c = 0; c < flags.clients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", router.port);
      client.set_read_timeout(30, 0);
      std::vector<double> mine;
      for (size_t i = static_cast<size_t>(c); Clock::now() < route_end; i += flags.clients) {
        const auto start = Clock::now();
        const auto res = client.Post("/route", bodies[i % bodies.size()], "application/json");
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        if (!res || res->status != 200) {
          ++errors;
          continue;
        }
        mine.push_back(us);
      }
      std::lock_guard lock(mutex);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (std::thread& t : clients) t.join();
  const double route_seconds = std::chrono::duration<double>(Clock::now() - route_start).count();
  stop = true;
  churn.join();
  std::sort(latencies.begin(), latencies.end());
  const size_t rss_end = router.rss_bytes();
  const double pages = metric(http, "radixkv_router_index_pages_total");

  const double events_per_s = static_cast<double>(fill_events) / fill_seconds;
  const double blocks_per_s = target / fill_seconds;
  if (flags.json) {
    std::cout
        << fmt::format(
               R"({{"workers": {}, "blocks": {}, "fill_events": {}, "fill_seconds": {:.3f}, )"
               R"("events_per_s": {:.1f}, "blocks_per_s": {:.1f}, "rss_filled_mib": {:.1f}, )"
               R"("routes": {}, "errors": {}, "routes_per_s": {:.1f}, "p50_us": {:.1f}, "p90_us": {:.1f}, )"
               R"("p99_us": {:.1f}, "p999_us": {:.1f}, "max_us": {:.1f}, "churn_events": {}, )"
               R"("index_pages": {}, "rss_end_mib": {:.1f}}})",
               flags.workers, target, fill_events, fill_seconds, events_per_s, blocks_per_s,
               static_cast<double>(rss_filled) / (1 << 20), latencies.size(), errors.load(),
               static_cast<double>(latencies.size()) / route_seconds, percentile(latencies, 0.5),
               percentile(latencies, 0.9), percentile(latencies, 0.99),
               percentile(latencies, 0.999), latencies.empty() ? 0 : latencies.back(),
               churned.load(), pages, static_cast<double>(rss_end) / (1 << 20))
        << std::endl;
  } else {
    std::cout << fmt::format(
        "fill: {} events, {:.0f} blocks over {} workers in {:.2f} s: {:.0f} events/s, {:.0f} "
        "blocks/s; router RSS {:.0f} MiB\n"
        "route: {} requests of 4,096 tokens from {} clients in {:.1f} s ({:.0f}/s, {} errors), "
        "{} churn events: p50 {:.0f} us, p90 {:.0f} us, p99 {:.0f} us, p99.9 {:.0f} us, max "
        "{:.0f} us; index {:.0f} pages, RSS {:.0f} MiB\n",
        fill_events, target, flags.workers, fill_seconds, events_per_s, blocks_per_s,
        static_cast<double>(rss_filled) / (1 << 20), latencies.size(), flags.clients, route_seconds,
        static_cast<double>(latencies.size()) / route_seconds, errors.load(), churned.load(),
        percentile(latencies, 0.5), percentile(latencies, 0.9), percentile(latencies, 0.99),
        percentile(latencies, 0.999), latencies.empty() ? 0 : latencies.back(), pages,
        static_cast<double>(rss_end) / (1 << 20));
  }
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "radixkv_router_load: " << e.what() << '\n';
    return 2;
  }
}
