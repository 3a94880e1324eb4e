# radixkv::xxhash: the xxHash library (Debian libxxhash-dev), which ships no CMake package. The
# build and the installed radixkv package (radixkv-config.cmake) both find it through this file.
if(NOT TARGET radixkv::xxhash)
  find_path(RADIXKV_XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
  find_library(RADIXKV_XXHASH_LIBRARY xxhash REQUIRED)
  add_library(radixkv::xxhash UNKNOWN IMPORTED)
  set_target_properties(radixkv::xxhash PROPERTIES
    IMPORTED_LOCATION "${RADIXKV_XXHASH_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RADIXKV_XXHASH_INCLUDE_DIR}")
endif()
