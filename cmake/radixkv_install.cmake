# `cmake --install`: the public headers under include/radixkv/<folder>/, the libraries, the
# radixkv command (when built), the CMake package radixkv::* (lib/cmake/radixkv), radixkv.pc and
# (with radixkv::remote) radixkv-remote.pc, (with radixkv::disk) radixkv-disk.pc.
include(CMakePackageConfigHelpers)

get_property(radixkv_libraries GLOBAL PROPERTY RADIXKV_LIBRARIES)
install(TARGETS ${radixkv_libraries} radixkv_heap radixkv_engine EXPORT radixkv-targets)
foreach(target IN LISTS radixkv_libraries)
  get_target_property(folder ${target} EXPORT_NAME)
  get_target_property(headers ${target} RADIXKV_PUBLIC_HEADERS)
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/radixkv/${folder})
endforeach()
install(FILES ${RADIXKV_STAGED_INCLUDE}/radixkv/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/radixkv)

if(TARGET radixkv)
  # The command finds libradixkv_heap beside it, wherever the prefix is.
  file(RELATIVE_PATH bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(radixkv radixkv_router_program PROPERTIES
    INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  install(TARGETS radixkv radixkv_router_program)  # `radixkv router` runs the second, beside it
endif()

set(radixkv_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/radixkv)
install(EXPORT radixkv-targets NAMESPACE radixkv:: DESTINATION ${radixkv_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/radixkv-config.cmake.in
  ${PROJECT_BINARY_DIR}/radixkv-config.cmake INSTALL_DESTINATION ${radixkv_cmake_dir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/radixkv-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/radixkv-config.cmake
  ${PROJECT_BINARY_DIR}/radixkv-config-version.cmake
  ${PROJECT_SOURCE_DIR}/cmake/radixkv_xxhash.cmake
  DESTINATION ${radixkv_cmake_dir})

# pkg-config: the same libraries as radixkv::radixkv, in link order. They are static, so what
# they need goes in Requires and Libs, not in the .private fields.
set(RADIXKV_PC_CUDA_LIBS "")
if(RADIXKV_HAVE_CUDA)
  set(RADIXKV_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart")
  set(RADIXKV_PC_CUDA_CFLAGS "-I${CUDAToolkit_INCLUDE_DIRS} -DRADIXKV_HAVE_CUDA=1")
endif()
# The prefix is found from the .pc file's own folder, so the installed tree can move.
string(REGEX REPLACE "[^/]+" ".." RADIXKV_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${PROJECT_SOURCE_DIR}/cmake/radixkv.pc.in ${PROJECT_BINARY_DIR}/radixkv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/radixkv.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# radixkv-remote.pc: radixkv::remote on top of radixkv.pc. hiredis goes in Requires, not
# Requires.private: the library is static, so its consumer links hiredis itself.
if(TARGET radixkv_remote)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/radixkv-remote.pc.in
                 ${PROJECT_BINARY_DIR}/radixkv-remote.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/radixkv-remote.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
# radixkv-disk.pc: radixkv::disk on top of radixkv.pc, with liburing in Requires as above.
if(TARGET radixkv_disk)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/radixkv-disk.pc.in
                 ${PROJECT_BINARY_DIR}/radixkv-disk.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/radixkv-disk.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
