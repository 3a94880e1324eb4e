# KV events and the router (issue 17). Tests that start processes are labelled `integration`;
# they fail, not skip, when CI=true and they cannot start. The threaded ones are labelled
# `threads` (scripts/sanitize.sh thread).
add_library(radixkv_test_events STATIC event_script.cpp)
target_link_libraries(radixkv_test_events PUBLIC radixkv_events)

radixkv_add_test(test_events
  SOURCES test_event_codec.cpp test_event_batcher.cpp
  LIBS radixkv_test_events radixkv_xxhash msgpackc-cxx)

radixkv_add_test(test_event_publisher SOURCES test_event_publisher.cpp
  LIBS radixkv_events cppzmq Threads::Threads LABELS threads)

radixkv_add_test(test_router SOURCES test_router_index.cpp test_router_route.cpp
  LIBS radixkv_router radixkv_test_events nlohmann_json::nlohmann_json)

radixkv_add_test(test_router_feed SOURCES test_router_feed.cpp
  LIBS radixkv_router_service radixkv_test_events cppzmq PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json Threads::Threads
  LABELS threads)
