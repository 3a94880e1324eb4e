# The reference batch scheduler (issue 5): ordering, sharing, preemption, starvation, no leaks.
radixkv_add_test(test_scheduler
  SOURCES test_scheduler.cpp test_scheduler_model.cpp scheduler_model.cpp
  LIBS radixkv_sim)

# Engine-mode replay (issues 4, 5): hand-worked turns, generated traces, tight pools, the CLI.
# The percentile definition that the engine TTFT and the call latencies share
# (tools/replay/percentile.h).
radixkv_add_test(test_engine SOURCES test_engine.cpp test_percentile.cpp LIBS radixkv_cli)

# Issue 8's stress: over a million engine-mode requests through a tight pool (Release: ~30 s).
radixkv_add_test(test_engine_stress SOURCES test_engine_stress.cpp LIBS radixkv_replay
  LABELS slow)
