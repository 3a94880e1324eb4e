#include "events/event_codec.h"

#include <xxhash.h>
#include <msgpack.hpp>

#include <bit>
#include <limits>
#include <optional>
#include <string>

namespace radixkv::events {

namespace {

// ---- encoding -------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(EventEncoding encoding) : encoding_(encoding), pk_(&buffer_) {}

  std::string finish() { return {buffer_.data(), buffer_.size()}; }

  void batch(const EventBatch& b) {
    const uint32_t fields = b.data_parallel_rank ? 3 : 2;  // omit_defaults: None is left out
    open(fields);
    key("ts");
    float64(b.ts);
    key("events");
    pk_.pack_array(static_cast<uint32_t>(b.events.size()));
    for (const KvEvent& event : b.events) std::visit([this](const auto& e) { write(e); }, event);
    if (b.data_parallel_rank) {
      key("data_parallel_rank");
      pk_.pack(*b.data_parallel_rank);
    }
  }

 private:
  // A struct of `fields` fields; in the array encoding an event's tag is one more element.
  void open(uint32_t fields) {
    if (encoding_ == EventEncoding::kMap) {
      pk_.pack_map(fields);
    } else {
      pk_.pack_array(fields);
    }
  }
  void event(std::string_view tag, uint32_t fields) {
    if (encoding_ == EventEncoding::kMap) {
      pk_.pack_map(fields + 1);
      str("type");
    } else {
      pk_.pack_array(fields + 1);
    }
    str(tag);
  }
  // Always a float64, as msgspec writes a float: msgpack-cxx's pack_double() would write 2.0 as
  // the integer 2, which a consumer decoding `ts: float` strictly could refuse.
  void float64(double value) {
    const auto bits = std::bit_cast<uint64_t>(value);
    char bytes[9] = {static_cast<char>(0xcb)};
    for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>(bits >> (8 * (7 - i)));
    buffer_.write(bytes, sizeof(bytes));
  }
  void key(std::string_view name) {
    if (encoding_ == EventEncoding::kMap) str(name);
  }
  void str(std::string_view s) {
    pk_.pack_str(static_cast<uint32_t>(s.size()));
    pk_.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
  }
  template <typename T>
  void optional(const std::optional<T>& value) {
    if (!value) {
      pk_.pack_nil();
    } else if constexpr (std::is_same_v<T, std::string>) {
      str(*value);
    } else {
      pk_.pack(*value);
    }
  }
  template <typename T>
  void list(const std::vector<T>& values) {
    pk_.pack_array(static_cast<uint32_t>(values.size()));
    for (const T& v : values) pk_.pack(v);
  }

  // The fields that have a default (None) count only up to the last one set: msgspec leaves out
  // a map's unset ones and an array's unset tail (omit_defaults).
  uint32_t defaulted_fields(std::initializer_list<bool> set) const {
    uint32_t count = 0, position = 0;
    for (bool s : set) {
      ++position;
      if (s) count = encoding_ == EventEncoding::kMap ? count + 1 : position;
    }
    return count;
  }
  // A defaulted field, unless the encoding leaves it out.
  template <typename T, typename Write>
  void defaulted(const char* name, const std::optional<T>& value, bool written, Write write) {
    if (!written) return;
    key(name);
    if (value) {
      write(*value);
    } else {
      pk_.pack_nil();
    }
  }

