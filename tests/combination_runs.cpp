#include "tests/combination_runs.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>
#include <zmq.hpp>

#include "tests/child_process.h"
#include "tests/zmq_test_client.h"

namespace radixkv::testing {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kRunDeadline = 300s;   // a run on a busy machine (sanitizers) included
constexpr auto kFetchDeadline = 60s;  // for the whole event stream, once the report is out
constexpr const char* kEventsLine = "radixkv replay: kv events on ";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(0));
}

// The next line starting with `prefix`; the lines before it go to `log`. nullopt at its end.
std::optional<std::string> read_until(ChildProcess& child, const std::string& prefix,
                                      std::string& log, Clock::time_point deadline) {
  while (std::optional<std::string> line = child.read_line(left(deadline))) {
    if (line->starts_with(prefix)) return line;
    log += *line + "\n";
  }
  return std::nullopt;
}

// The stream of a run's replay socket from batch 0, until it holds `expected` batches.
void fetch_events(const std::string& replay_endpoint, uint64_t expected, RunOutput& out) {
  zmq::context_t context;
  const Clock::time_point deadline = Clock::now() + kFetchDeadline;
  while (out.batches.size() < expected && Clock::now() < deadline) {
    const auto start = static_cast<int64_t>(out.batches.size());
    const Replayed replayed = fetch_replay(context, replay_endpoint, start, 5s);
    for (const auto& [seq, payload] : replayed.batches) {
      if (seq != static_cast<int64_t>(out.batches.size())) {
        out.events_error = fmt::format("batch {} came where {} was due", seq, out.batches.size());
        return;
      }
      out.batches.push_back(payload);
    }
    if (replayed.batches.empty()) std::this_thread::sleep_for(20ms);  // still being published
  }
  if (out.batches.size() > expected) {
    out.events_error =
        fmt::format("{} batches where the report says {}", out.batches.size(), expected);
  } else if (out.batches.size() < expected) {
    out.events_error =
        fmt::format("fetched {} of {} batches in {} s", out.batches.size(), expected,
                    std::chrono::duration_cast<std::chrono::seconds>(kFetchDeadline).count());
  }
}

std::optional<std::set<MediumBlock>> read_pages(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::set<MediumBlock> pages;
  for (const auto& pair : nlohmann::json::parse(in)) {
    pages.emplace(pair[0].get<std::string>(), pair[1].get<uint64_t>());
  }
  return pages;
}

}  // namespace

RunBatch::RunBatch(std::string binary, std::string scratch)
    : binary_(std::move(binary)), scratch_(std::move(scratch)) {}

std::size_t RunBatch::add(const std::vector<std::string>& args) {
  const auto [at, added] = ids_.emplace(args, args_.size());
  if (added) args_.push_back(args);
  return at->second;
}

void RunBatch::run(unsigned jobs) {
  outputs_.resize(args_.size());
  std::atomic<std::size_t> next{done_};
  const auto worker = [&] {
    for (std::size_t id; (id = next++) < args_.size();) outputs_[id] = run_one(id);
  };
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < std::max(jobs, 1u); ++j) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  done_ = args_.size();
}

RunOutput RunBatch::run_one(std::size_t id) const {
  const Clock::time_point start = Clock::now(), deadline = start + kRunDeadline;
  const std::string scratch = fmt::format("{}/run-{}", scratch_, id);
  std::filesystem::create_directories(scratch);
  const std::string prefix = fmt::format("combinations-{}-{}", ::getpid(), id);
  RunOutput out;
  for (const std::string& arg : args_[id]) {
    out.args.push_back(replace_all(replace_all(arg, "{scratch}", scratch), "{prefix}", prefix));
  }
  // stderr on the stdout the test reads (the events line, refusals).
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", binary_};
  argv.insert(argv.end(), out.args.begin(), out.args.end());
  ChildProcess child(argv);
  const bool events = std::find(out.args.begin(), out.args.end(), "--kv-events") != out.args.end();
  std::optional<std::string> endpoints;
  if (events) endpoints = read_until(child, kEventsLine, out.log, deadline);
  if (const std::optional<std::string> report = read_until(child, "{", out.log, deadline)) {
    out.report = nlohmann::json::parse(*report, nullptr, false);
  }
  if (events && endpoints && out.report.is_object()) {
    // "radixkv replay: kv events on PUB, replay on REPLAY"
    const std::size_t replay = endpoints->find(", replay on ");
    const uint64_t expected = out.report.value("kv_events_published", uint64_t{0});
    if (replay == std::string::npos) {
      out.events_error = "no replay endpoint in: " + *endpoints;
    } else {
      fetch_events(endpoints->substr(replay + 12), expected, out);
    }
    child.signal(SIGTERM);  // it lingers for its consumer
  } else if (events) {
    out.events_error = "no events line or no report";
  }
  read_until(child, "\x01", out.log, deadline);  // the rest of what it prints, to its end
  out.status = child.wait(left(deadline) + 10s);
  if (events) out.dumped_pages = read_pages(scratch + "/pages.json");
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace radixkv::testing
