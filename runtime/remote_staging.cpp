#include "runtime/remote_staging.h"

#include <algorithm>
#include <stdexcept>

namespace radixkv::detail {

RemoteStaging::RemoteStaging(PagePool& device, PagePool& host, PageCopier& copier)
    : device_(device), host_(host), copier_(copier), writing_(device.capacity_pages(), 0) {}

RemoteStaging::~RemoteStaging() {
  if (staged_.empty()) return;
  copier_.wait(staged_.back().ticket);
  retire();
}

CopyTicket RemoteStaging::copy(std::span<const PageId> host_pages,
                               std::span<const PageId> device_pages) {
  if (host_pages.size() != device_pages.size()) {
    throw std::invalid_argument("RemoteStaging::copy: as many staging pages as device pages");
  }
  if (host_pages.empty()) return 0;
  transfers_.clear();
  for (size_t i = 0; i < host_pages.size(); ++i) {
    transfers_.push_back({host_pages[i], device_pages[i]});
  }
  const CopyTicket ticket = copier_.copy(host_, device_, transfers_);
  for (size_t i = 0; i < host_pages.size(); ++i) {
    device_.retain(device_pages[i]);
    staged_.push_back({ticket, host_pages[i], device_pages[i]});
    ticket_of(device_pages[i]) = ticket;
  }
  return ticket;
}

CopyTicket RemoteStaging::writing(std::span<const PageId> device_pages) const {
  CopyTicket latest = 0;
  if (staged_.empty()) return latest;
  for (PageId page : device_pages) {
    latest = std::max(latest, writing_[page - device_.first_page()]);
  }
  return latest;
}

void RemoteStaging::await(Tier tier, PageId page) {
  if (tier != Tier::kDevice) return;
  const CopyTicket ticket = writing({&page, 1});
  if (ticket != 0) copier_.wait(ticket);
}

uint64_t RemoteStaging::retire() {
  uint64_t retired = 0;
  while (!staged_.empty() && copier_.done(staged_.front().ticket)) {
    const StagedPage& page = staged_.front();
    ticket_of(page.device) = 0;  // held until now, so no later copy can have written it
    host_.release(page.host);
    device_.release(page.device);
    staged_.pop_front();
    ++retired;
  }
  return retired;
}

}  // namespace radixkv::detail
