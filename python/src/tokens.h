// Integer sequences from Python: token ids and KV slot indices, given as a list or tuple of ints,
// any 1-D buffer of integers (array('q'), a NumPy array of any integer dtype, a memoryview), or a
// torch tensor (read through .numpy() of its CPU copy).
//
// Speed (issue 30): no Python call per item. A list is read in one tight loop over its items,
// taking a small int's value straight from the object (CPython's compact ints), with a slower
// path for big ints and for items that are not ints but have __index__ (NumPy integer scalars);
// a buffer that already holds the C++ type contiguously is read in place, without a copy.
//
// Refused, changing nothing: text as tokens (str, bytes, bytearray, a byte view of them: b"abc"
// is not [97, 98, 99]) and bools (True is not token 1) with TypeError, like anything that is not
// an integer or an integer sequence; a value outside the C++ type's range with ValueError. Each
// message names `what`, the index and the value. Call with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace radixkv::python {

// The window of a sequence to read: items [first, min(size, limit)) (SGLang's RadixKey.limit
// caps a key without slicing it; a bigram key's first token goes to its namespace).
struct Window {
  std::size_t first = 0;
  std::size_t limit = std::numeric_limits<std::size_t>::max();
};

// A sequence read as T: `values` point either into the caller's buffer (kept alive here) or into
// `scratch`. Destroy with the GIL held (it may release a buffer).
template <typename T>
struct Integers {
  std::span<const T> values;
  std::optional<pybind11::buffer_info> buffer;  // the caller's buffer, when read in place
  pybind11::object source;                      // what the buffer belongs to (a torch tensor's
                                                // NumPy view)
};

// Reads `source`'s window as T. Uses `scratch` (resized) unless the buffer holds T already.
Integers<int32_t> read_int32s(pybind11::handle source, const char* what,
                              std::vector<int32_t>& scratch, Window window = {});
Integers<int64_t> read_int64s(pybind11::handle source, const char* what,
                              std::vector<int64_t>& scratch, Window window = {});

// Copies: for callers that keep the values (bind_core.cpp).
std::vector<int32_t> to_int32s(pybind11::handle values, const char* what);
std::vector<int64_t> to_int64s(pybind11::handle values, const char* what);

}  // namespace radixkv::python
