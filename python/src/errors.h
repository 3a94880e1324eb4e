// How radixkv's C++ exceptions reach Python, in one place (errors.cpp):
//   std::invalid_argument (and the other bad-value errors)  -> ValueError   a bad argument
//   std::logic_error                                        -> RuntimeError misuse: a dead handle,
//                                                              a double finish, a stale node
//   std::bad_alloc                                          -> MemoryError
//   anything else derived from std::exception               -> RuntimeError
// The message is the C++ one, which names the input and why.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace radixkv::python {

void register_error_translation();

// ImportError naming `package` and what needed it, unless `package` imports (NumPy, torch:
// radixkv imports them only where an array is produced or accepted).
pybind11::module_ require_module(const char* package, const char* needed_for);

}  // namespace radixkv::python
