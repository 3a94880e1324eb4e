// Integer sequences from Python: token ids and KV slot indices, given as a list (any sequence of
// ints), a NumPy array of any integer dtype (read through the buffer protocol, no copy of the
// Python objects) or a torch tensor (through .numpy() on its CPU copy).
//
// Every value is checked against the C++ type's range; a value out of range or not an integer is
// a ValueError naming `what`, the index and the value. Call with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

namespace radixkv::python {

std::vector<int32_t> to_int32s(pybind11::handle values, const char* what);
std::vector<int64_t> to_int64s(pybind11::handle values, const char* what);

}  // namespace radixkv::python
