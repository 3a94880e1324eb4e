// The parts of the module, each in its own file; module.cpp calls them in order.
#pragma once

#include <pybind11/pybind11.h>

namespace radixkv::python {

void bind_core(pybind11::module_& m);    // bind_core.cpp: layouts, pools, the runtime, policies
void bind_sglang(pybind11::module_& m);  // bind_sglang.cpp: the slot trie under radixkv.sglang

}  // namespace radixkv::python
