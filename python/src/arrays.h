// NumPy arrays out of C++ vectors. NumPy is imported only here, when an array is produced, so
// `import radixkv` works without it; without it these raise ImportError naming the package.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

#include "errors.h"

namespace radixkv::python {

// A 1-D array that owns `values` (moved, not copied).
template <typename T>
pybind11::array_t<T> to_numpy(std::vector<T>&& values) {
  require_module("numpy", "an array result");
  auto* owned = new std::vector<T>(std::move(values));
  pybind11::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return pybind11::array_t<T>({owned->size()}, {sizeof(T)}, owned->data(), free_when_done);
}

}  // namespace radixkv::python
