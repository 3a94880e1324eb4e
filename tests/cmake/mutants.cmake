# Tests written to kill mutants of scripts/mutate.sh that no other test caught (each file names
# its mutants).
radixkv_add_test(test_mutants
  SOURCES test_mutants_kv_store.cpp test_mutants_shared.cpp test_mutants_replay.cpp
          test_mutants_cli.cpp
  LIBS radixkv_cli radixkv_replay nlohmann_json::nlohmann_json)