  void write(const BlockStored& e) {
    const std::initializer_list<bool> set = {e.extra_keys.has_value(), e.group_idx.has_value(),
                                             e.kv_cache_spec_kind.has_value(),
                                             e.kv_cache_spec_sliding_window.has_value()};
    const uint32_t extra = defaulted_fields(set);
    event("BlockStored", 7 + extra);
    key("block_hashes");
    list(e.block_hashes);
    key("parent_block_hash");
    optional(e.parent_block_hash);
    key("token_ids");
    list(e.token_ids);
    key("block_size");
    pk_.pack(e.block_size);
    key("lora_id");
    optional(e.lora_id);
    key("medium");
    optional(e.medium);
    key("lora_name");
    optional(e.lora_name);
    // In an array, field i of the defaulted ones is written when i < extra (nil if unset).
    const auto written = [&](uint32_t i, bool is_set) {
      return encoding_ == EventEncoding::kMap ? is_set : i < extra;
    };
    defaulted("extra_keys", e.extra_keys, written(0, e.extra_keys.has_value()),
              [this](const auto& keys) {
                pk_.pack_array(static_cast<uint32_t>(keys.size()));
                for (const std::optional<ExtraKeys>& k : keys) {
                  if (k) {
                    buffer_.write(k->data(), k->size());  // already msgpack
                  } else {
                    pk_.pack_nil();
                  }
                }
              });
    defaulted("group_idx", e.group_idx, written(1, e.group_idx.has_value()),
              [this](int64_t v) { pk_.pack(v); });
    defaulted("kv_cache_spec_kind", e.kv_cache_spec_kind,
              written(2, e.kv_cache_spec_kind.has_value()),
              [this](const std::string& v) { str(v); });
    defaulted("kv_cache_spec_sliding_window", e.kv_cache_spec_sliding_window,
              written(3, e.kv_cache_spec_sliding_window.has_value()),
              [this](int64_t v) { pk_.pack(v); });
  }
  void write(const BlockRemoved& e) {
    const uint32_t extra = defaulted_fields({e.group_idx.has_value(), e.reason.has_value()});
    event("BlockRemoved", 2 + extra);
    key("block_hashes");
    list(e.block_hashes);
    key("medium");
    optional(e.medium);
    const auto written = [&](uint32_t i, bool is_set) {
      return encoding_ == EventEncoding::kMap ? is_set : i < extra;
    };
    defaulted("group_idx", e.group_idx, written(0, e.group_idx.has_value()),
              [this](int64_t v) { pk_.pack(v); });
    defaulted("reason", e.reason, written(1, e.reason.has_value()),
              [this](const std::string& v) { str(v); });
  }
  void write(const AllBlocksCleared&) { event("AllBlocksCleared", 0); }

  EventEncoding encoding_;
  msgpack::sbuffer buffer_;
  msgpack::packer<msgpack::sbuffer> pk_;
};

// ---- decoding -------------------------------------------------------------------------------

const char* type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL:
      return "nil";
    case msgpack::type::BOOLEAN:
      return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER:
      return "an integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      return "a float";
    case msgpack::type::STR:
      return "str";
    case msgpack::type::BIN:
      return "bin";
    case msgpack::type::ARRAY:
      return "an array";
    case msgpack::type::MAP:
      return "a map";
    default:
      return "an extension";
  }
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw EventDecodeError(path + ": " + why);
}
[[noreturn]] void expected(const std::string& path, const char* what, const msgpack::object& o) {
  fail(path, std::string("expected ") + what + ", got " + type_name(o));
}

bool is_int(const msgpack::object& o) {
  return o.type == msgpack::type::POSITIVE_INTEGER || o.type == msgpack::type::NEGATIVE_INTEGER;
}

int64_t read_int(const msgpack::object& o, const std::string& path) {
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
  if (o.type != msgpack::type::POSITIVE_INTEGER) expected(path, "an integer", o);
  if (o.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail(path, "integer " + std::to_string(o.via.u64) + " does not fit in int64");
  }
  return static_cast<int64_t>(o.via.u64);
}

