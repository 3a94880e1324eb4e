#include "tokens.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "errors.h"

namespace py = pybind11;

namespace radixkv::python {
namespace {

bool is_torch_tensor(py::handle value) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
  const std::string module = py::str(type.attr("__module__"));
  return module.rfind("torch", 0) == 0;
}

// Text, encoded or not, is not token ids: bytes and bytearray (and byte views of them) are
// integer sequences to Python, but b"abc" as tokens [97, 98, 99] is a caller's bug. A view cast
// to wider integers (memoryview(b).cast("i")) says its bytes are numbers, and is read as such.
bool is_text(PyObject* source) {
  if (PyUnicode_Check(source) || PyBytes_Check(source) || PyByteArray_Check(source)) return true;
  if (!PyMemoryView_Check(source)) return false;
  PyObject* base = PyMemoryView_GET_BASE(source);
  return PyMemoryView_GET_BUFFER(source)->itemsize == 1 && base != nullptr &&
         (PyBytes_Check(base) || PyByteArray_Check(base));
}

// Python's bool and NumPy's (numpy.bool_, numpy.bool in NumPy 2) are integers to Python (NumPy 1's
// has __index__, deprecated), but a True among token ids is a bug, not token 1.
bool is_bool(PyObject* item) {
  if (PyBool_Check(item)) return true;
  const std::string_view type = Py_TYPE(item)->tp_name;
  return type == "numpy.bool_" || type == "numpy.bool";
}

[[noreturn]] void not_an_integer(PyObject* item, std::size_t index, const char* what) {
  throw py::type_error(fmt::format("{}: item {} is {} (a {}), not an integer", what, index,
                                   std::string(py::repr(item)), Py_TYPE(item)->tp_name));
}

// An item that is not exactly an int: anything with __index__ (NumPy integer scalars, torch
// integers, int subclasses), but a bool. Cold: the loop's fast path is a plain int.
[[gnu::cold, gnu::noinline]] long long index_of(PyObject* item, std::size_t index, const char* what,
                                                int& overflow) {
  if (is_bool(item) || !PyIndex_Check(item)) not_an_integer(item, index, what);
  const py::object value = py::reinterpret_steal<py::object>(PyNumber_Index(item));
  if (!value) {  // __index__ raised
    PyErr_Clear();
    not_an_integer(item, index, what);
  }
  return PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
}

template <typename T>
T checked(long long value, std::size_t index, const char* what) {
  if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max()) {
    throw std::invalid_argument(fmt::format("{}: value {} at index {} is outside [{}, {}]", what,
                                            value, index, std::numeric_limits<T>::min(),
                                            std::numeric_limits<T>::max()));
  }
  return static_cast<T>(value);
}

// Copies a 1-D buffer of Source integers into `out`, checking each against T's range.
template <typename T, typename Source>
void copy_checked(const py::buffer_info& info, std::vector<T>& out, const char* what) {
  const char* base = static_cast<const char*>(info.ptr);
  const py::ssize_t stride = info.strides[0];
  for (std::size_t i = 0; i < out.size(); ++i) {
    Source v;
    std::memcpy(&v, base + static_cast<py::ssize_t>(i) * stride, sizeof v);
    if constexpr (std::is_same_v<Source, T>) {
      out[i] = v;
    } else {
      if (std::cmp_less(v, std::numeric_limits<T>::min()) ||
          std::cmp_greater(v, std::numeric_limits<T>::max())) {
        throw std::invalid_argument(fmt::format("{}: value {} at index {} is outside [{}, {}]",
                                                what, v, i, std::numeric_limits<T>::min(),
                                                std::numeric_limits<T>::max()));
      }
      out[i] = static_cast<T>(v);
    }
  }
}

// A 1-D integer buffer (NumPy array) into `out`: the element type is decoded once.
template <typename T>
void copy_buffer(const py::buffer_info& info, std::vector<T>& out, const char* what) {
  // The format may carry a byte-order or size prefix ('<q', '=i'); the last char is the type.
  const char format = info.format.empty() ? '?' : info.format.back();
  const bool is_signed = std::string_view("bhilqn").find(format) != std::string_view::npos;
  const bool is_unsigned = std::string_view("BHILQN").find(format) != std::string_view::npos;
  if (!is_signed && !is_unsigned) {
    throw py::type_error(
        fmt::format("{}: the array's element type '{}' is not an integer type", what, format));
  }
  switch (info.itemsize * (is_signed ? 1 : -1)) {
    case 1:
      return copy_checked<T, int8_t>(info, out, what);
    case 2:
      return copy_checked<T, int16_t>(info, out, what);
    case 4:
      return copy_checked<T, int32_t>(info, out, what);
    case 8:
      return copy_checked<T, int64_t>(info, out, what);
    case -1:
      return copy_checked<T, uint8_t>(info, out, what);
    case -2:
      return copy_checked<T, uint16_t>(info, out, what);
    case -4:
      return copy_checked<T, uint32_t>(info, out, what);
    case -8:
      return copy_checked<T, uint64_t>(info, out, what);
    default:
      throw std::invalid_argument(
          fmt::format("{}: integers of {} bytes are not supported", what, info.itemsize));
  }
}

template <typename T>
std::vector<T> to_integers(py::handle values, const char* what) {
  py::object source = py::reinterpret_borrow<py::object>(values);
  if (is_torch_tensor(source)) {
    require_module("numpy", "a torch tensor as input");
    source = source.attr("detach")().attr("cpu")().attr("numpy")();
  }
  std::vector<T> out;
  if (is_text(source.ptr())) {
    throw py::type_error(
        fmt::format("{}: expected a list of ints, a NumPy integer array or a torch tensor, got {} "
                    "(text is not token ids: tokenize it first)",
                    what, std::string(py::str(py::type::handle_of(source).attr("__name__")))));
  }
  if (PyObject_CheckBuffer(source.ptr())) {
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request();
    if (info.ndim != 1) {
      throw std::invalid_argument(
          fmt::format("{}: expected a 1-D array, got {} dimensions", what, info.ndim));
    }
    out.resize(static_cast<std::size_t>(info.shape[0]));
    copy_buffer(info, out, what);
    return out;
  }
  if (!PySequence_Check(source.ptr())) {
    throw py::type_error(
        fmt::format("{}: expected a list of ints, a NumPy integer array or a torch tensor, got {}",
                    what, std::string(py::str(py::type::handle_of(source).attr("__name__")))));
  }
  const py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(source.ptr(), what));
  if (!fast) throw py::error_already_set();
  PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
  out.resize(static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast.ptr())));
  for (std::size_t i = 0; i < out.size(); ++i) {
    PyObject* item = items[i];
    int overflow = 0;
    // Plain ints stay on the fast path: one type check, one conversion.
    const long long value = PyLong_CheckExact(item) ? PyLong_AsLongLongAndOverflow(item, &overflow)
                                                    : index_of(item, i, what, overflow);
    if (overflow != 0) {
      throw std::invalid_argument(fmt::format("{}: item {} is out of range", what, i));
    }
    out[i] = checked<T>(value, i, what);
  }
  return out;
}

}  // namespace

std::vector<int32_t> to_int32s(py::handle values, const char* what) {
  return to_integers<int32_t>(values, what);
}
std::vector<int64_t> to_int64s(py::handle values, const char* what) {
  return to_integers<int64_t>(values, what);
}

}  // namespace radixkv::python
