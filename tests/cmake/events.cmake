# KV events and the router (issue 17). Tests that start processes are labelled `integration`;
# they fail, not skip, when CI=true and they cannot start. The threaded ones are labelled
# `threads` (scripts/sanitize.sh thread).
# The tests' HTTP client (the router's server is Boost.Beast: tests talk to it with another library).
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)

add_library(radixkv_test_events STATIC event_script.cpp)
target_link_libraries(radixkv_test_events PUBLIC radixkv_events PRIVATE msgpackc-cxx)

radixkv_add_test(test_events
  SOURCES test_event_codec.cpp test_event_batcher.cpp test_endpoint.cpp
  LIBS radixkv_test_events radixkv::xxhash msgpackc-cxx)

radixkv_add_test(test_event_publisher SOURCES test_event_publisher.cpp
  LIBS radixkv_events cppzmq Threads::Threads LABELS threads)

radixkv_add_test(test_router
  SOURCES test_router_index.cpp test_router_route.cpp test_router_observe.cpp
  LIBS radixkv_router radixkv_test_events nlohmann_json::nlohmann_json radixkv::xxhash
       msgpackc-cxx fmt::fmt)

radixkv_add_test(test_router_feed SOURCES test_router_feed.cpp
  LIBS radixkv_router_service radixkv_test_events cppzmq PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json Threads::Threads
  LABELS threads)
target_compile_definitions(test_router_feed PRIVATE RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")

# Python's msgpack and zmq are Debian's: the Debian interpreter, not whatever python3 is first on
# PATH (a pyenv one lacks them).
find_program(RADIXKV_DEBIAN_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_library(radixkv_test_process STATIC child_process.cpp)
target_link_libraries(radixkv_test_process PUBLIC doctest::doctest)

radixkv_add_test(test_events_integration SOURCES test_events_integration.cpp
  LIBS radixkv_test_events radixkv_test_process nlohmann_json::nlohmann_json
  LABELS integration)
target_compile_definitions(test_events_integration PRIVATE
  RADIXKV_DEBIAN_PYTHON="${RADIXKV_DEBIAN_PYTHON}" RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}"
  RADIXKV_BINARY="$<TARGET_FILE:radixkv>")
add_dependencies(test_events_integration radixkv)

# A scripted worker for the router's integration tests.
add_executable(radixkv_event_script event_script_main.cpp)
target_link_libraries(radixkv_event_script PRIVATE radixkv_test_events nlohmann_json::nlohmann_json
  CLI11::CLI11)

radixkv_add_test(test_router_integration SOURCES test_router_integration.cpp
  LIBS radixkv_test_events radixkv_test_process PkgConfig::HTTPLIB nlohmann_json::nlohmann_json
  LABELS integration)
target_compile_definitions(test_router_integration PRIVATE
  RADIXKV_BINARY="$<TARGET_FILE:radixkv>"
  RADIXKV_EVENT_SCRIPT_BINARY="$<TARGET_FILE:radixkv_event_script>")
add_dependencies(test_router_integration radixkv radixkv_event_script)

# The runtime's own events: one batch per call; SharedRuntime with a batcher per shard (threads);
# the removal reason each cause gives.
radixkv_add_test(test_runtime_events SOURCES test_runtime_events.cpp test_removal_reasons.cpp
  LIBS radixkv_test_events radixkv_runtime Threads::Threads LABELS threads)

# The router in front of publishers shaped like vLLM, SGLang and LMCache (tests/engine_publisher.py),
# and against hostile clients and publishers (issue 29).
foreach(test test_router_engines test_router_hostile)
  radixkv_add_test(${test} SOURCES ${test}.cpp
    LIBS radixkv_test_process PkgConfig::HTTPLIB nlohmann_json::nlohmann_json fmt::fmt
         Threads::Threads
    LABELS integration)
  target_compile_definitions(${test} PRIVATE
    RADIXKV_BINARY="$<TARGET_FILE:radixkv>"
    RADIXKV_DEBIAN_PYTHON="${RADIXKV_DEBIAN_PYTHON}" RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}"
    RADIXKV_EVENT_SCRIPT_BINARY="$<TARGET_FILE:radixkv_event_script>")
  add_dependencies(${test} radixkv radixkv_event_script)
endforeach()

# The soak (label slow, which the sanitizer runs leave out): 8 engines of every shape for
# RADIXKV_SOAK_SECONDS (default 10; CI runs the default), clients routing, a restart, the router's
# RSS under its bound.
radixkv_add_test(test_router_soak SOURCES test_router_soak.cpp
  LIBS radixkv_test_process PkgConfig::HTTPLIB nlohmann_json::nlohmann_json fmt::fmt
       Threads::Threads
  LABELS slow)
target_compile_definitions(test_router_soak PRIVATE
  RADIXKV_BINARY="$<TARGET_FILE:radixkv>"
  RADIXKV_DEBIAN_PYTHON="${RADIXKV_DEBIAN_PYTHON}" RADIXKV_TESTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
add_dependencies(test_router_soak radixkv)
# Issue 28: the runtime as the one front door: observers that compose (a remote tier beside a KV
# event publisher), cache-only admits, the calls without sequences.
radixkv_add_test(test_runtime_front_door SOURCES test_runtime_front_door.cpp
  LIBS radixkv_test_events radixkv_remote radixkv_replay radixkv_trace radixkv_runtime Threads::Threads
  LABELS threads)