// A block hash in any form a publisher writes it, brought to 64 bits:
//   integer  as it is, a negative one as its two's complement (SGLang's signed hashes);
//   bytes    the last 8 bytes as a big-endian integer (fewer: zero-padded on the left), which is
//            what vLLM sends instead when VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES is set
//            (maybe_convert_block_hash in vllm/v1/core/kv_cache_utils.py), so both name a block
//            alike;
//   str      XXH3-64 of its bytes (a hex digest's last 8 characters would keep only 32 bits).
BlockHash read_hash(const msgpack::object& o, const std::string& path) {
  switch (o.type) {
    case msgpack::type::POSITIVE_INTEGER:
      return o.via.u64;
    case msgpack::type::NEGATIVE_INTEGER:
      return static_cast<BlockHash>(o.via.i64);
    case msgpack::type::BIN: {
      if (o.via.bin.size == 0) fail(path, "an empty bytes block hash");
      BlockHash value = 0;
      const uint32_t from = o.via.bin.size > 8 ? o.via.bin.size - 8 : 0;
      for (uint32_t i = from; i < o.via.bin.size; ++i) {
        value = (value << 8) | static_cast<unsigned char>(o.via.bin.ptr[i]);
      }
      return value;
    }
    case msgpack::type::STR:
      if (o.via.str.size == 0) fail(path, "an empty str block hash");
      return XXH3_64bits(o.via.str.ptr, o.via.str.size);
    default:
      expected(path, "a block hash (an integer, bytes or str)", o);
  }
}

std::string read_str(const msgpack::object& o, const std::string& path) {
  if (o.type != msgpack::type::STR) expected(path, "str", o);
  return {o.via.str.ptr, o.via.str.size};
}

template <typename T, typename Read>
std::optional<T> read_optional(const msgpack::object* o, const std::string& path, Read read) {
  if (o == nullptr || o->type == msgpack::type::NIL) return std::nullopt;
  return read(*o, path);
}

template <typename T, typename Read>
std::vector<T> read_list(const msgpack::object& o, const std::string& path, Read read) {
  if (o.type != msgpack::type::ARRAY) expected(path, "an array", o);
  std::vector<T> values;
  values.reserve(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    values.push_back(read(o.via.array.ptr[i], path + "[" + std::to_string(i) + "]"));
  }
  return values;
}

// Token ids, or none when they are not all integers in int64 (SGLang's EAGLE bigram keys are
// pairs): a block without usable tokens is still a block, named by its hash alone.
std::vector<int64_t> read_tokens(const msgpack::object& o, const std::string& path) {
  if (o.type != msgpack::type::ARRAY) expected(path, "an array", o);
  std::vector<int64_t> tokens;
  tokens.reserve(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    const msgpack::object& t = o.via.array.ptr[i];
    const bool fits = t.type == msgpack::type::NEGATIVE_INTEGER ||
                      (t.type == msgpack::type::POSITIVE_INTEGER &&
                       t.via.u64 <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
    if (!fits) return {};
    tokens.push_back(t.type == msgpack::type::NEGATIVE_INTEGER ? t.via.i64
                                                               : static_cast<int64_t>(t.via.u64));
  }
  return tokens;
}

// extra_keys: a list with one entry per block, each nil or the block's tuple of keys, kept as the
// msgpack bytes msgpack-cxx packs it to.
std::vector<std::optional<ExtraKeys>> read_extra_keys(const msgpack::object& o,
                                                      const std::string& path) {
  return read_list<std::optional<ExtraKeys>>(
      o, path, [](const msgpack::object& entry, const std::string&) {
        if (entry.type == msgpack::type::NIL) return std::optional<ExtraKeys>();
        msgpack::sbuffer bytes;
        msgpack::pack(bytes, entry);
        return std::optional<ExtraKeys>(ExtraKeys(bytes.data(), bytes.size()));
      });
}

// The fields of one struct, by name: a map's values, or an array's elements by position.
class Fields {
 public:
  // `names` in the struct's field order; an array's element i + offset holds field i.
  Fields(const msgpack::object& o, std::string path, std::vector<std::string_view> names,
         uint32_t offset)
      : o_(o), path_(std::move(path)), names_(std::move(names)), offset_(offset) {}

  // nullptr when the field is not there.
  const msgpack::object* find(std::string_view name) const {
    if (o_.type == msgpack::type::MAP) {
      for (uint32_t i = 0; i < o_.via.map.size; ++i) {
        const msgpack::object& k = o_.via.map.ptr[i].key;
        if (k.type == msgpack::type::STR && std::string_view(k.via.str.ptr, k.via.str.size) == name)
          return &o_.via.map.ptr[i].val;
      }
      return nullptr;
    }
    for (uint32_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) {
        return i + offset_ < o_.via.array.size ? &o_.via.array.ptr[i + offset_] : nullptr;
      }
    }
    return nullptr;
  }
  const msgpack::object& required(std::string_view name) const {
    const msgpack::object* value = find(name);
    if (value == nullptr) fail(path_, "missing field \"" + std::string(name) + "\"");
    return *value;
  }
  std::string path(std::string_view name) const { return path_ + "." + std::string(name); }
  bool is_map() const { return o_.type == msgpack::type::MAP; }

 private:
  const msgpack::object& o_;
  std::string path_;
  std::vector<std::string_view> names_;
  uint32_t offset_;
};

