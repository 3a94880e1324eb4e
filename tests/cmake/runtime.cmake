# Runtime adapter (issue 3): adapter unit tests and the end-to-end equivalence suite on a tiny
# transformer whose K/V live in pool pages.
radixkv_add_test(test_runtime
  SOURCES test_runtime.cpp test_runtime_equivalence.cpp runtime_conversation.cpp
          tiny_transformer.cpp test_runtime_api.cpp
  LIBS radixkv_runtime)
