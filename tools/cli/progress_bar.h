// A progress bar on stderr for long replays: redrawn at most ten times a second, and erased at
// the end. Drawn only when asked (stdout and stderr are terminals, and no --no-progress).
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace radixkv::tools {

class ProgressBar {
 public:
  ProgressBar(std::ostream& err, bool enabled) : err_(err), enabled_(enabled) {}
  void operator()(std::size_t done, std::size_t total) {
    if (!enabled_ || total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(kWidth * done / total);
    err_ << fmt::format("\r  [{:=<{}}{:<{}}] {:3}%  {}/{} requests", "", filled, "",
                        kWidth - filled, 100 * done / total, done, total);
    if (done == total) err_ << "\r" << std::string(kWidth + 40, ' ') << "\r";
    err_.flush();
  }

 private:
  std::ostream& err_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace radixkv::tools