BlockStored read_block_stored(const Fields& f) {
  BlockStored e;
  e.block_hashes =
      read_list<BlockHash>(f.required("block_hashes"), f.path("block_hashes"), read_hash);
  e.parent_block_hash = read_optional<BlockHash>(&f.required("parent_block_hash"),
                                                 f.path("parent_block_hash"), read_hash);
  e.token_ids = read_tokens(f.required("token_ids"), f.path("token_ids"));
  const int64_t block_size = read_int(f.required("block_size"), f.path("block_size"));
  if (block_size < 1 || block_size > std::numeric_limits<uint32_t>::max()) {
    fail(f.path("block_size"),
         "must be a positive 32-bit count, got " + std::to_string(block_size));
  }
  e.block_size = static_cast<uint32_t>(block_size);
  e.lora_id = read_optional<int64_t>(f.find("lora_id"), f.path("lora_id"), read_int);
  e.medium = read_optional<std::string>(f.find("medium"), f.path("medium"), read_str);
  e.lora_name = read_optional<std::string>(f.find("lora_name"), f.path("lora_name"), read_str);
  e.extra_keys = read_optional<std::vector<std::optional<ExtraKeys>>>(
      f.find("extra_keys"), f.path("extra_keys"), read_extra_keys);
  if (e.extra_keys && e.extra_keys->size() != e.block_hashes.size()) {
    fail(f.path("extra_keys"), std::to_string(e.extra_keys->size()) + " entries for " +
                                   std::to_string(e.block_hashes.size()) + " blocks");
  }
  e.group_idx = read_optional<int64_t>(f.find("group_idx"), f.path("group_idx"), read_int);
  e.kv_cache_spec_kind = read_optional<std::string>(f.find("kv_cache_spec_kind"),
                                                    f.path("kv_cache_spec_kind"), read_str);
  e.kv_cache_spec_sliding_window = read_optional<int64_t>(
      f.find("kv_cache_spec_sliding_window"), f.path("kv_cache_spec_sliding_window"), read_int);
  return e;
}

BlockRemoved read_block_removed(const Fields& f) {
  BlockRemoved e;
  e.block_hashes =
      read_list<BlockHash>(f.required("block_hashes"), f.path("block_hashes"), read_hash);
  e.medium = read_optional<std::string>(f.find("medium"), f.path("medium"), read_str);
  e.group_idx = read_optional<int64_t>(f.find("group_idx"), f.path("group_idx"), read_int);
  // radixkv's reason: a map's "reason" must be a string; in an array its slot comes after vLLM's
  // fields, where a later vLLM field of another type would be, which is then ignored as a field
  // this decoder does not know.
  const msgpack::object* reason = f.find("reason");
  if (reason != nullptr && (f.is_map() || reason->type == msgpack::type::STR))
    e.reason = read_optional<std::string>(reason, f.path("reason"), read_str);
  return e;
}

