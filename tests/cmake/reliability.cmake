find_package(Threads REQUIRED)
# Label `threads`: scripts/sanitize.sh thread runs these under TSan.
radixkv_add_test(test_shared_runtime SOURCES test_shared_runtime.cpp
  LIBS radixkv_runtime Threads::Threads LABELS threads)

radixkv_add_test(test_bad_input_matrix SOURCES test_bad_input_matrix.cpp
  LIBS radixkv_cli radixkv_runtime)
