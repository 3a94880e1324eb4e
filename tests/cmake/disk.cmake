# The disk tier (issue 32). Every test writes under the test process's scratch folder in $TMPDIR
# (tests/child_process.h, scratch_path) and removes it when the process ends.
if(TARGET radixkv_disk)
  radixkv_add_test(test_disk_tier SOURCES test_disk_tier.cpp
    LIBS radixkv_disk radixkv_runtime radixkv_test_process)
endif()
