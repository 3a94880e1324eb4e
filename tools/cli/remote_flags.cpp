#include "tools/cli/remote_flags.h"

#include <fmt/format.h>

#include <chrono>

#include "remote/redis_store.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {
// Redis refuses a bulk string over 512 MB (proto-max-bulk-len); a filler stays well below.
constexpr uint64_t kMaxValueBytes = uint64_t{256} << 20;
constexpr std::string_view kValueFlags[] = {"--remote-prefix",      "--remote-timeout-ms",
                                            "--remote-value-bytes", "--remote-queue-pages",
                                            "--remote-write",       "--remote-prefetch"};
}  // namespace

void declare_remote_flags(CommandLine& cli, RemoteFlags& f) {
  cli.text("--remote", f.url, "URL",
           "a shared remote tier under the cache: redis://[user:password@]HOST:PORT[/DB] or "
           "redis+cluster://HOST:PORT[,HOST:PORT...]; the password may also come from "
           "REDISCLI_AUTH (cache and engine mode)");
  cli.text("--remote-prefix", f.prefix, "TEXT",
           "deployment prefix of every remote key (default radixkv): deployments sharing a Redis "
           "never share pages");
  cli.count("--remote-timeout-ms", f.timeout_ms, "MS",
            "longest wait for the remote store per round trip, connecting included (default 50)", 1,
            60000);
  cli.size("--remote-value-bytes", f.value_bytes,
           "filler bytes per remote value after its header, standing for the page's KV "
           "(default 0)");
  cli.count("--remote-queue-pages", f.queue_pages, "N",
            "pages waiting to be written to the remote store at most; more are dropped and "
            "counted (default 4096)",
            1, 1u << 24);
  cli.text("--remote-write", f.write, "back|through",
           "when pages go to the remote store: back (default), when the local tiers drop them; "
           "through, also as soon as they are cached (other servers hit them at once; one write "
           "per computed page)");
  cli.text("--remote-prefetch", f.prefetch, "off|best_effort|timeout",
           "engine mode: look a request's pages up in the background when it is queued; at admit, "
           "best_effort takes only what has arrived (never waits), timeout waits for the rest up "
           "to --remote-timeout-ms, then looks up what no prefetch asked for (default off: admit "
           "looks up synchronously)");
}

void check_remote_flags(const CommandLine& cli, const std::string& mode_refusal) {
  if (!cli.given("--remote")) {
    for (std::string_view flag : kValueFlags) {
      if (cli.given(flag)) throw UsageError(fmt::format("{}: needs --remote", cli.describe(flag)));
    }
    return;
  }
  if (!mode_refusal.empty()) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--remote"), mode_refusal));
  }
}

std::unique_ptr<remote::RemoteTier> make_remote_tier(const CommandLine& cli, const RemoteFlags& f,
                                                     const KvLayout& layout,
                                                     const std::string& model) {
  if (!cli.given("--remote")) return nullptr;
  remote::RedisUrl url;
  try {
    url = remote::RedisUrl::parse(f.url);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--remote"), e.what()));
  }
  if (f.value_bytes > kMaxValueBytes) {
    throw UsageError(fmt::format(
        "{}: {} bytes per value is more than the {} a Redis value may "
        "reasonably hold",
        cli.describe("--remote-value-bytes"), f.value_bytes, format_bytes(kMaxValueBytes)));
  }
  if (f.prefix.empty()) {
    throw UsageError(
        fmt::format("{}: the prefix must not be empty", cli.describe("--remote-prefix")));
  }
  if (f.write != "back" && f.write != "through") {
    throw UsageError(fmt::format("{}: '{}' is not a write mode (back or through)",
                                 cli.describe("--remote-write"), f.write));
  }
  const std::optional<remote::PrefetchPolicy> prefetch = remote::parse_prefetch_policy(f.prefetch);
  if (!prefetch) {
    throw UsageError(fmt::format("{}: '{}' is not a prefetch policy (off, best_effort or timeout)",
                                 cli.describe("--remote-prefetch"), f.prefetch));
  }
  remote::RedisStoreOptions options;
  options.timeout = std::chrono::milliseconds(f.timeout_ms);
  remote::RemoteTierConfig config;
  config.prefix = f.prefix;
  config.layout = layout;
  config.model = model;
  config.filler_bytes = f.value_bytes;
  config.queue_pages = f.queue_pages;
  config.write_through = f.write == "through";
  config.prefetch = *prefetch;
  config.prefetch_wait = options.timeout;
  return std::make_unique<remote::RemoteTier>(
      remote::make_redis_store(url, options), remote::make_redis_store(url, options), config,
      config.prefetch == remote::PrefetchPolicy::kOff ? nullptr
                                                      : remote::make_redis_store(url, options));
}

}  // namespace radixkv::tools
