find_package(Threads REQUIRED)
radixkv_add_test(test_shared_runtime SOURCES test_shared_runtime.cpp
  LIBS radixkv_runtime Threads::Threads)
