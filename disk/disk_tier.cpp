#include "disk/disk_tier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace radixkv::disk {

namespace {

constexpr uint64_t kWriteTag = uint64_t{1} << 32;
constexpr uint64_t kReadTag = uint64_t{2} << 32;
constexpr uint64_t kTagIndex = 0xffffffffULL;

uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since)
          .count());
}

SlotGeometry geometry_of(const DiskTierConfig& config) {
  config.layout.validate();
  return {config.layout.page_tokens, config.payload_bytes.value_or(config.layout.bytes_per_page())};
}

uint32_t slots_of(const DiskTierConfig& config, const SlotGeometry& geometry) {
  const uint64_t slot = std::max(geometry.slot_bytes(), config.charged_slot_bytes);
  const uint64_t fit = config.capacity_bytes > SlotFile::kManifestBytes
                           ? (config.capacity_bytes - SlotFile::kManifestBytes) / slot
                           : 0;
  if (fit == 0) {
    throw std::invalid_argument(fmt::format(
        "disk tier: a capacity of {} bytes holds no page: a slot takes {} bytes (header, {} tokens "
        "and {} payload bytes in 4 KiB blocks), the manifest {}",
        config.capacity_bytes, slot, geometry.page_tokens, geometry.payload_bytes,
        SlotFile::kManifestBytes));
  }
  if (fit >= kNoSlot) {
    throw std::invalid_argument(fmt::format(
        "disk tier: a capacity of {} bytes makes {} slots of {} bytes; at most {} (larger pages, "
        "or a smaller capacity)",
        config.capacity_bytes, fit, slot, kNoSlot - 1));
  }
  return static_cast<uint32_t>(fit);
}

// The index of `slots` slots; out of memory is an error that says how much it needed.
DiskIndex make_index(uint32_t slots, const std::string& policy) {
  try {
    return DiskIndex(slots, make_policy(policy));
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  throw std::runtime_error(fmt::format(
      "disk tier: out of memory for the index of {} slots (about {} bytes of host memory)", slots,
      uint64_t{slots} * (sizeof(DiskIndex::Slot) + 64)));
}

void check_config(const DiskTierConfig& config) {
  if (config.path.empty()) throw std::invalid_argument("disk tier: no path");
  if (config.queue_pages == 0 || config.queue_pages > 4096) {
    throw std::invalid_argument(
        fmt::format("disk tier: a queue of {} pages (1 to 4096)", config.queue_pages));
  }
}

}  // namespace

std::optional<IoMode> parse_io_mode(std::string_view name) {
  for (IoMode m : {IoMode::kAuto, IoMode::kUring, IoMode::kSync}) {
    if (to_string(m) == name) return m;
  }
  return std::nullopt;
}

std::string_view to_string(IoMode mode) {
  switch (mode) {
    case IoMode::kAuto:
      return "auto";
    case IoMode::kUring:
      return "io_uring";
    case IoMode::kSync:
      return "sync";
  }
  return "unknown";
}

DiskTier::DiskTier(DiskTierConfig config)
    : config_((check_config(config), std::move(config))),
      write_policy_(WritePolicy::parse(config_.write_policy)),
      layout_id_(kv_layout_id(config_.layout, config_.model)),
      geometry_(geometry_of(config_)),
      index_(make_index(slots_of(config_, geometry_), config_.policy)) {
  file_ = std::make_unique<SlotFile>(SlotFileSpec{config_.path, config_.layout, config_.model,
                                                  layout_id_, geometry_, index_.slots(),
                                                  config_.direct});
  const unsigned depth = 2 * config_.queue_pages;  // writes, and a batch of reads beside them
  if (config_.io == IoMode::kSync) {
    io_ = make_sync_io(file_->fd(), depth);
  } else {
    try {
      io_ = make_uring_io(file_->fd(), depth);
    } catch (const IoUringUnavailable& e) {
      if (config_.io == IoMode::kUring) {
        throw IoUringUnavailable(fmt::format("disk tier {}: {}", config_.path, e.what()));
      }
      io_ = make_sync_io(file_->fd(), depth);
      io_note_ = e.what();
    }
  }
  if (config_.direct && !file_->direct()) {
    io_note_ += fmt::format("{}the filesystem refuses O_DIRECT", io_note_.empty() ? "" : "; ");
  }
  scratch_tokens_.resize(geometry_.page_tokens);
  stats_.slots = index_.slots();
  recover();
}

