# Runtime adapter (issue 3): adapter unit tests and the end-to-end equivalence suite on a tiny
# transformer whose K/V live in pool pages.
radixkv_add_test(test_runtime
  SOURCES test_runtime.cpp test_runtime_equivalence.cpp runtime_conversation.cpp
          tiny_transformer.cpp test_runtime_api.cpp
  LIBS radixkv_runtime)
# Issue 31: per-namespace quotas (eviction/quota_policy.h) against their reference model, and
# tenants through the runtime.
radixkv_add_test(test_quota SOURCES test_quota.cpp LIBS radixkv_runtime)

# Issue 15: the host tier in the tree (hand-worked cases, the two-tier page oracle, the exclusive
# LRU hierarchy against the single-tier oracle) and in the runtime (loads, tier events).
radixkv_add_test(test_tiers
  SOURCES test_tiers.cpp test_runtime_tiers.cpp test_tiers_property.cpp test_page_hash.cpp
  LIBS radixkv_runtime radixkv::xxhash)
radixkv_add_test(test_tiers_lru SOURCES test_tiers_lru.cpp LIBS radixkv_trace radixkv_runtime)
