# Eviction policies: the typed harness over every policy, each policy's own ordering cases, and
# the policies driven through the radix tree.
radixkv_add_test(test_policies
  SOURCES test_policies.cpp test_policies_ordering.cpp test_policies_reuse.cpp
    test_policies_tree.cpp test_policies_rank_queue.cpp
  LIBS radixkv_radix)

# The offline bound (tools/replay/belady_policy.h) against a naive MIN and against every policy on
# generated traces; then on the samples in data/traces (slow under sanitizers).
radixkv_add_test(test_policies_belady SOURCES test_policies_belady.cpp LIBS radixkv_replay)
radixkv_add_test(test_policies_belady_samples SOURCES test_policies_belady_samples.cpp
  LIBS radixkv_replay LABELS slow)
target_compile_definitions(test_policies_belady_samples PRIVATE
  RADIXKV_SAMPLE_TRACES="${RADIXKV_SAMPLE_TRACES}")

# Issue 31: the retention layer against its model, and hints and holds through the runtime.
radixkv_add_test(test_retention SOURCES test_retention_layer.cpp test_runtime_retention.cpp
  LIBS radixkv_runtime)
