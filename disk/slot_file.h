// SlotFile: the files of a disk tier's path, opened, checked and sized.
//
//   <path>/radixkv-disk.manifest   what the slots hold: format, layout id, the KV layout's fields,
//                                  the model's name, payload and slot bytes (text, one key a line;
//                                  written once, atomically: a temporary file, fsync, rename)
//   <path>/radixkv-disk.slots      `slots` slots of slot_bytes each, preallocated (fallocate)
//
// A path belongs to one layout: opening it with another layout id or slot geometry is refused,
// naming both, and nothing there is touched. A different slot count is not: the slots file is cut
// or grown to it (pages in slots beyond it are gone). The path's directory is locked (flock) for
// as long as the object lives, so two processes never write one path; a killed process's lock
// goes with it. The slots file is opened with O_DIRECT where the filesystem takes it (tmpfs did not
// before Linux 6.6): direct() says which.
#pragma once

#include <cstdint>
#include <string>

#include "disk/slot_format.h"
#include "kv_store/kv_layout.h"

namespace radixkv::disk {

struct SlotFileSpec {
  std::string path;
  KvLayout layout;
  std::string model;
  uint64_t layout_id = 0;
  SlotGeometry geometry;
  uint32_t slots = 0;
  bool direct = true;  // try O_DIRECT
};

class SlotFile {
 public:
  static constexpr const char* kManifestName = "radixkv-disk.manifest";
  static constexpr const char* kSlotsName = "radixkv-disk.slots";
  // What the manifest costs against the byte budget: one block (it is far smaller).
  static constexpr uint64_t kManifestBytes = kBlockBytes;

  // Creates the directory (and its parents) when missing. Throws std::invalid_argument for a path
  // that holds another layout or a manifest that does not parse, std::system_error naming the path
  // for what the system refuses (no permission, no room, locked by another process).
  explicit SlotFile(const SlotFileSpec& spec);
  ~SlotFile();
  SlotFile(const SlotFile&) = delete;
  SlotFile& operator=(const SlotFile&) = delete;

  int fd() const { return fd_; }
  bool direct() const { return direct_; }
  bool created() const { return created_; }  // the manifest was written by this open
  // Slots the file held before this open (the rest are new, all zero): what recovery reads.
  uint32_t existing_slots() const { return existing_slots_; }
  uint64_t offset(uint32_t slot) const { return uint64_t{slot} * slot_bytes_; }
  const std::string& slots_path() const { return slots_path_; }

 private:
  void check_or_write_manifest(const SlotFileSpec& spec);
  void open_slots(const SlotFileSpec& spec);

  std::string path_;
  std::string slots_path_;
  int dir_fd_ = -1;
  int fd_ = -1;
  bool direct_ = false;
  bool created_ = false;
  uint32_t existing_slots_ = 0;
  uint64_t slot_bytes_ = 0;
};

// The manifest's text for `spec` (what the file holds).
std::string manifest_text(const SlotFileSpec& spec);

}  // namespace radixkv::disk