KvEvent read_event(const msgpack::object& o, const std::string& path) {
  std::string tag;
  uint32_t offset = 0;
  if (o.type == msgpack::type::MAP) {
    const msgpack::object* type = Fields(o, path, {}, 0).find("type");
    if (type == nullptr) fail(path, "missing field \"type\"");
    tag = read_str(*type, path + ".type");
  } else if (o.type == msgpack::type::ARRAY) {
    if (o.via.array.size == 0) fail(path, "empty array: no event tag");
    tag = read_str(o.via.array.ptr[0], path + "[0]");
    offset = 1;
  } else {
    expected(path, "a map or an array", o);
  }
  if (tag == "BlockStored") {
    return read_block_stored(Fields(o, path,
                                    {"block_hashes", "parent_block_hash", "token_ids", "block_size",
                                     "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
                                     "kv_cache_spec_kind", "kv_cache_spec_sliding_window"},
                                    offset));
  }
  if (tag == "BlockRemoved") {
    return read_block_removed(
        Fields(o, path, {"block_hashes", "medium", "group_idx", "reason"}, offset));
  }
  if (tag == "AllBlocksCleared") return AllBlocksCleared{};
  fail(path,
       "unknown event type \"" + tag + "\" (known: BlockStored, BlockRemoved, AllBlocksCleared)");
}

EventBatch read_batch(const msgpack::object& o) {
  if (o.type != msgpack::type::MAP && o.type != msgpack::type::ARRAY) {
    expected("batch", "a map or an array", o);
  }
  const Fields f(o, "batch", {"ts", "events", "data_parallel_rank"}, 0);
  EventBatch batch;
  const msgpack::object& ts = f.required("ts");
  if (ts.type == msgpack::type::FLOAT32 || ts.type == msgpack::type::FLOAT64) {
    batch.ts = ts.via.f64;
  } else if (is_int(ts)) {
    batch.ts = static_cast<double>(read_int(ts, "batch.ts"));
  } else {
    expected("batch.ts", "a number", ts);
  }
  const msgpack::object& events = f.required("events");
  if (events.type != msgpack::type::ARRAY) expected("batch.events", "an array", events);
  batch.events.reserve(events.via.array.size);
  for (uint32_t i = 0; i < events.via.array.size; ++i) {
    batch.events.push_back(
        read_event(events.via.array.ptr[i], "events[" + std::to_string(i) + "]"));
  }
  batch.data_parallel_rank =
      read_optional<int64_t>(f.find("data_parallel_rank"), "batch.data_parallel_rank", read_int);
  return batch;
}

}  // namespace

std::string_view to_string(EventEncoding encoding) {
  return encoding == EventEncoding::kMap ? "map" : "array";
}

EventEncoding parse_event_encoding(std::string_view name) {
  if (name == "map") return EventEncoding::kMap;
  if (name == "array") return EventEncoding::kArray;
  throw std::invalid_argument("unknown KV event encoding \"" + std::string(name) +
                              "\" (known: map, array)");
}

std::string encode_batch(const EventBatch& batch, EventEncoding encoding) {
  Writer writer(encoding);
  writer.batch(batch);
  return writer.finish();
}

EventBatch decode_batch(std::string_view payload) {
  // Every element takes at least one byte, so no honest container is longer than the payload:
  // the limits stop a forged length from allocating gigabytes before the data runs out.
  const std::size_t n = payload.size();
  const msgpack::unpack_limit limit(n, n, n, n, n, 64);
  msgpack::object_handle handle;
  std::size_t offset = 0;
  try {
    handle = msgpack::unpack(payload.data(), n, offset, nullptr, nullptr, limit);
  } catch (const std::exception& e) {
    throw EventDecodeError(std::string("payload: not a msgpack value (") + e.what() + ")");
  }
  if (offset != n) {
    throw EventDecodeError("payload: " + std::to_string(n - offset) +
                           " bytes after the end of the batch");
  }
  return read_batch(handle.get());
}

}  // namespace radixkv::events
