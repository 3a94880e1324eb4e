// PageBackend: where the bytes of pages live. PagePool owns the ids and refcounts; a backend owns
// only storage, addressed by page id. Three kinds exist:
//   - AccountingBackend: no bytes at all. Replays of terabyte-sized caches only need the ids.
//   - HostBackend: one host arena, so tests can write a page and read it back.
//   - CudaBackend (kv_store/cuda_backend.h, built when nvcc is present): one cudaMalloc arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace radixkv {

using PageId = uint32_t;
inline constexpr PageId kInvalidPage = ~PageId{0};

enum class StorageKind { kNone, kHost, kDevice };

class PageBackend {
 public:
  virtual ~PageBackend() = default;
  virtual std::string_view name() const = 0;
  virtual StorageKind storage() const = 0;
  // Called once by PagePool before any page is handed out. Throws if the memory is not there.
  virtual void reserve(uint32_t pages, uint64_t bytes_per_page) = 0;
  // Address of the page's first byte: a host pointer for kHost, a device pointer for kDevice,
  // nullptr for kNone.
  virtual void* page_address(PageId page) const = 0;
  // Copies one whole page (copy-on-write of a shared page). A no-op where there are no bytes.
  virtual void copy_page(PageId dst, PageId src) = 0;
};

class AccountingBackend final : public PageBackend {
 public:
  std::string_view name() const override { return "accounting"; }
  StorageKind storage() const override { return StorageKind::kNone; }
  void reserve(uint32_t, uint64_t) override {}
  void* page_address(PageId) const override { return nullptr; }
  void copy_page(PageId, PageId) override {}
};

class HostBackend final : public PageBackend {
 public:
  HostBackend() = default;
  ~HostBackend() override;
  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  std::string_view name() const override { return "host"; }
  StorageKind storage() const override { return StorageKind::kHost; }
  void reserve(uint32_t pages, uint64_t bytes_per_page) override;
  void* page_address(PageId page) const override;
  void copy_page(PageId dst, PageId src) override;

 private:
  std::byte* arena_ = nullptr;
  uint64_t bytes_per_page_ = 0;
};

std::unique_ptr<PageBackend> make_accounting_backend();
std::unique_ptr<PageBackend> make_host_backend();

}  // namespace radixkv
