# Tests of tools/: trace readers and generator, cache-mode replay, the radixkv command line.
radixkv_add_test(test_trace
  SOURCES test_trace_readers.cpp test_trace_formats.cpp test_trace_gen.cpp
          test_token_fill.cpp test_trace_oracle.cpp
  LIBS radixkv_trace nlohmann_json::nlohmann_json)
target_compile_definitions(test_trace PRIVATE RADIXKV_SAMPLE_TRACES="${RADIXKV_SAMPLE_TRACES}")

radixkv_add_test(test_replay
  SOURCES test_replay_cache.cpp test_replay_oracle.cpp test_replay_samples.cpp test_replay_hints.cpp
  LIBS radixkv_replay)
target_compile_definitions(test_replay PRIVATE RADIXKV_SAMPLE_TRACES="${RADIXKV_SAMPLE_TRACES}")

radixkv_add_test(test_cli SOURCES test_cli.cpp LIBS radixkv_cli)
target_compile_definitions(test_cli PRIVATE RADIXKV_BINARY="$<TARGET_FILE:radixkv>")
add_dependencies(test_cli radixkv)

radixkv_add_test(test_cli_budget SOURCES test_cli_budget.cpp LIBS radixkv_cli)
radixkv_add_test(test_cli_quota SOURCES test_cli_quota.cpp LIBS radixkv_cli)
radixkv_add_test(test_cli_jobs SOURCES test_cli_jobs.cpp LIBS radixkv_cli)

# Generates a 1 GB trace and replays it: minutes, and 1.1 GB in the temp folder.
radixkv_add_test(test_memory SOURCES test_memory.cpp LABELS slow)
target_compile_definitions(test_memory PRIVATE RADIXKV_BINARY="$<TARGET_FILE:radixkv>")
add_dependencies(test_memory radixkv)

# The host tier in the replay and on the command line (docs/tiers.md).
radixkv_add_test(test_replay_tiers SOURCES test_replay_tiers.cpp LIBS radixkv_cli)
target_compile_definitions(test_replay_tiers PRIVATE RADIXKV_SAMPLE_TRACES="${RADIXKV_SAMPLE_TRACES}")

# Cluster mode (issue 17): routing against a model, one worker against engine mode, prefix routing
# against one big worker and round-robin.
radixkv_add_test(test_cluster_replay SOURCES test_cluster_replay.cpp
  LIBS radixkv_cli nlohmann_json::nlohmann_json)
