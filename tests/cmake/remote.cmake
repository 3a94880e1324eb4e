# The remote tier (issue 16). test_remote needs no server. The others run each case through
# scripts/with-redis.sh, which starts a Redis (or a 3-node Redis Cluster) of the case's own on free
# loopback ports and stops it afterwards; they are labelled `integration` and, under CI=true, fail
# rather than skip when Redis cannot start.
if(TARGET radixkv_remote)
  radixkv_add_test(test_remote SOURCES test_remote.cpp LIBS radixkv_remote radixkv_replay
    LABELS threads)
  radixkv_add_test(test_remote_prefetcher SOURCES test_remote_prefetcher.cpp LIBS radixkv_remote
    LABELS threads)
  # Remote pages through the host tier's staging pages and copier (runtime/remote_staging.h);
  # its CUDA case skips, saying why, without a device (scripts/gpu-check.sh runs it on one).
  radixkv_add_test(test_remote_staging SOURCES test_remote_staging.cpp
    LIBS radixkv_remote radixkv_replay radixkv_kv_store LABELS threads)

  set(RADIXKV_WITH_REDIS ${PROJECT_SOURCE_DIR}/scripts/with-redis.sh)
  radixkv_add_test(test_remote_redis
    SOURCES test_remote_redis.cpp runtime_conversation.cpp tiny_transformer.cpp
    LIBS radixkv_cli radixkv_remote radixkv_test_process nlohmann_json::nlohmann_json
    LABELS integration LAUNCHER ${RADIXKV_WITH_REDIS})
  target_compile_definitions(test_remote_redis PRIVATE RADIXKV_BINARY="$<TARGET_FILE:radixkv>")
  add_dependencies(test_remote_redis radixkv)

  radixkv_add_test(test_remote_cluster SOURCES test_remote_cluster.cpp
    LIBS radixkv_cli radixkv_remote radixkv_test_process nlohmann_json::nlohmann_json
    LABELS integration LAUNCHER ${RADIXKV_WITH_REDIS} --cluster)
  target_compile_definitions(test_remote_cluster PRIVATE RADIXKV_BINARY="$<TARGET_FILE:radixkv>")
  add_dependencies(test_remote_cluster radixkv)
endif()
