# radixkv as other projects take it in (issue 13).
#   test_host_allocator    linked like a consumer (radixkv::radixkv only): the program keeps the C
#                          library's malloc and the C++ runtime's operator new
#   readme_example         the README's scheduler example is examples/embed/main.cpp, verbatim
# The installed package itself (examples/embed built against it, pkg-config, every header alone,
# the consumer's malloc bindings) is scripts/check-install.sh, which .ci/run runs after ctest.
radixkv_add_test(test_host_allocator SOURCES test_host_allocator.cpp
  LIBS radixkv::radixkv ${CMAKE_DL_LIBS})

find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME readme_example
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/check-readme-example.py
          ${PROJECT_SOURCE_DIR})

