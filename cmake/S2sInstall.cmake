# cmake --install: the library, its public headers, the s2s command, and two
# ways for other programs to find them (whisper.cpp and ggml ship the same):
#   pkg-config:    pkg-config --cflags --libs s2s
#   CMake:         find_package(s2s) ... target_link_libraries(app s2s::s2s)
#
# oneDNN, OpenMP, libyaml, jansson and OpenCC are private: no public header includes
# them. A program linked with libs2s.so never names them; one linked with
# libs2s.a needs them on its link line, which s2s.pc's Libs.private and
# Requires.private and s2sConfig.cmake's find_dependency calls provide for
# the static build only.
include(CMakePackageConfigHelpers)

set_target_properties(s2s PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR} EXPORT_NAME s2s)
# The s2s command links the library's internals statically (s2s_internal,
# s2s_tools): it needs no libs2s.so at run time, and finds the MPI module
# in its prefix's library folder (src/train/dist.c).

install(TARGETS s2s EXPORT s2sTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS s2s_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(S2S_MPI)  # the module libs2s opens under mpirun (src/train/dist_mpi.h), beside libs2s
  install(TARGETS s2s_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/s2s DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(S2S_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/s2s)
install(EXPORT s2sTargets NAMESPACE s2s:: DESTINATION ${S2S_CMAKE_DIR})
if(BUILD_SHARED_LIBS)
  set(S2S_STATIC OFF)
else()
  set(S2S_STATIC ON)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/s2sConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/s2sConfig.cmake
  INSTALL_DESTINATION ${S2S_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x releases make no promise across minor versions.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/s2sConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/s2sConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/s2sConfigVersion.cmake
        DESTINATION ${S2S_CMAKE_DIR})

# s2s.pc. oneDNN ships no .pc file, so it is named in Libs.private;
# libyaml, jansson and OpenCC do, so they are Requires.private. The prefix is found
# from the .pc file's own place, so `cmake --install --prefix P` and a moved
# tree stay right.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(S2S_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(S2S_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(S2S_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH S2S_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" S2S_PC_UP "${S2S_PC_UP}")
  set(S2S_PC_PREFIX "\${pcfiledir}/${S2S_PC_UP}")
  set(S2S_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(S2S_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
string(REPLACE ";" " " S2S_PC_OPENMP "${OpenMP_C_FLAGS}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/s2s.pc.in ${CMAKE_CURRENT_BINARY_DIR}/s2s.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/s2s.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
