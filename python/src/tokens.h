// Integer sequences from Python: token ids and KV slot indices, given as a list (any sequence of
// integers: ints, or anything with __index__ such as NumPy integer scalars, but bools), a NumPy
// array of any integer dtype or another buffer of integers (read through the buffer protocol, no
// copy of the Python objects) or a torch tensor (through .numpy() on its CPU copy).
//
// Refused, naming `what` and, for an item, its index and value: the wrong kind of input is a
// TypeError (text: str, bytes, bytearray or a byte view of them; an item that is no integer, or a
// bool, Python's or NumPy's; an array of floats); a value out of the C++ type's range, or an array
// that is not 1-D, a ValueError. Plain ints take the fast path (one exact type check each). Call
// with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

namespace radixkv::python {

std::vector<int32_t> to_int32s(pybind11::handle values, const char* what);
std::vector<int64_t> to_int64s(pybind11::handle values, const char* what);

}  // namespace radixkv::python
