# Eviction policies: the typed harness over every policy, each policy's own ordering cases, and
# the policies driven through the radix tree.
radixkv_add_test(test_policies
  SOURCES test_policies.cpp test_policies_ordering.cpp test_policies_tree.cpp
  LIBS radixkv_radix)
