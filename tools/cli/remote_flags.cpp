#include "tools/cli/remote_flags.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>

#include "remote/redis_store.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {
// Redis refuses a bulk string over 512 MB (proto-max-bulk-len); a filler stays well below.
constexpr uint64_t kMaxValueBytes = uint64_t{256} << 20;
// A password file holds one line; anything longer than this is not one.
constexpr std::size_t kMaxPasswordFileBytes = 64 * 1024;
constexpr std::string_view kValueFlags[] = {
    "--remote-prefix", "--remote-timeout-ms", "--remote-value-bytes",  "--remote-queue-pages",
    "--remote-write",  "--remote-prefetch",   "--remote-password-file"};

// The password in `path`: its one line, without the line end. Throws UsageError naming the flag;
// warns on `err` when users other than the owner may read the file.
std::string read_password_file(const CommandLine& cli, const std::string& path, std::ostream& err) {
  const std::string flag = cli.describe("--remote-password-file");
  const auto refuse = [&](const std::string& why) {
    throw UsageError(fmt::format("{}: '{}' {}", flag, path, why));
  };
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0)
    refuse(fmt::format("cannot be read: {}", std::strerror(errno)));
  if (!S_ISREG(status.st_mode)) refuse("is not a file");
  if (status.st_size > static_cast<off_t>(kMaxPasswordFileBytes)) {
    refuse(fmt::format("holds {} bytes, more than a password's line ({} at most)", status.st_size,
                       kMaxPasswordFileBytes));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) refuse(fmt::format("cannot be read: {}", std::strerror(errno)));
  std::string password(std::istreambuf_iterator<char>(file), {});
  if (!file.good() && !file.eof()) refuse("cannot be read");
  if (password.ends_with('\n')) password.pop_back();
  if (password.ends_with('\r')) password.pop_back();
  if (password.empty()) refuse("holds no password");
  if (password.find('\n') != std::string::npos) refuse("holds more than one line");
  if ((status.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    err << fmt::format(
        "radixkv replay: warning: {} '{}' may be read by other users (mode {:o}); chmod 600 it\n",
        flag, path, status.st_mode & 0777);
  }
  return password;
}

// The URL with its password from where the flags say (remote_flags.h).
remote::RedisUrl url_of(const CommandLine& cli, const RemoteFlags& f, std::ostream& err) {
  remote::RedisUrl url;
  try {
    url = remote::RedisUrl::parse(f.url, std::nullopt);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--remote"), e.what()));
  }
  if (url.password && cli.given("--remote-password-file")) {
    throw UsageError(fmt::format("{}: the URL holds a password too; give it once, in the file",
                                 cli.describe("--remote-password-file")));
  }
  if (url.password) {
    if (cli.given_on_command_line("--remote")) {  // a --config file is not in /proc/PID/cmdline
      err << fmt::format(
          "radixkv replay: warning: --remote holds a password, which other users of this machine "
          "can read (ps, /proc/PID/cmdline); give it in --remote-password-file or REDISCLI_AUTH "
          "instead\n");
    }
  } else if (cli.given("--remote-password-file")) {
    url.password = read_password_file(cli, f.password_file, err);
  } else {
    url.password = remote::RedisUrl::environment_password();
  }
  return url;
}

}  // namespace

void declare_remote_flags(CommandLine& cli, RemoteFlags& f) {
  cli.text("--remote", f.url, "URL",
           "a shared remote tier under the cache: redis://[user:@]HOST:PORT[/DB] or "
           "redis+cluster://[user:@]HOST:PORT[,HOST:PORT...] (cache and engine mode); the password "
           "from --remote-password-file or REDISCLI_AUTH (redis://[user]:password@... works too, "
           "but other users of the machine can read it in the process list)");
  cli.text("--remote-password-file", f.password_file, "FILE",
           "the remote store's password: the one line of FILE (chmod 600 it)");
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
                                                     const std::string& model, std::ostream& err) {
  if (!cli.given("--remote")) return nullptr;
  const remote::RedisUrl url = url_of(cli, f, err);
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

bool check_remote_answered(remote::RemoteTier& tier, std::ostream& err) {
  tier.drain();
  const remote::RemoteTierStats s = tier.stats();
  if (!s.never_answered()) return true;
  err << fmt::format(
      "radixkv replay: error: the remote tier {} never answered ({} calls failed, {} skipped in "
      "reconnect backoff; the first error: {}): the run cached locally only; check --remote, the "
      "password (--remote-password-file, REDISCLI_AUTH) and the server\n",
      tier.describe(), s.errors + s.prefetch.errors, s.unavailable + s.prefetch.unavailable,
      s.first_error.empty() ? "none kept" : s.first_error);
  return false;
}

}  // namespace radixkv::tools
