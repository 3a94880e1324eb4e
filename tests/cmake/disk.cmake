# The disk tier (issue 32). Every test writes under the test process's scratch folder in $TMPDIR
# (tests/child_process.h, scratch_path) and removes it when the process ends.
if(TARGET radixkv_disk)
  radixkv_add_test(test_disk_tier SOURCES test_disk_tier.cpp
    LIBS radixkv_disk radixkv_runtime radixkv_test_process)
  radixkv_add_test(test_disk_index SOURCES test_disk_index.cpp LIBS radixkv_disk)
  # A writer killed with SIGKILL at random points (RADIXKV_DISK_CRASH_KILLS: 8 by default).
  radixkv_add_test(test_disk_crash
    SOURCES test_disk_crash.cpp runtime_conversation.cpp tiny_transformer.cpp
    LIBS radixkv_disk radixkv_runtime radixkv_test_process)
  # The replay with a disk tier: flags, report, restart, engine mode, disk above remote.
  radixkv_add_test(test_disk_replay SOURCES test_disk_replay.cpp
    LIBS radixkv_cli radixkv_disk radixkv_remote radixkv_test_process
         nlohmann_json::nlohmann_json)
  # The slot format, and the layout id it shares with the remote tier.
  radixkv_add_test(test_disk_format SOURCES test_disk_format.cpp
    LIBS radixkv_disk radixkv_remote radixkv_test_process)
endif()
