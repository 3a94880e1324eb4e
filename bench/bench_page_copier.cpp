// radixkv_bench_copier: does a worker thread pay for host <-> host page copies (kv_store's
// PageCopier between two host pools)?
//
//   BM_HostCopy/<sync|worker>/page_kib:K/batch:B/overlap:O
//
// Each iteration issues one batch of B pages of K KiB from one host pool to the other (pages in
// random order, so one memcpy per page), then computes on the calling thread for O times what
// the synchronous copy of that batch takes (measured before the loop), then waits for the ticket.
// `sync` is the copier make_page_copier builds (memcpy inside copy()); `worker` is the
// alternative measured against it: the same memcpy on a worker thread, FIFO. The synchronous
// copier pays copy + compute; the worker, at best, max(copy, compute) plus its hand-off, when a
// core is free for it. The compute is a spin on the clock, which uses no memory bandwidth: the
// best case for the worker, since a model's attention would compete with the copy for it.
// After the timed loop the destination pages are compared with their sources.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kv_store/page_copier.h"

namespace radixkv::bench {
namespace {

// The alternative: copy() queues the batch, one worker thread copies batches in issue order.
class WorkerHostCopier final : public PageCopierBase {
 public:
  WorkerHostCopier(const PagePool& device, const PagePool& host) : PageCopierBase(device, host) {
    worker_ = std::thread([this] { run(); });
  }
  ~WorkerHostCopier() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_all();
    worker_.join();
  }
  std::string_view name() const override { return "host-worker"; }

 protected:
  void enqueue(CopyTicket ticket, PagePool& from, PagePool& to,
               std::span<const TransferRun> runs) override {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(Job{ticket, &from, &to, {runs.begin(), runs.end()}});
    }
    work_ready_.notify_one();
  }
  CopyTicket poll() override { return completed_.load(std::memory_order_acquire); }
  void block_until(CopyTicket ticket) override {
    std::unique_lock lock(mutex_);
    job_done_.wait(lock, [&] { return completed_.load(std::memory_order_relaxed) >= ticket; });
  }

 private:
  struct Job {
    CopyTicket ticket;
    PagePool* from;
    PagePool* to;
    std::vector<TransferRun> runs;
  };

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      const uint64_t page_bytes = job.from->bytes_per_page();
      for (const TransferRun& run : job.runs) {
        std::memcpy(job.to->backend().page_address(run.dst),
                    job.from->backend().page_address(run.src), run.count * page_bytes);
      }
      lock.lock();
      completed_.store(job.ticket, std::memory_order_release);
      job_done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable job_done_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::atomic<CopyTicket> completed_{0};
  std::thread worker_;  // last: it starts once everything above exists
};

constexpr uint32_t kPoolPages = 128;

void spin_for(std::chrono::nanoseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
  }
}

void BM_HostCopy(benchmark::State& state, bool worker, uint32_t page_kib, uint32_t batch,
                 int overlap) {
  const KvLayout layout{1, 1, page_kib * 256, 2, 1};  // K and V of 256 bf16 values = 1 KiB
  PagePool device(layout, kPoolPages, make_host_backend());
  PagePool host(layout, kPoolPages, make_host_backend());
  std::vector<PageId> held;
  if (!device.allocate(kPoolPages, held) || !host.allocate(kPoolPages, held)) {
    throw std::logic_error("BM_HostCopy: the pools should have every page free");
  }
  std::mt19937_64 rng(page_kib * 1000 + batch);
  for (PageId p = 0; p < kPoolPages; ++p) {
    for (std::byte& b : device.host_bytes(p)) b = std::byte(rng());
  }
  std::vector<PageId> src(kPoolPages), dst(kPoolPages);
  std::iota(src.begin(), src.end(), 0);
  std::iota(dst.begin(), dst.end(), 0);
  std::shuffle(src.begin(), src.end(), rng);
  std::shuffle(dst.begin(), dst.end(), rng);
  std::vector<PageTransfer> pages;
  for (uint32_t i = 0; i < batch; ++i) pages.push_back({src[i], dst[i]});

  std::unique_ptr<PageCopier> copier;
  if (worker) {
    copier = std::make_unique<WorkerHostCopier>(device, host);
  } else {
    copier = make_page_copier(device, host);
  }
  // The compute: `overlap` times the synchronous copy of one batch (median of 5).
  auto sync = make_page_copier(device, host);
  std::vector<std::chrono::nanoseconds> copy_times;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    sync->copy(device, host, pages);
    copy_times.push_back(std::chrono::steady_clock::now() - start);
  }
  std::nth_element(copy_times.begin(), copy_times.begin() + 2, copy_times.end());
  const std::chrono::nanoseconds compute = copy_times[2] * overlap;

  for (auto _ : state) {
    const CopyTicket ticket = copier->copy(device, host, pages);
    spin_for(compute);
    copier->wait(ticket);
  }
  for (const PageTransfer& t : pages) {
    if (std::memcmp(device.host_bytes(t.src).data(), host.host_bytes(t.dst).data(),
                    host.bytes_per_page()) != 0) {
      state.SkipWithError("a destination page differs from its source");
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * batch * host.bytes_per_page());
  state.counters["compute_us"] = double(compute.count()) / 1e3;
}

}  // namespace
}  // namespace radixkv::bench

int main(int argc, char** argv) {
  using radixkv::bench::BM_HostCopy;
  struct Shape {
    uint32_t page_kib;
    uint32_t batch;
  };
  // 64 KiB pages (one layer of 16 tokens of llama-3-8b) and 2 MiB pages (all 32 layers).
  for (const Shape shape :
       {Shape{64, 1}, Shape{64, 16}, Shape{2048, 1}, Shape{2048, 16}, Shape{2048, 64}}) {
    for (int overlap : {0, 1}) {
      for (bool worker : {false, true}) {
        const std::string name =
            fmt::format("BM_HostCopy/{}/page_kib:{}/batch:{}/overlap:{}",
                        worker ? "worker" : "sync", shape.page_kib, shape.batch, overlap);
        benchmark::RegisterBenchmark(name.c_str(), BM_HostCopy, worker, shape.page_kib, shape.batch,
                                     overlap)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
