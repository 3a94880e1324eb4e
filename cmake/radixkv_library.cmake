# radixkv's libraries: one static library per folder, radixkv_<folder> (radixkv::<folder> for a
# consumer), plus radixkv::radixkv, every library an engine links (all but the reference
# scheduler in sim/).
#
# Headers. radixkv's own files include one another from the repository root
# ("radix/radix_tree.h"); a consumer writes <radixkv/radix/radix_tree.h>. Both work against two
# include directories, ROOT and ROOT/radixkv:
#   - installed, ROOT is <prefix>/include and the public headers of each folder sit in
#     <prefix>/include/radixkv/<folder>/ (radixkv_install.cmake);
#   - in the build tree, ROOT is <build>/include, where radixkv/<folder> is a link to the source
#     folder and radixkv/version.h is generated. A consumer in the same build (add_subdirectory,
#     FetchContent) sees the library folders, never the repository root with its tests and
#     benchmarks.
# radixkv's own targets still find everything from the repository root first (include_directories
# in the top-level CMakeLists.txt), so both paths name the same files.
include(GNUInstallDirs)

set(RADIXKV_STAGED_INCLUDE ${PROJECT_BINARY_DIR}/include)
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.h.in ${RADIXKV_STAGED_INCLUDE}/radixkv/version.h
               @ONLY)

# radixkv_add_library(<folder> SOURCES <file>... [INTERNAL_HEADERS <header>...])
# Every header of the folder is public (installed) except the INTERNAL_HEADERS: those named
# *_internals.h, and those that only the folder's own sources include (no public header needs
# them). scripts/check-install.sh fails when an installed header is either.
function(radixkv_add_library folder)
  cmake_parse_arguments(ARG "" "" "SOURCES;INTERNAL_HEADERS" ${ARGN})
  set(target radixkv_${folder})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(radixkv::${folder} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${folder})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${RADIXKV_STAGED_INCLUDE}>
    $<BUILD_INTERFACE:${RADIXKV_STAGED_INCLUDE}/radixkv>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/radixkv>)
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${RADIXKV_STAGED_INCLUDE}/radixkv/${folder} SYMBOLIC)

  file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  foreach(internal IN LISTS ARG_INTERNAL_HEADERS)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${internal})
      message(FATAL_ERROR "radixkv_add_library(${folder}): no internal header ${internal}")
    endif()
    list(REMOVE_ITEM headers ${CMAKE_CURRENT_SOURCE_DIR}/${internal})
  endforeach()
  set_target_properties(${target} PROPERTIES RADIXKV_PUBLIC_HEADERS "${headers}")
  set_property(GLOBAL APPEND PROPERTY RADIXKV_LIBRARIES ${target})
endfunction()

# radixkv::radixkv: every library an engine links. (The command-line executable already holds the
# plain name radixkv, hence radixkv_engine inside the build.)
function(radixkv_add_umbrella_library)
  add_library(radixkv_engine INTERFACE)
  add_library(radixkv::radixkv ALIAS radixkv_engine)
  set_target_properties(radixkv_engine PROPERTIES EXPORT_NAME radixkv)
  target_link_libraries(radixkv_engine INTERFACE
    radixkv_runtime radixkv_radix radixkv_eviction radixkv_kv_store)
endfunction()
