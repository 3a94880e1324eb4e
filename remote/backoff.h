// Backoff: when a store may try its server again after a failure. The wait doubles from `first`
// to `most` with each failure in a row and resets on a success, so a server that is down costs one
// refused connection per wait, not one per request, and one that comes back is used again within
// `most`.
#pragma once

#include <algorithm>
#include <chrono>

namespace radixkv::remote {

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  Backoff(std::chrono::milliseconds first, std::chrono::milliseconds most)
      : first_(first), most_(most) {}

  bool ready() const { return Clock::now() >= retry_at_; }
  bool failing() const { return wait_.count() != 0; }  // failed since the last success
  void failed() {
    wait_ = wait_.count() == 0 ? first_ : std::min(most_, wait_ * 2);
    retry_at_ = Clock::now() + wait_;
  }
  void succeeded() {
    wait_ = {};
    retry_at_ = {};
  }

 private:
  std::chrono::milliseconds first_, most_, wait_{};
  Clock::time_point retry_at_{};
};

}  // namespace radixkv::remote
