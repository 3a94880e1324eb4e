# The reference batch scheduler (issue 5): ordering, sharing, preemption, starvation, no leaks.
radixkv_add_test(test_scheduler SOURCES test_scheduler.cpp LIBS radixkv_runtime)
