# `cmake --install`: the command-line tools, the libraries, their headers, a
# CMake package (find_package(topocc) -> topocc::compiler, topocc::runtime,
# topocc::runtime_mpi, ...) and a pkg-config file. docs/Install.md says how
# to use them; tests/install builds a project against an installed tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TOPOCC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/topocc)
set(TOPOCC_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/topocc)

# Library targets in dependency order; each is exported as topocc::<name
# without the topocc_ prefix>.
set(TOPOCC_INSTALLED_LIBS
  topocc_thirdparty topocc_flags topocc_support topocc_ir topocc_plan
  topocc_topology topocc_analysis topocc_algorithms topocc_passes
  topocc_backends topocc_compiler topocc_runtime)
foreach(optional topocc_runtime_mpi topocc_cuda_kernels topocc_runtime_cuda
                 topocc_runtime_nccl)
  if(TARGET ${optional})
    list(APPEND TOPOCC_INSTALLED_LIBS ${optional})
  endif()
endforeach()
foreach(lib ${TOPOCC_INSTALLED_LIBS})
  string(REGEX REPLACE "^topocc_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
endforeach()
if(TARGET topocc_cuda_kernels)
  # Its build-tree include path is absolute; installed, it is ours.
  set_property(TARGET topocc_cuda_kernels PROPERTY INTERFACE_INCLUDE_DIRECTORIES
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:${TOPOCC_INSTALL_INCLUDEDIR}>)
endif()

install(TARGETS ${TOPOCC_INSTALLED_LIBS} EXPORT topoccTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(TOPOCC_INSTALLED_TOOLS topocc)
foreach(optional topocc-bench topocc-nccl-run)
  if(TARGET ${optional})
    list(APPEND TOPOCC_INSTALLED_TOOLS ${optional})
  endif()
endforeach()
install(TARGETS ${TOPOCC_INSTALLED_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/runtime/topocc-mpirun
  DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers keep their paths: #include "runtime/Interpreter.h".
foreach(dir support ir backends compiler runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir} DESTINATION ${TOPOCC_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/topologies
  DESTINATION ${CMAKE_INSTALL_DATADIR}/topocc)

install(EXPORT topoccTargets NAMESPACE topocc:: DESTINATION ${TOPOCC_INSTALL_CMAKEDIR})
set(TOPOCC_CONFIG_HAVE_MPI OFF)
if(TARGET topocc_runtime_mpi)
  set(TOPOCC_CONFIG_HAVE_MPI ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/topoccConfig.cmake.in
  ${CMAKE_BINARY_DIR}/topoccConfig.cmake
  INSTALL_DESTINATION ${TOPOCC_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/topoccConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/topoccConfig.cmake
  ${CMAKE_BINARY_DIR}/topoccConfigVersion.cmake
  DESTINATION ${TOPOCC_INSTALL_CMAKEDIR})

# pkg-config: the compiler and runtime libraries with what they link. The
# static libraries' own dependencies (LLVM, yaml-cpp, Boost's none) follow.
set(TOPOCC_PC_LIBS "")
foreach(lib topocc_compiler topocc_backends topocc_passes topocc_algorithms
            topocc_analysis topocc_topology topocc_runtime topocc_plan
            topocc_ir topocc_support)
  string(APPEND TOPOCC_PC_LIBS " -l${lib}")
endforeach()
set(TOPOCC_PC_SANITIZE "")
if(TOPOCC_SANITIZE)
  set(TOPOCC_PC_SANITIZE " -fsanitize=address,undefined")
endif()
# The prefix relative to the .pc file, so `cmake --install --prefix P`
# anywhere gives a working file.
string(REGEX REPLACE "[^/]+" ".." TOPOCC_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${PROJECT_SOURCE_DIR}/cmake/topocc.pc.in ${CMAKE_BINARY_DIR}/topocc.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/topocc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python module (when built): topocc/ under the interpreter's package
# folder of the prefix (Debian's layout for /usr/bin/python3 by default).
if(TARGET topocc_python)
  set(TOPOCC_PYTHON_INSTALL_DIR lib/python3/dist-packages CACHE STRING
      "Where `cmake --install` puts the Python package topocc, relative to the prefix")
  install(TARGETS topocc_python LIBRARY DESTINATION ${TOPOCC_PYTHON_INSTALL_DIR}/topocc)
  install(FILES ${PROJECT_SOURCE_DIR}/python/topocc/__init__.py
          ${PROJECT_SOURCE_DIR}/python/topocc/torch.py
          DESTINATION ${TOPOCC_PYTHON_INSTALL_DIR}/topocc)
  if(TARGET topocc_torch)
    install(TARGETS topocc_torch LIBRARY DESTINATION ${TOPOCC_PYTHON_INSTALL_DIR}/topocc)
  endif()
endif()
