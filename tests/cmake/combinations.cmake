# Issue 28: every pair of `radixkv replay`'s features, in cache and engine mode, against invariants
# that hold for any combination (tests/combination_table.h holds the table).
# test_combination_table checks the table against the command line, with no server.
# test_combinations runs the cells; each case runs through scripts/with-redis.sh --both: a single
# Redis and a 3-node Redis Cluster of its own; under CI=true its cases fail rather than skip when
# they cannot start.
if(TARGET radixkv_remote)
  add_library(radixkv_test_combinations STATIC combination_table.cpp combination_runs.cpp
    combination_inputs.cpp)
  target_link_libraries(radixkv_test_combinations PUBLIC radixkv_test_events radixkv_test_process
    cppzmq nlohmann_json::nlohmann_json fmt::fmt Threads::Threads)
  target_compile_definitions(radixkv_test_combinations PRIVATE
    RADIXKV_BINARY="$<TARGET_FILE:radixkv>" RADIXKV_SAMPLE_TRACES="${RADIXKV_SAMPLE_TRACES}")
  radixkv_add_test(test_combination_table
    SOURCES test_combination_table.cpp
    LIBS radixkv_test_combinations
    LABELS integration)
  radixkv_add_test(test_combinations
    SOURCES test_combinations.cpp
    LIBS radixkv_test_combinations
    LABELS integration
    LAUNCHER ${RADIXKV_WITH_REDIS} --both)
  foreach(test test_combination_table test_combinations)
    add_dependencies(${test} radixkv)
  endforeach()
endif()