DiskTier::~DiskTier() {
  drain();
  io_.reset();  // waits for anything still in flight, before the buffers go
}

std::string DiskTier::describe() const {
  std::string text = fmt::format("{} ({}, {}", config_.path, io_->name(),
                                 file_->direct() ? "O_DIRECT" : "buffered");
  if (!io_note_.empty()) text += ": " + io_note_;
  if (!failed_.empty()) text += "; stopped: " + failed_;
  return text + ")";
}

// Reads the head of every slot the file held, in batches, and indexes the pages that check out.
void DiskTier::recover() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<AlignedBuffer> heads;
  for (std::size_t i = 0; i < io_->depth(); ++i) heads.emplace_back(geometry_.head_bytes());
  std::vector<DiskIndex::Found> found;
  uint64_t bad = 0;
  try {
    scan_heads(heads, found, bad);
  } catch (...) {
    io_.reset();  // waits for the reads in flight into `heads`
    throw;
  }
  stats_.recovered_pages = index_.restore(std::move(found));
  stats_.bad_pages += bad;
  stats_.recovery_ns = elapsed_ns(start);
}

void DiskTier::scan_heads(std::vector<AlignedBuffer>& heads, std::vector<DiskIndex::Found>& found,
                          uint64_t& bad) {
  const std::size_t batch = heads.size();
  std::vector<int64_t> results(batch);
  const SlotId slots = file_->existing_slots();  // slots new to the file are empty
  for (SlotId first = 0; first < slots; first += static_cast<SlotId>(batch)) {
    const auto n = static_cast<SlotId>(std::min<uint64_t>(batch, slots - first));
    for (SlotId i = 0; i < n; ++i) {
      io_->queue_read(heads[i].bytes(), file_->offset(first + i), kReadTag | i);
    }
    io_->submit();
    completions_.clear();
    io_->reap(n, completions_);
    for (const IoCompletion& c : completions_) results[c.tag & kTagIndex] = c.result;
    for (SlotId i = 0; i < n; ++i) {
      if (results[i] != static_cast<int64_t>(geometry_.head_bytes())) {
        ++stats_.read_errors;  // the slot is not used; the index never names it
        continue;
      }
      SlotHeader header;
      const SlotCheck check = check_slot_head(heads[i].bytes(), layout_id_, geometry_, header);
      if (check == SlotCheck::kOk) {
        found.push_back({first + i, header});
        next_generation_ = std::max(next_generation_, header.generation + 1);
      } else if (check != SlotCheck::kEmpty) {
        ++bad;
      }
    }
  }
}

void DiskTier::attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals) {
  if (host != nullptr && host->backend().storage() == StorageKind::kDevice) {
    throw std::invalid_argument(fmt::format(
        "disk tier: the host tier's pages are on a GPU ({} backend); they must be in host memory "
        "(make_pinned_host_backend())",
        host->backend().name()));
  }
  if (device != nullptr && device->backend().storage() == StorageKind::kDevice &&
      !write_policy_.write_back()) {
    throw std::invalid_argument(fmt::format(
        "disk tier: {} writes a page when it is cached, from the device pool, whose pages are on a "
        "GPU ({} backend) here and cannot be read from the host; use write_back (pages are written "
        "when they leave the host tier)",
        write_policy_.to_string(), device->backend().name()));
  }
  for (PagePool* pool : {device, host}) {
    if (pool != nullptr && pool->backend().storage() == StorageKind::kHost &&
        pool->bytes_per_page() != geometry_.payload_bytes) {
      throw std::invalid_argument(fmt::format(
          "disk tier: a pool of {}-byte pages; the tier stores {} bytes a page (its layout: {})",
          pool->bytes_per_page(), geometry_.payload_bytes, config_.layout.to_string()));
    }
  }
  device_ = device;
  host_ = host;
  arrivals_ = arrivals;
  // A new trie: pages reachable only through the old one are not any more.
  entries_.clear();
  lost_.clear();
  index_.reclaim_unanchored();
}

void DiskTier::fail(const std::exception& e) {
  if (failed_.empty()) failed_ = e.what();
}

std::span<const std::byte> DiskTier::bytes_of(Tier tier, PageId page) {
  PagePool* pool = tier == Tier::kDevice ? device_ : host_;
  if (pool == nullptr || pool->backend().storage() != StorageKind::kHost) return {};
  if (arrivals_ != nullptr) arrivals_->await(tier, page);  // a copy may still be writing it
  return pool->host_bytes(page);
}

