// Exclusive: refuses a second call into one object while a first one is inside it.
//
// The bound objects are single-owner, like the C++ classes under them, and their long calls
// release the GIL, so two Python threads could otherwise run inside one object at once and
// corrupt it. An Exclusive guard around each call that changes the object turns that into a
// RuntimeError instead; calls that only read it hold the GIL throughout and check_idle() first.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace radixkv::python {

class Exclusive {
 public:
  Exclusive(std::atomic<bool>& busy, const char* what) : busy_(busy) {
    if (busy_.exchange(true, std::memory_order_acquire)) {
      throw std::logic_error(
          std::string(what) +
          ": already inside another call (one thread at a time owns each object)");
    }
  }
  ~Exclusive() { busy_.store(false, std::memory_order_release); }
  Exclusive(const Exclusive&) = delete;
  Exclusive& operator=(const Exclusive&) = delete;

 private:
  std::atomic<bool>& busy_;
};

// Throws what Exclusive would while another thread is inside the object.
inline void check_idle(const std::atomic<bool>& busy, const char* what) {
  if (busy.load(std::memory_order_acquire)) {
    throw std::logic_error(std::string(what) +
                           ": already inside another call (one thread at a time owns each object)");
  }
}

}  // namespace radixkv::python
