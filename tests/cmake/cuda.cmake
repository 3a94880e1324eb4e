# Page backend tests: the interface tests run on every backend (host always, CUDA when a device
# answers; they skip, saying why, when none does). Built with or without nvcc.
radixkv_add_test(test_page_backend
  SOURCES test_page_backend.cpp test_page_backend_cuda.cpp
  LIBS radixkv_kv_store)

# The PageCopier between two tiers' pools: instant and host copies always, CUDA device <-> pinned
# host when a device answers (skipped, saying why, otherwise).
radixkv_add_test(test_page_copier SOURCES test_page_copier.cpp LIBS radixkv_kv_store)

# The bandwidth and correctness check that scripts/gpu-check.sh runs on a GPU machine.
if(RADIXKV_HAVE_CUDA)
  add_executable(radixkv_gpu_check ${PROJECT_SOURCE_DIR}/scripts/gpu_check.cpp
    ${PROJECT_SOURCE_DIR}/scripts/gpu_check_copier.cpp)
  target_link_libraries(radixkv_gpu_check PRIVATE radixkv_kv_store)
endif()