// A free write buffer, waiting for the oldest write when all are busy.
uint32_t DiskTier::acquire_buffer() {
  if (free_buffers_.empty() && write_buffers_.size() < config_.queue_pages) {
    write_buffers_.emplace_back(geometry_.slot_bytes());
    return static_cast<uint32_t>(write_buffers_.size() - 1);
  }
  if (free_buffers_.empty()) {
    ++stats_.write_waits;
    io_->submit();
    unsubmitted_ = 0;
    reap(1);
  }
  const uint32_t buffer = free_buffers_.back();
  free_buffers_.pop_back();
  return buffer;
}

void DiskTier::reap(std::size_t at_least) {
  completions_.clear();
  io_->reap(at_least, completions_);
  for (const IoCompletion& c : completions_) complete(c);
}

void DiskTier::complete(const IoCompletion& c) {
  const auto index = static_cast<uint32_t>(c.tag & kTagIndex);
  if ((c.tag & ~kTagIndex) == kReadTag) {
    reads_[index].result = c.result;
    reads_[index].done = true;
    return;
  }
  const SlotId slot = index;
  const auto it = writing_.find(slot);
  free_buffers_.push_back(it->second);
  writing_.erase(it);
  if (c.result == static_cast<int64_t>(geometry_.slot_bytes())) {
    ++stats_.written_pages;
    stats_.written_bytes += geometry_.slot_bytes();
    index_.write_done(slot);
    return;
  }
  ++stats_.write_errors;
  if (index_.slot(slot).state == DiskIndex::State::kWriting) {
    const PageHash hash = index_.slot(slot).hash;
    index_.remove(slot);
    index_.reclaim_below(hash);  // it may still be in the trie; losing its children is safe
  }
  index_.write_done(slot);  // releasing: free now
}

// Writes `page` unless it is on disk already; false when it is not on disk afterwards. Called
// inside the tree's eviction and insert, which must not fail halfway: nothing here throws.
bool DiskTier::write(const TreePage& page) try {
  if (!failed_.empty()) {
    ++stats_.skipped_writes;
    return false;
  }
  const SlotId known = index_.find(page.hash);
  if (known != kNoSlot) {
    ++stats_.known_pages;
    index_.touch(known);
    return true;
  }
  const bool first = seed_set_.contains(page.parent);
  const SlotId parent = index_.find(page.parent);
  PagePool* pool = page.tier == Tier::kDevice ? device_ : host_;
  if ((!first && parent == kNoSlot && lost_.contains(page.parent)) ||
      (pool != nullptr && pool->backend().storage() == StorageKind::kDevice)) {
    ++stats_.skipped_writes;  // unreachable on disk; or its bytes are on a GPU
    return false;
  }
  const uint32_t buffer = acquire_buffer();
  if (index_.free_slots() == 0) reap(0);  // writes done: their pages may be evicted now
  SlotId slot = index_.take(parent);
  if (slot == kNoSlot && !writing_.empty()) {  // every slot busy: wait for the writes
    io_->submit();
    unsubmitted_ = 0;
    reap(writing_.size());
    slot = index_.take(parent);
  }
  if (slot == kNoSlot) {
    free_buffers_.push_back(buffer);
    ++stats_.skipped_writes;
    return false;
  }
  SlotHeader header{layout_id_, next_generation_++, page.hash, page.parent, first, 0};
  encode_slot(write_buffers_[buffer].bytes(), geometry_, header, page.tokens,
              bytes_of(page.tier, page.page));
  index_.add(slot, header, false);
  writing_.emplace(slot, buffer);
  io_->queue_write(write_buffers_[buffer].bytes(), file_->offset(slot), kWriteTag | slot);
  ++stats_.queued_pages;
  if (++unsubmitted_ >= config_.queue_pages / 2) {
    io_->submit();
    unsubmitted_ = 0;
  }
  return true;
} catch (const std::bad_alloc&) {
  ++stats_.skipped_writes;
  return false;
} catch (const std::exception& e) {
  fail(e);
  ++stats_.skipped_writes;
  return false;
}

void DiskTier::drain() {
  if (!failed_.empty()) return;
  try {
    io_->submit();
    unsubmitted_ = 0;
    reap(io_->in_flight());
  } catch (const std::exception& e) {
    fail(e);
  }
}

