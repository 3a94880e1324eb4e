// DiskIo: reads and writes of whole blocks at offsets of one file, queued, submitted in batches and
// completed out of order, each tagged by its caller. Two engines:
//   io_uring  (liburing): queued requests go to the kernel in one io_uring_enter per submit(), up
//             to depth() in flight; the caller's thread only reaps completions.
//   sync      pread/pwrite: each queued request runs inside submit(), whole (short transfers are
//             continued). The fallback where io_uring is unavailable (an old kernel, a seccomp
//             filter, io_uring_disabled).
// Buffers and offsets must be multiples of kBlockBytes and buffers aligned to it when the file was
// opened with O_DIRECT (AlignedBuffer gives such buffers). Not thread-safe: one owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv::disk {

// A zeroed buffer aligned to kBlockBytes. Throws std::bad_alloc when memory is short.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes);
  std::span<std::byte> bytes() { return {data_.get(), size_}; }
  std::span<const std::byte> bytes() const { return {data_.get(), size_}; }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
};

struct IoCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes transferred, or -errno
};

class DiskIo {
 public:
  virtual ~DiskIo() = default;
  virtual std::string_view name() const = 0;
  // Requests in flight at most (queued and not yet reaped).
  virtual std::size_t depth() const = 0;
  virtual std::size_t in_flight() const = 0;
  // Queue a transfer of `buffer` at `offset`; throws std::logic_error beyond depth() in flight.
  virtual void queue_read(std::span<std::byte> buffer, uint64_t offset, uint64_t tag) = 0;
  virtual void queue_write(std::span<const std::byte> buffer, uint64_t offset, uint64_t tag) = 0;
  // Hands every queued request to the kernel.
  virtual void submit() = 0;
  // Appends completions to `out`: at least min(at_least, in flight) of them, waiting as needed.
  virtual void reap(std::size_t at_least, std::vector<IoCompletion>& out) = 0;
};

// Thrown when io_uring cannot be set up here; what() says why.
class IoUringUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An io_uring of `depth` entries over file `fd` (which must outlive it).
std::unique_ptr<DiskIo> make_uring_io(int fd, unsigned depth);
// The pread/pwrite engine over `fd`.
std::unique_ptr<DiskIo> make_sync_io(int fd, unsigned depth);

}  // namespace radixkv::disk
