#include "tokens.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "errors.h"

namespace py = pybind11;

namespace radixkv::python {
namespace {

bool is_torch_tensor(py::handle value) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
  const std::string module = py::str(type.attr("__module__"));
  return module.rfind("torch", 0) == 0;
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

// One element of a 1-D integer buffer, as long long (unsigned 64-bit values above its range are
// refused by the caller's range check through the sign).
long long read_integer(const char* at, char format, std::size_t itemsize, std::size_t index,
                       const char* what) {
  const bool is_unsigned = format == 'B' || format == 'H' || format == 'I' || format == 'L' ||
                           format == 'Q' || format == 'N';
  const bool is_signed = format == 'b' || format == 'h' || format == 'i' || format == 'l' ||
                         format == 'q' || format == 'n';
  if (!is_signed && !is_unsigned) {
    throw std::invalid_argument(
        fmt::format("{}: the array's element type '{}' is not an integer type", what, format));
  }
  switch (itemsize) {
    case 1:
      return is_signed ? *reinterpret_cast<const int8_t*>(at)
                       : *reinterpret_cast<const uint8_t*>(at);
    case 2:
      return is_signed ? *reinterpret_cast<const int16_t*>(at)
                       : *reinterpret_cast<const uint16_t*>(at);
    case 4:
      return is_signed ? *reinterpret_cast<const int32_t*>(at)
                       : *reinterpret_cast<const uint32_t*>(at);
    case 8: {
      if (is_signed) return *reinterpret_cast<const int64_t*>(at);
      uint64_t v;
      std::memcpy(&v, at, 8);
      if (v > uint64_t{std::numeric_limits<long long>::max()}) {
        throw std::invalid_argument(
            fmt::format("{}: value {} at index {} is out of range", what, v, index));
      }
      return static_cast<long long>(v);
    }
    default:
      throw std::invalid_argument(
          fmt::format("{}: integers of {} bytes are not supported", what, itemsize));
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
  if (PyObject_CheckBuffer(source.ptr()) && !py::isinstance<py::bytes>(source)) {
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request();
    if (info.ndim != 1) {
      throw std::invalid_argument(
          fmt::format("{}: expected a 1-D array, got {} dimensions", what, info.ndim));
    }
    // The format may carry a byte-order or size prefix ('<q', '=i'); the last char is the type.
    const char format = info.format.empty() ? '?' : info.format.back();
    out.resize(static_cast<std::size_t>(info.shape[0]));
    const char* base = static_cast<const char*>(info.ptr);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const char* at = base + static_cast<py::ssize_t>(i) * info.strides[0];
      out[i] = checked<T>(
          read_integer(at, format, static_cast<std::size_t>(info.itemsize), i, what), i, what);
    }
    return out;
  }
  if (!PySequence_Check(source.ptr()) || py::isinstance<py::str>(source)) {
    throw std::invalid_argument(
        fmt::format("{}: expected a list of ints, a NumPy integer array or a torch tensor, got {}",
                    what, std::string(py::str(py::type::handle_of(source).attr("__name__")))));
  }
  const py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(source.ptr(), what));
  if (!fast) throw py::error_already_set();
  PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
  out.resize(static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast.ptr())));
  for (std::size_t i = 0; i < out.size(); ++i) {
    PyObject* item = items[i];
    if (!PyLong_Check(item) || PyBool_Check(item)) {
      throw std::invalid_argument(
          fmt::format("{}: item {} is {}, not an integer", what, i, std::string(py::repr(item))));
    }
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(item, &overflow);
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