bool DiskTier::check_loaded(std::span<const std::byte> slot, const PageHash& hash,
                            const PageHash& parent, std::span<const TokenId> tokens) {
  SlotHeader header;
  if (check_slot(slot, layout_id_, geometry_, header) != SlotCheck::kOk) return false;
  if (header.hash != hash || header.parent != parent) return false;
  slot_tokens(slot, scratch_tokens_);
  return std::equal(tokens.begin(), tokens.end(), scratch_tokens_.begin(), scratch_tokens_.end());
}

// Out of memory is a miss, counted; an io_uring that fails stops the tier. Never throws for
// either: admit must not be left half done.
uint32_t DiskTier::load(const PageHash& parent, std::span<const PageHash> hashes,
                        std::span<const TokenId> tokens, PagePool& pool,
                        std::span<const PageId> pages) {
  const std::size_t count = std::min(hashes.size(), pages.size());
  if (count == 0 || !failed_.empty()) return 0;
  const std::size_t page_tokens = geometry_.page_tokens;
  if (pool.backend().storage() == StorageKind::kDevice) {
    throw std::invalid_argument(
        "disk tier: cannot load into pages on a GPU; load into host pages and copy them (the "
        "runtime does, through its host tier)");
  }
  if (pool.backend().storage() == StorageKind::kHost &&
      pool.bytes_per_page() != geometry_.payload_bytes) {
    throw std::invalid_argument(
        fmt::format("disk tier: load into {}-byte pages; pages are {} bytes", pool.bytes_per_page(),
                    geometry_.payload_bytes));
  }
  if (tokens.size() < count * page_tokens) {
    throw std::invalid_argument(
        fmt::format("disk tier: load of {} pages with {} tokens", count, tokens.size()));
  }
  // The leading run the index holds, each page after the one before it.
  uint32_t run = 0;
  for (; run < count; ++run) {
    const SlotId slot = index_.find(hashes[run]);
    if (slot == kNoSlot || index_.slot(slot).parent != (run == 0 ? parent : hashes[run - 1])) {
      break;
    }
  }
  if (run == 0) return 0;
  ++stats_.lookups;
  const auto start = std::chrono::steady_clock::now();
  uint32_t loaded = 0;
  try {
    loaded = load_run(parent, hashes, tokens, pool, pages, run);
  } catch (const std::bad_alloc&) {
    ++stats_.read_errors;
  } catch (const std::exception& e) {
    fail(e);
  }
  stats_.load_wait_ns += elapsed_ns(start);
  stats_.loaded_pages += loaded;
  return loaded;
}

