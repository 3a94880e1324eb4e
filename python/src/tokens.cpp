#include "tokens.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "errors.h"

namespace py = pybind11;

namespace radixkv::python {
namespace {

std::string type_name(PyObject* object) { return Py_TYPE(object)->tp_name; }

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

[[noreturn]] void not_a_sequence(PyObject* source, const char* what, const char* why = "") {
  throw py::type_error(fmt::format(
      "{}: expected a list of ints, an integer buffer (array('q'), a NumPy array) or a torch "
      "tensor, got {}{}",
      what, type_name(source), why));
}

// A small int's value read from the object itself, as CPython stores it: true when `item` (an
// exact int) is compact, which every int below 2^30 in magnitude is.
inline bool compact_value(PyObject* item, long long& value) {
#if PY_VERSION_HEX >= 0x030C0000
  auto* number = reinterpret_cast<PyLongObject*>(item);
  if (!PyUnstable_Long_IsCompact(number)) return false;
  value = PyUnstable_Long_CompactValue(number);
  return true;
#else
  // CPython 3.11: the sign of ob_size is the number's, its magnitude the count of 30-bit digits.
  const Py_ssize_t digits = Py_SIZE(item);
  if (digits < -1 || digits > 1) return false;
  const long long magnitude = reinterpret_cast<PyLongObject*>(item)->ob_digit[0];
  value = digits == 0 ? 0 : digits * magnitude;
  return true;
#endif
}

// Any item the fast path does not take: a big or subclassed int, or anything with __index__ (NumPy
// integer scalars, torch integers) but a bool. Cold: a list of small ints never comes here.
template <typename T>
[[gnu::cold, gnu::noinline]] T slow_item(const py::object& item, std::size_t index,
                                         const char* what) {
  const auto not_an_integer = [&] {
    return py::type_error(fmt::format("{}: item {} is {} (a {}), not an integer", what, index,
                                      std::string(py::repr(item)), type_name(item.ptr())));
  };
  if (is_bool(item.ptr()) || !PyIndex_Check(item.ptr())) throw not_an_integer();
  const auto number = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
  if (!number) {  // __index__ raised
    PyErr_Clear();
    throw not_an_integer();
  }
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  if (overflow != 0 || !std::in_range<T>(value)) {
    throw std::invalid_argument(fmt::format(
        "{}: value {} at index {} is outside [{}, {}]", what, std::string(py::repr(number)), index,
        std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  }
  return static_cast<T>(value);
}

// Items [first, first + count) of an exact list or tuple: one pass, no call per small int (which
// always fits T: compact ints are below 2^30 in magnitude). An item's __index__ may change a
// list: the item is held while it runs, and the list's length checked after.
template <typename T>
void read_items(PyObject* sequence, std::size_t first, std::size_t count, T* out,
                const char* what) {
  const bool list = PyList_CheckExact(sequence);
  for (std::size_t i = 0; i < count; ++i) {
    PyObject* item =
        list ? PyList_GET_ITEM(sequence, first + i) : PyTuple_GET_ITEM(sequence, first + i);
    long long value;
    if (PyLong_CheckExact(item) && compact_value(item, value)) [[likely]] {
      out[i] = static_cast<T>(value);
      continue;
    }
    out[i] = slow_item<T>(py::reinterpret_borrow<py::object>(item), first + i, what);
    if (list && static_cast<std::size_t>(PyList_GET_SIZE(sequence)) < first + count) {
      throw std::logic_error(fmt::format(
          "{}: the list changed while it was read (an item's __index__ changed it)", what));
    }
  }
}

// Window [first, end) of a sequence of `size` items.
std::pair<std::size_t, std::size_t> window_of(std::size_t size, Window window) {
  const std::size_t end = std::min(size, window.limit);
  return {std::min(window.first, end), end};
}

template <typename T, typename Source>
void copy_checked(const char* base, py::ssize_t stride, std::size_t first, std::size_t count,
                  T* out, const char* what) {
  for (std::size_t i = 0; i < count; ++i) {
    Source v;
    std::memcpy(&v, base + static_cast<py::ssize_t>(first + i) * stride, sizeof v);
    if constexpr (!std::is_same_v<Source, T>) {
      if (!std::in_range<T>(v)) {
        throw std::invalid_argument(fmt::format("{}: value {} at index {} is outside [{}, {}]",
                                                what, v, first + i, std::numeric_limits<T>::min(),
                                                std::numeric_limits<T>::max()));
      }
    }
    out[i] = static_cast<T>(v);
  }
}

// The element type of a 1-D buffer: its size in bytes, negative when unsigned. Refuses what is
// not an integer (floats, bools, chars) and a byte order other than the machine's.
int element_kind(const py::buffer_info& info, const char* what) {
  std::string_view format = info.format;
  if (!format.empty() && std::string_view("@=<>!").find(format.front()) != std::string_view::npos) {
    const bool big = format.front() == '>' || format.front() == '!';
    if (big != (std::endian::native == std::endian::big)) {
      throw std::invalid_argument(
          fmt::format("{}: the buffer's byte order ('{}') is not the machine's; convert it first",
                      what, info.format));
    }
    format.remove_prefix(1);
  }
  const char type = format.size() == 1 ? format.front() : '?';
  const bool is_signed = std::string_view("bhilqn").find(type) != std::string_view::npos;
  const bool is_unsigned = std::string_view("BHILQN").find(type) != std::string_view::npos;
  if (!is_signed && !is_unsigned) {
    throw py::type_error(fmt::format("{}: the buffer's element type '{}' is not an integer type",
                                     what, info.format));
  }
  return static_cast<int>(info.itemsize) * (is_signed ? 1 : -1);
}

// A 1-D run of integers somewhere in memory: what a buffer or a tensor holds.
struct RawIntegers {
  const char* base = nullptr;
  py::ssize_t stride = 0;  // bytes
  std::size_t size = 0;
  int kind = 0;  // bytes per element, negative when unsigned
};

// `raw`'s window as T: in place when it holds T contiguously, else checked into `scratch`.
template <typename T>
std::span<const T> read_raw(const RawIntegers& raw, const char* what, std::vector<T>& scratch,
                            Window window) {
  const auto [first, end] = window_of(raw.size, window);
  const std::size_t count = end - first;
  if (raw.kind == static_cast<int>(sizeof(T)) &&
      raw.stride == static_cast<py::ssize_t>(sizeof(T)) &&
      reinterpret_cast<std::uintptr_t>(raw.base) % alignof(T) == 0) {
    return {reinterpret_cast<const T*>(raw.base) + first, count};
  }
  scratch.resize(count);
  T* out = scratch.data();
  const char* base = raw.base;
  const py::ssize_t stride = raw.stride;
  switch (raw.kind) {
    case 1:
      copy_checked<T, int8_t>(base, stride, first, count, out, what);
      break;
    case 2:
      copy_checked<T, int16_t>(base, stride, first, count, out, what);
      break;
    case 4:
      copy_checked<T, int32_t>(base, stride, first, count, out, what);
      break;
    case 8:
      copy_checked<T, int64_t>(base, stride, first, count, out, what);
      break;
    case -1:
      copy_checked<T, uint8_t>(base, stride, first, count, out, what);
      break;
    case -2:
      copy_checked<T, uint16_t>(base, stride, first, count, out, what);
      break;
    case -4:
      copy_checked<T, uint32_t>(base, stride, first, count, out, what);
      break;
    case -8:
      copy_checked<T, uint64_t>(base, stride, first, count, out, what);
      break;
    default:
      throw std::invalid_argument(
          fmt::format("{}: integers of {} bytes are not supported", what, std::abs(raw.kind)));
  }
  return {scratch.data(), count};
}

template <typename T>
Integers<T> read_buffer(py::object source, const char* what, std::vector<T>& scratch,
                        Window window) {
  Integers<T> result;
  result.buffer.emplace(py::reinterpret_borrow<py::buffer>(source).request());
  const py::buffer_info& info = *result.buffer;
  result.source = std::move(source);
  if (info.ndim != 1) {
    throw std::invalid_argument(
        fmt::format("{}: expected a 1-D array, got {} dimensions", what, info.ndim));
  }
  const RawIntegers raw{.base = static_cast<const char*>(info.ptr),
                        .stride = info.strides[0],
                        .size = static_cast<std::size_t>(info.shape[0]),
                        .kind = element_kind(info, what)};
  result.values = read_raw(raw, what, scratch, window);
  if (result.values.data() == scratch.data()) result.buffer.reset();  // copied: let it go
  return result;
}

// torch, once something has imported it (radixkv never does): the Tensor type and the integer
// dtypes a tensor is read in place for, each with its element kind (RawIntegers::kind).
struct Torch {
  PyTypeObject* tensor = nullptr;
  std::vector<std::pair<PyObject*, int>> kinds;
};

const Torch* torch_types() {
  static Torch torch;  // its objects are kept for good: they live as long as torch does
  if (torch.tensor == nullptr) {
    const auto module =
        py::reinterpret_steal<py::object>(PyImport_GetModule(py::str("torch").ptr()));
    if (!module || module.is_none()) {
      PyErr_Clear();
      return nullptr;
    }
    if (!py::hasattr(module, "Tensor") || !py::hasattr(module, "uint8")) {
      return nullptr;  // still importing
    }
    for (const auto& [name, kind] :
         {std::pair{"int64", 8}, {"int32", 4}, {"int16", 2}, {"int8", 1}, {"uint8", -1}}) {
      torch.kinds.emplace_back(py::object(module.attr(name)).release().ptr(), kind);
    }
    torch.tensor =
        reinterpret_cast<PyTypeObject*>(py::object(module.attr("Tensor")).release().ptr());
  }
  return &torch;
}

// A 1-D CPU tensor of an integer dtype, read in place through its data pointer: a few attribute
// reads through the C API (interned names), far cheaper than .numpy() (about 1.6 us, which a
// request would pay at every insert). nullopt for any other tensor (on a device, another dtype,
// more dimensions).
std::optional<RawIntegers> tensor_in_place(PyObject* tensor, const Torch& torch) {
  static PyObject* const is_cpu = PyUnicode_InternFromString("is_cpu");  // kept for good
  static PyObject* const dim = PyUnicode_InternFromString("dim");
  static PyObject* const dtype = PyUnicode_InternFromString("dtype");
  static PyObject* const stride = PyUnicode_InternFromString("stride");
  static PyObject* const numel = PyUnicode_InternFromString("numel");
  static PyObject* const data_ptr = PyUnicode_InternFromString("data_ptr");
  const auto get = [&](PyObject* name) {
    auto value = py::reinterpret_steal<py::object>(PyObject_GetAttr(tensor, name));
    if (!value) throw py::error_already_set();
    return value;
  };
  const auto call = [&](PyObject* name) {
    auto value = py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(tensor, name));
    if (!value) throw py::error_already_set();
    return value;
  };
  if (get(is_cpu).ptr() != Py_True || PyLong_AsLong(call(dim).ptr()) != 1) return std::nullopt;
  const py::object type = get(dtype);
  for (const auto& [known, kind] : torch.kinds) {
    if (type.ptr() != known) continue;
    const auto step = py::reinterpret_steal<py::object>(
        PyObject_CallMethodOneArg(tensor, stride, py::int_(0).ptr()));
    if (!step) throw py::error_already_set();
    return RawIntegers{
        .base = reinterpret_cast<const char*>(PyLong_AsVoidPtr(call(data_ptr).ptr())),
        .stride = PyLong_AsSsize_t(step.ptr()) * std::abs(kind),
        .size = PyLong_AsSize_t(call(numel).ptr()),
        .kind = kind};
  }
  return std::nullopt;
}

// Any other tensor: its CPU copy's NumPy view (which refuses what is not an integer type).
py::object tensor_as_numpy(py::handle tensor) {
  require_module("numpy", "a torch tensor as input");
  return tensor.attr("detach")().attr("cpu")().attr("numpy")();
}

template <typename T>
Integers<T> in_scratch(const std::vector<T>& scratch) {
  Integers<T> result;
  result.values = scratch;
  return result;
}

template <typename T>
Integers<T> read_integers(py::handle source, const char* what, std::vector<T>& scratch,
                          Window window) {
  PyObject* object = source.ptr();
  if (PyList_CheckExact(object) || PyTuple_CheckExact(object)) {
    const auto [first, end] = window_of(static_cast<std::size_t>(Py_SIZE(object)), window);
    scratch.resize(end - first);
    read_items(object, first, end - first, scratch.data(), what);
    return in_scratch(scratch);
  }
  if (is_text(object)) not_a_sequence(object, what, " (text is not token ids: tokenize it first)");
  if (PyObject_CheckBuffer(object)) {
    return read_buffer(py::reinterpret_borrow<py::object>(source), what, scratch, window);
  }
  if (const Torch* torch = torch_types();
      torch != nullptr && PyObject_TypeCheck(object, torch->tensor)) {
    if (const auto raw = tensor_in_place(object, *torch)) {
      Integers<T> result;
      result.source = py::reinterpret_borrow<py::object>(source);  // holds the memory
      result.values = read_raw(*raw, what, scratch, window);
      return result;
    }
    return read_buffer(tensor_as_numpy(source), what, scratch, window);
  }
  if (!PySequence_Check(object)) not_a_sequence(object, what);
  const auto fast = py::reinterpret_steal<py::object>(PySequence_Fast(object, what));
  if (!fast) throw py::error_already_set();
  const auto [first, end] = window_of(static_cast<std::size_t>(Py_SIZE(fast.ptr())), window);
  scratch.resize(end - first);
  read_items(fast.ptr(), first, end - first, scratch.data(), what);
  return in_scratch(scratch);
}

template <typename T>
std::vector<T> copy_of(py::handle values, const char* what) {
  std::vector<T> scratch;
  const Integers<T> read = read_integers<T>(values, what, scratch, Window{});
  if (read.values.data() == scratch.data()) return scratch;
  return {read.values.begin(), read.values.end()};
}

}  // namespace

Integers<int32_t> read_int32s(py::handle source, const char* what, std::vector<int32_t>& scratch,
                              Window window) {
  return read_integers(source, what, scratch, window);
}
Integers<int64_t> read_int64s(py::handle source, const char* what, std::vector<int64_t>& scratch,
                              Window window) {
  return read_integers(source, what, scratch, window);
}

std::vector<int32_t> to_int32s(py::handle values, const char* what) {
  return copy_of<int32_t>(values, what);
}
std::vector<int64_t> to_int64s(py::handle values, const char* what) {
  return copy_of<int64_t>(values, what);
}

}  // namespace radixkv::python
