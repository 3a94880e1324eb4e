find_package(Threads REQUIRED)
# Label `threads`: scripts/sanitize.sh thread runs these under TSan.
radixkv_add_test(test_shared_runtime SOURCES test_shared_runtime.cpp
  LIBS radixkv_runtime Threads::Threads LABELS threads)

radixkv_add_test(test_bad_input_matrix SOURCES test_bad_input_matrix.cpp
  LIBS radixkv_cli radixkv_runtime)
# The issue-14 cases run the built binary too (out of memory needs a process of its own).
target_compile_definitions(test_bad_input_matrix PRIVATE RADIXKV_BINARY="$<TARGET_FILE:radixkv>")
add_dependencies(test_bad_input_matrix radixkv)
