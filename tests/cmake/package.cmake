# radixkv as other projects take it in (issue 13).
#   test_host_allocator    linked like a consumer (radixkv::radixkv only): the program keeps the C
#                          library's malloc and the C++ runtime's operator new
#   readme_example         the README's scheduler example is examples/embed/main.cpp, verbatim
#   install_and_embed      scripts/check-install.sh: install to a temporary prefix, then build and
#                          run examples/embed with find_package and with pkg-config, compile each
#                          installed header alone, check the consumer's malloc bindings
radixkv_add_test(test_host_allocator SOURCES test_host_allocator.cpp
  LIBS radixkv::radixkv ${CMAKE_DL_LIBS})

find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME readme_example
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/check-readme-example.py
          ${PROJECT_SOURCE_DIR})

# Sanitizer builds install instrumented libraries that a plain consumer cannot link.
if(RADIXKV_INSTALL AND NOT RADIXKV_SANITIZE)
  add_test(NAME install_and_embed
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-install.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(install_and_embed PROPERTIES LABELS "install;slow" TIMEOUT 900)
endif()
