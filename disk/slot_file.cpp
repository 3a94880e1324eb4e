#include "disk/slot_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace radixkv::disk {

namespace {

constexpr const char* kManifestHead = "radixkv disk tier 1";
constexpr std::size_t kMaxManifestBytes = 4096;

[[noreturn]] void fail_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), "disk tier: " + what);
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(errno, "cannot write " + path);
    done += static_cast<std::size_t>(n);
  }
}

// The manifest's "key value" lines; nullopt-like empty map with `ok` false when it is not one.
struct Manifest {
  bool ok = false;
  std::map<std::string, std::string> fields;
};

Manifest parse_manifest(const std::string& text) {
  Manifest m;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kManifestHead) return m;
  while (std::getline(in, line)) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0) return m;
    m.fields[line.substr(0, space)] = line.substr(space + 1);
  }
  m.ok = true;
  return m;
}

std::string read_bounded(int fd, const std::string& path) {
  std::string text(kMaxManifestBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(errno, "cannot read " + path);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxManifestBytes) {
    throw std::invalid_argument(fmt::format(
        "disk tier: {} is larger than a manifest ({} bytes at most): not a radixkv disk tier's",
        path, kMaxManifestBytes));
  }
  text.resize(got);
  return text;
}

std::string describe_manifest(const std::map<std::string, std::string>& f) {
  const auto get = [&](const char* key) {
    const auto it = f.find(key);
    return it == f.end() ? std::string("?") : it->second;
  };
  return fmt::format(
      "model '{}', {} layers x {} kv heads x {} dim x {} B, {} tokens/page, {} payload bytes, "
      "layout id {}",
      get("model"), get("layers"), get("kv_heads"), get("head_dim"), get("dtype_bytes"),
      get("page_tokens"), get("payload_bytes"), get("layout_id"));
}

}  // namespace

std::string manifest_text(const SlotFileSpec& spec) {
  return fmt::format(
      "{}\nlayout_id {:016x}\nlayers {}\nkv_heads {}\nhead_dim {}\ndtype_bytes {}\npage_tokens {}\n"
      "model {}\npayload_bytes {}\nslot_bytes {}\n",
      kManifestHead, spec.layout_id, spec.layout.layers, spec.layout.kv_heads, spec.layout.head_dim,
      spec.layout.dtype_bytes, spec.layout.page_tokens, spec.model, spec.geometry.payload_bytes,
      spec.geometry.slot_bytes());
}

SlotFile::SlotFile(const SlotFileSpec& spec)
    : path_(spec.path),
      slots_path_((std::filesystem::path(spec.path) / kSlotsName).string()),
      slot_bytes_(spec.geometry.slot_bytes()) {
  for (const char c : spec.model) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw std::invalid_argument("disk tier: the model's name has a control character");
    }
  }
  if (spec.model.size() > 256) {
    throw std::invalid_argument("disk tier: the model's name is longer than 256 characters");
  }
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  if (ec) fail_errno(ec.value(), "cannot create " + path_);
  dir_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) fail_errno(errno, "cannot open " + path_);
  try {
    if (::flock(dir_fd_, LOCK_EX | LOCK_NB) != 0) {
      fail_errno(errno, path_ + " is in use by another process (locked)");
    }
    check_or_write_manifest(spec);
    open_slots(spec);
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    ::close(dir_fd_);
    throw;
  }
}

SlotFile::~SlotFile() {
  ::close(fd_);
  ::close(dir_fd_);  // and the lock with it
}

void SlotFile::check_or_write_manifest(const SlotFileSpec& spec) {
  const std::string path = (std::filesystem::path(path_) / kManifestName).string();
  const std::string ours = manifest_text(spec);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::string text;
    try {
      text = read_bounded(fd, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    const Manifest theirs = parse_manifest(text);
    if (!theirs.ok) {
      throw std::invalid_argument(fmt::format(
          "disk tier: {} is not a radixkv disk tier manifest (damaged, or another program's): "
          "give another path, or remove it",
          path));
    }
    if (text != ours) {
      throw std::invalid_argument(
          fmt::format("disk tier: {} holds pages of {}, not of {}: pages of two layouts are never "
                      "mixed; give another path, or remove {} to start it afresh",
                      path_, describe_manifest(theirs.fields),
                      describe_manifest(parse_manifest(ours).fields), path_));
    }
    return;
  }
  if (errno != ENOENT) fail_errno(errno, "cannot open " + path);
  // Written whole or not at all: a crash leaves the temporary file, which the next open replaces.
  const std::string tmp = path + ".tmp";
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) fail_errno(errno, "cannot create " + tmp);
  try {
    write_all(out, ours, tmp);
    if (::fsync(out) != 0) fail_errno(errno, "cannot sync " + tmp);
  } catch (...) {
    ::close(out);
    throw;
  }
  ::close(out);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_errno(errno, "cannot rename " + tmp);
  if (::fsync(dir_fd_) != 0) fail_errno(errno, "cannot sync " + path_);
  created_ = true;
}

void SlotFile::open_slots(const SlotFileSpec& spec) {
  const int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  if (spec.direct) {
    fd_ = ::open(slots_path_.c_str(), flags | O_DIRECT, 0644);
    direct_ = fd_ >= 0;
    if (fd_ < 0 && errno != EINVAL) fail_errno(errno, "cannot open " + slots_path_);
  }
  if (fd_ < 0) fd_ = ::open(slots_path_.c_str(), flags, 0644);  // the filesystem refuses O_DIRECT
  if (fd_ < 0) fail_errno(errno, "cannot open " + slots_path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail_errno(errno, "cannot stat " + slots_path_);
  const uint64_t want = uint64_t{spec.slots} * slot_bytes_;
  const auto have = static_cast<uint64_t>(st.st_size);
  existing_slots_ = static_cast<uint32_t>(std::min<uint64_t>(have / slot_bytes_, spec.slots));
  if (have > want && ::ftruncate(fd_, static_cast<off_t>(want)) != 0) {
    fail_errno(errno, "cannot cut " + slots_path_);
  }
  if (have < want) {
    const int err =
        ::fallocate(fd_, 0, static_cast<off_t>(have), static_cast<off_t>(want - have)) == 0 ? 0
                                                                                            : errno;
    if (err == EOPNOTSUPP) {  // a filesystem without it: a sparse file
      if (::ftruncate(fd_, static_cast<off_t>(want)) != 0) {
        fail_errno(errno, "cannot size " + slots_path_);
      }
    } else if (err != 0) {
      [[maybe_unused]] const int cut = ::ftruncate(fd_, static_cast<off_t>(have));  // as it was
      fail_errno(err, fmt::format("cannot preallocate {} bytes for {}", want, slots_path_));
    }
  }
}

}  // namespace radixkv::disk
