# Tests of metrics/ (issue 33): the miss-ratio curve against naive models and against cache-mode
# replay sweeps on every sample trace family, and the Prometheus exposition read back by Python's
# prometheus_client (an independent parser).
radixkv_add_test(test_metrics SOURCES test_metrics_mrc.cpp LIBS radixkv_metrics)

radixkv_add_test(test_prometheus SOURCES test_prometheus.cpp
  LIBS radixkv_metrics radixkv_test_process nlohmann_json::nlohmann_json)
target_compile_definitions(test_prometheus PRIVATE
  RADIXKV_DEBIAN_PYTHON="${RADIXKV_DEBIAN_PYTHON}" RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")

# One case per trace family; each replays its trace at six sizes.
radixkv_add_test(test_mrc_replay SOURCES test_mrc_replay.cpp LIBS radixkv_replay radixkv_metrics)
target_compile_definitions(test_mrc_replay PRIVATE RADIXKV_SAMPLE_TRACES="${RADIXKV_SAMPLE_TRACES}")

# The runtime's exposition (PrefixCacheRuntime, SharedRuntime) read back by prometheus_client.
radixkv_add_test(test_runtime_metrics SOURCES test_runtime_metrics.cpp
  LIBS radixkv_runtime radixkv_test_process nlohmann_json::nlohmann_json)
target_compile_definitions(test_runtime_metrics PRIVATE
  RADIXKV_DEBIAN_PYTHON="${RADIXKV_DEBIAN_PYTHON}" RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")

# `radixkv replay --metrics-listen`: the built binary scraped while it runs (cpp-httplib's client),
# its last scrape against its report (with a disk tier, and with a remote one on the Redis
# scripts/with-redis.sh starts for each case); the flag's refusals in-process.
radixkv_add_test(test_metrics_listen SOURCES test_metrics_listen.cpp
  LIBS radixkv_cli radixkv_test_process PkgConfig::HTTPLIB nlohmann_json::nlohmann_json
  LABELS integration LAUNCHER ${PROJECT_SOURCE_DIR}/scripts/with-redis.sh)
target_compile_definitions(test_metrics_listen PRIVATE RADIXKV_BINARY="$<TARGET_FILE:radixkv>"
  RADIXKV_DEBIAN_PYTHON="${RADIXKV_DEBIAN_PYTHON}" RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
add_dependencies(test_metrics_listen radixkv)