// Reads the run through a window of `queue_pages` buffers: page i in buffer i mod window, the
// reads of the pages ahead in flight while each page, in order, is checked and copied out; one
// more read is queued per page done. A page that fails ends the run once the reads in flight are
// back (their buffers are reused by the next call).
uint32_t DiskTier::load_run(const PageHash& parent, std::span<const PageHash> hashes,
                            std::span<const TokenId> tokens, PagePool& pool,
                            std::span<const PageId> pages, uint32_t run) {
  const std::size_t page_tokens = geometry_.page_tokens;
  const uint32_t window = std::min<uint32_t>(config_.queue_pages, run);
  while (read_buffers_.size() < window) read_buffers_.emplace_back(geometry_.slot_bytes());
  reads_.assign(window, ReadSlot{});
  const bool has_bytes = pool.backend().storage() == StorageKind::kHost;
  uint32_t loaded = 0;     // pages checked and copied out
  uint32_t queued = 0;     // pages whose read was queued (or taken from a write's buffer)
  uint32_t in_flight = 0;  // reads not yet back
  const auto queue_ahead = [&] {
    for (; queued < run && queued - loaded < window; ++queued) {
      const uint32_t b = queued % window;
      ReadSlot& r = reads_[b];
      r = {index_.find(hashes[queued]), 0, false};
      if (const auto w = writing_.find(r.slot); w != writing_.end()) {
        // Still being written: its bytes are in the write's buffer, which goes back when the
        // write completes (maybe during this load), so they are taken now.
        std::memcpy(read_buffers_[b].bytes().data(), write_buffers_[w->second].bytes().data(),
                    geometry_.slot_bytes());
        r = {r.slot, static_cast<int64_t>(geometry_.slot_bytes()), true};
        continue;
      }
      io_->queue_read(read_buffers_[b].bytes(), file_->offset(r.slot), kReadTag | b);
      ++in_flight;
    }
    io_->submit();
    unsubmitted_ = 0;
  };
  const auto reap_one = [&] {
    completions_.clear();
    io_->reap(1, completions_);
    for (const IoCompletion& c : completions_) {
      if ((c.tag & ~kTagIndex) == kReadTag) --in_flight;
      complete(c);
    }
  };
  const auto end_run = [&] {
    while (in_flight > 0) reap_one();
    return loaded;
  };
  queue_ahead();
  while (loaded < run) {
    ReadSlot& r = reads_[loaded % window];
    while (!r.done) reap_one();
    if (r.result != static_cast<int64_t>(geometry_.slot_bytes())) {
      ++stats_.read_errors;
      return end_run();
    }
    const std::span<const std::byte> bytes = read_buffers_[loaded % window].bytes();
    stats_.read_bytes += bytes.size();
    const PageHash& expected_parent = loaded == 0 ? parent : hashes[loaded - 1];
    if (!check_loaded(bytes, hashes[loaded], expected_parent,
                      tokens.subspan(loaded * page_tokens, page_tokens))) {
      ++stats_.bad_pages;
      index_.remove(r.slot);
      index_.reclaim_below(hashes[loaded]);
      return end_run();
    }
    if (has_bytes) {
      const std::span<const std::byte> payload = slot_payload(bytes, geometry_);
      std::memcpy(pool.host_bytes(pages[loaded]).data(), payload.data(), payload.size());
    }
    index_.touch(r.slot);
    ++loaded;
    queue_ahead();
  }
  return loaded;
}

DiskTierStats DiskTier::stats() const {
  DiskTierStats s = stats_;
  s.evictions = index_.removed().evicted;
  s.unreachable = index_.removed().unreachable;
  s.stored_pages = index_.pages();
  return s;
}

void DiskTier::add_metrics(std::vector<LowerTierMetrics>& out) const {
  const DiskTierStats s = stats();
  const uint64_t charged = std::max(geometry_.slot_bytes(), config_.charged_slot_bytes);
  out.push_back({.tier = "disk",
                 .loaded_pages = s.loaded_pages,
                 .written_pages = s.written_pages,
                 .evicted_pages = s.evictions,
                 .read_bytes = s.read_bytes,
                 .written_bytes = s.written_bytes,
                 .load_wait_ns = s.load_wait_ns,
                 .has_bytes = true,
                 .stored_bytes = s.stored_pages * charged,
                 .capacity_bytes = config_.capacity_bytes});
}

void DiskTier::stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
                      std::span<const PageHash> hashes, std::span<const TokenId>) {
  if (!parent && !seeds_.contains(ns)) {
    const PageHash seed = namespace_seed(ns);
    seeds_.emplace(ns, seed);
    seed_set_.insert(seed);
  }
  if (write_policy_.mode == WritePolicy::Mode::kWriteThroughSelective && tier == Tier::kDevice) {
    for (const PageHash& h : hashes) ++entries_[h];
  }
}

void DiskTier::cleared() {
  entries_.clear();
  lost_.clear();
  index_.reclaim_unanchored();
}

void DiskTier::flush() {
  lost_.clear();
  if (!failed_.empty()) return;
  try {
    io_->submit();
    unsubmitted_ = 0;
    reap(0);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void DiskTier::dropping(const TreePage& page) {
  bool wanted = true;
  if (write_policy_.mode == WritePolicy::Mode::kWriteThroughSelective) {
    const auto it = entries_.find(page.hash);
    wanted = it != entries_.end() && it->second >= write_policy_.hits;
    if (it != entries_.end()) entries_.erase(it);
    if (!wanted && index_.find(page.hash) == kNoSlot) ++stats_.skipped_writes;
  }
  if (wanted && write(page)) return;
  if (index_.find(page.hash) != kNoSlot) return;  // on disk from before
  // Gone from every tier: pages below it on disk can no longer be reached, nor those dropped after
  // it in this call.
  lost_.insert(page.hash);
  index_.reclaim_below(page.hash);
}

void DiskTier::inserted(const TreePage& page) {
  if (write_policy_.mode == WritePolicy::Mode::kWriteThrough) write(page);
}

}  // namespace radixkv::disk
