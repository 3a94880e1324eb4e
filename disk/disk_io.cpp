#include "disk/disk_io.h"

#include <fmt/format.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "disk/slot_format.h"

namespace radixkv::disk {

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* p = std::aligned_alloc(kBlockBytes, round_up_to_block(bytes));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_.reset(static_cast<std::byte*>(p));
}

void AlignedBuffer::Free::operator()(std::byte* p) const { std::free(p); }

namespace {

void check_room(const DiskIo& io) {
  if (io.in_flight() >= io.depth()) {
    throw std::logic_error(
        fmt::format("disk io ({}): a request beyond its depth of {}", io.name(), io.depth()));
  }
}

class UringIo final : public DiskIo {
 public:
  UringIo(int fd, unsigned depth) : fd_(fd), depth_(depth) {
    const int err = io_uring_queue_init(depth, &ring_, 0);
    if (err < 0) {
      throw IoUringUnavailable(
          fmt::format("io_uring unavailable here, io_uring_queue_init: {}", std::strerror(-err)));
    }
  }
  ~UringIo() override {
    // Requests still in the kernel write into buffers their owner is about to free.
    std::vector<IoCompletion> ignored;
    submit();
    reap(in_flight_, ignored);
    io_uring_queue_exit(&ring_);
  }
  std::string_view name() const override { return "io_uring"; }
  std::size_t depth() const override { return depth_; }
  std::size_t in_flight() const override { return in_flight_; }

  void queue_read(std::span<std::byte> buffer, uint64_t offset, uint64_t tag) override {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_read(sqe, fd_, buffer.data(), static_cast<unsigned>(buffer.size()), offset);
    io_uring_sqe_set_data64(sqe, tag);
    ++in_flight_;
  }
  void queue_write(std::span<const std::byte> buffer, uint64_t offset, uint64_t tag) override {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_write(sqe, fd_, buffer.data(), static_cast<unsigned>(buffer.size()), offset);
    io_uring_sqe_set_data64(sqe, tag);
    ++in_flight_;
  }
  void submit() override {
    while (io_uring_sq_ready(&ring_) > 0) {
      const int n = io_uring_submit(&ring_);
      if (n == -EINTR || n == -EAGAIN || n == -EBUSY) {
        if (n != -EINTR) wait_one();  // the kernel wants completions reaped first
        continue;
      }
      if (n < 0) throw std::runtime_error(fmt::format("io_uring_submit: {}", std::strerror(-n)));
    }
  }
  void reap(std::size_t at_least, std::vector<IoCompletion>& out) override {
    std::size_t got = 0;
    at_least = std::min(at_least, in_flight_);
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
        out.push_back({io_uring_cqe_get_data64(cqe), cqe->res});
        io_uring_cqe_seen(&ring_, cqe);
        --in_flight_;
        ++got;
      }
      if (got >= at_least) return;
      wait_one();
    }
  }

 private:
  io_uring_sqe* next_sqe() {
    check_room(*this);
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {  // the submission queue is full of queued requests
      submit();
      sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) throw std::logic_error("io_uring: no submission entry after a submit");
    }
    return sqe;
  }
  void wait_one() {
    io_uring_cqe* cqe = nullptr;
    int err;
    do {
      err = io_uring_wait_cqe(&ring_, &cqe);
    } while (err == -EINTR || err == -EAGAIN);
    if (err < 0)
      throw std::runtime_error(fmt::format("io_uring_wait_cqe: {}", std::strerror(-err)));
  }

  io_uring ring_{};
  int fd_;
  std::size_t depth_;
  std::size_t in_flight_ = 0;
};

class SyncIo final : public DiskIo {
 public:
  SyncIo(int fd, unsigned depth) : fd_(fd), depth_(depth) {}
  std::string_view name() const override { return "pread/pwrite"; }
  std::size_t depth() const override { return depth_; }
  std::size_t in_flight() const override { return queued_.size() + done_.size(); }

  void queue_read(std::span<std::byte> buffer, uint64_t offset, uint64_t tag) override {
    check_room(*this);
    queued_.push_back({buffer.data(), buffer.size(), offset, tag, false});
  }
  void queue_write(std::span<const std::byte> buffer, uint64_t offset, uint64_t tag) override {
    check_room(*this);
    queued_.push_back({const_cast<std::byte*>(buffer.data()), buffer.size(), offset, tag, true});
  }
  void submit() override {
    for (const Request& r : queued_) done_.push_back({r.tag, run(r)});
    queued_.clear();
  }
  void reap(std::size_t at_least, std::vector<IoCompletion>& out) override {
    if (done_.size() < at_least) submit();
    out.insert(out.end(), done_.begin(), done_.end());
    done_.clear();
  }

 private:
  struct Request {
    std::byte* data;
    std::size_t size;
    uint64_t offset;
    uint64_t tag;
    bool write;
  };
  int64_t run(const Request& r) const {
    std::size_t done = 0;
    while (done < r.size) {
      const auto at = static_cast<off_t>(r.offset + done);
      const ssize_t n = r.write ? ::pwrite(fd_, r.data + done, r.size - done, at)
                                : ::pread(fd_, r.data + done, r.size - done, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return -errno;
      if (n == 0) break;  // end of file
      done += static_cast<std::size_t>(n);
    }
    return static_cast<int64_t>(done);
  }

  int fd_;
  std::size_t depth_;
  std::vector<Request> queued_;
  std::vector<IoCompletion> done_;
};

}  // namespace

std::unique_ptr<DiskIo> make_uring_io(int fd, unsigned depth) {
  return std::make_unique<UringIo>(fd, depth);
}

std::unique_ptr<DiskIo> make_sync_io(int fd, unsigned depth) {
  return std::make_unique<SyncIo>(fd, depth);
}

}  // namespace radixkv::disk
