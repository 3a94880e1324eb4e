#include "errors.h"

#include <fmt/format.h>

#include <new>
#include <stdexcept>

namespace py = pybind11;

namespace radixkv::python {

void register_error_translation() {
  py::register_exception_translator([](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const py::builtin_exception&) {
      throw;  // already a Python exception (py::value_error and the like)
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::domain_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::logic_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "radixkv: out of memory");
    }
  });
}

py::module_ require_module(const char* package, const char* needed_for) {
  try {
    return py::module_::import(package);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    throw py::import_error(
        fmt::format("radixkv: {} needs the Python package '{}', which does not import here ({}); "
                    "install it (Debian: python3-{})",
                    needed_for, package, e.what(), package));
  }
}

}  // namespace radixkv::python
