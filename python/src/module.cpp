// radixkv._radixkv: the extension module under the Python package radixkv (python/radixkv).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "errors.h"
#include "radixkv/version.h"

PYBIND11_MODULE(_radixkv, m) {
  m.doc() = "radixkv's C++ core; import the package radixkv, not this module.";
  m.attr("__version__") = RADIXKV_VERSION_STRING;
  radixkv::python::register_error_translation();
  radixkv::python::bind_core(m);
  radixkv::python::bind_sglang(m);
}
