# Install rules, the exported CMake package (MPIAdvanceConfig.cmake, namespace MPIAdvance::)
# and the pkg-config file. Included at the end of the top-level CMakeLists.txt, after src/.
#
#   cmake --install <build> --prefix <dir>
#   find_package(MPIAdvance)  ->  MPIAdvance::mpi_advance, MPIAdvance::mpi_advance_static
#   pkg-config mpi_advance
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(MPIA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/MPIAdvance"
    CACHE STRING "Where MPIAdvanceConfig.cmake is installed, relative to the prefix")
set(MPIA_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where mpi_advance.pc is installed, relative to the prefix")

# mpia_build_flags (the sanitizer flags) is linked PRIVATE to both libraries. For the static
# archive CMake still records it as $<LINK_ONLY:mpia_build_flags> in the exported interface
# (a consumer must link what the archive's objects need: the sanitizer runtime of an
# MPIA_SANITIZE build), so it has to be part of the export set. In a normal build it carries
# no flags at all; in an MPIA_SANITIZE build it correctly hands -fsanitize=... to consumers
# of the static archive.
install(TARGETS mpi_advance mpi_advance_static mpia_build_flags
  EXPORT MPIAdvanceTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT MPIAdvance_Runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT MPIAdvance_Runtime
          NAMELINK_COMPONENT MPIAdvance_Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT MPIAdvance_Development)

# The Fortran module (MPIA_HAVE_FORTRAN): its library in an export set of its own, which
# MPIAdvanceConfig.cmake loads only into projects that enable Fortran; the .mod files.
if(TARGET mpi_advance_fortran)
  install(TARGETS mpi_advance_fortran
    EXPORT MPIAdvanceFortranTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT MPIAdvance_Runtime
            NAMELINK_COMPONENT MPIAdvance_Development)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/fortran-modules/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mpi_advance/fortran
    COMPONENT MPIAdvance_Development FILES_MATCHING PATTERN "*.mod")
  install(EXPORT MPIAdvanceFortranTargets
    NAMESPACE MPIAdvance::
    FILE MPIAdvanceFortranTargets.cmake
    DESTINATION ${MPIA_INSTALL_CMAKEDIR}
    COMPONENT MPIAdvance_Development)
  export(EXPORT MPIAdvanceFortranTargets
    NAMESPACE MPIAdvance::
    FILE ${PROJECT_BINARY_DIR}/MPIAdvanceFortranTargets.cmake)
endif()

install(FILES ${PROJECT_BINARY_DIR}/include/mpi_advance.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT MPIAdvance_Development)

# The generated mpia_config.h is build-internal. Install it only if a public header ever
# starts including it (so an installed header never refers to a missing file).
file(GLOB _mpia_public_headers "${PROJECT_BINARY_DIR}/include/mpi_advance.h")
set(_mpia_needs_config_h FALSE)
foreach(_h IN LISTS _mpia_public_headers)
  file(STRINGS "${_h}" _mpia_inc REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]mpia_config\\.h[>\"]")
  if(_mpia_inc)
    set(_mpia_needs_config_h TRUE)
  endif()
endforeach()
if(_mpia_needs_config_h)
  install(FILES ${PROJECT_BINARY_DIR}/include/mpia_config.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT MPIAdvance_Development)
endif()
unset(_mpia_public_headers)
unset(_mpia_needs_config_h)
unset(_mpia_inc)

install(EXPORT MPIAdvanceTargets
  NAMESPACE MPIAdvance::
  FILE MPIAdvanceTargets.cmake
  DESTINATION ${MPIA_INSTALL_CMAKEDIR}
  COMPONENT MPIAdvance_Development)

# Same targets straight from a build tree (export(PACKAGE) is not used: no user registry).
export(EXPORT MPIAdvanceTargets
  NAMESPACE MPIAdvance::
  FILE ${PROJECT_BINARY_DIR}/MPIAdvanceTargets.cmake)

# The MPI this library was built against. The config file uses these as defaults (cache
# hints) so that find_package(MPIAdvance) on a machine with several MPIs (Debian: Open MPI and
# MPICH side by side) finds the same one, unless the consumer chose an MPI itself.
set(MPIA_CONFIG_MPI_C_COMPILER "${MPI_C_COMPILER}")
set(MPIA_CONFIG_MPI_CXX_COMPILER "${MPI_CXX_COMPILER}")
set(MPIA_CONFIG_MPI_LIBRARY_VERSION "${MPIA_MPI_LIBRARY_VERSION}") # MPIAdvanceMPIVersion.cmake
string(REGEX REPLACE "[\"\\\\$@]" "" MPIA_CONFIG_MPI_LIBRARY_VERSION "${MPIA_CONFIG_MPI_LIBRARY_VERSION}")
string(STRIP "${MPIA_CONFIG_MPI_LIBRARY_VERSION}" MPIA_CONFIG_MPI_LIBRARY_VERSION)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/MPIAdvanceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/MPIAdvanceConfig.cmake
  INSTALL_DESTINATION ${MPIA_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/MPIAdvanceConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/MPIAdvanceConfig.cmake
  ${PROJECT_BINARY_DIR}/MPIAdvanceConfigVersion.cmake
  DESTINATION ${MPIA_INSTALL_CMAKEDIR}
  COMPONENT MPIAdvance_Development)

# pkg-config. Paths are written relative to ${prefix} (pcfiledir-independent but relocatable
# by overriding prefix: pkg-config --define-variable=prefix=...).
foreach(_d IN ITEMS LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(MPIA_PC_${_d} "${CMAKE_INSTALL_${_d}}")
  else()
    set(MPIA_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endif()
endforeach()
# The .pc.in says prefix=@MPIA_PC_PREFIX@; keep that token through configure_file.
set(MPIA_PC_PREFIX "@MPIA_PC_PREFIX@")
# The static archive's objects call hwloc when it was built in.
set(MPIA_PC_HWLOC "")
if(MPIA_HAVE_HWLOC)
  set(MPIA_PC_HWLOC "-lhwloc ")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/mpi_advance.pc.in
               ${PROJECT_BINARY_DIR}/mpi_advance.pc.gen @ONLY)
# The prefix is only final at install time (cmake --install --prefix), so substitute it then.
install(CODE "
  file(READ \"${PROJECT_BINARY_DIR}/mpi_advance.pc.gen\" _mpia_pc)
  string(REPLACE \"@MPIA_PC_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _mpia_pc \"\${_mpia_pc}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/mpi_advance.pc\" \"\${_mpia_pc}\")
" COMPONENT MPIAdvance_Development)
install(FILES ${PROJECT_BINARY_DIR}/mpi_advance.pc
  DESTINATION ${MPIA_INSTALL_PKGCONFIGDIR} COMPONENT MPIAdvance_Development)

# pkg-config for the Fortran module: mpif90 $(pkg-config --cflags --libs mpi_advance_fortran).
if(TARGET mpi_advance_fortran)
  set(MPIA_CONFIG_MPI_Fortran_COMPILER "${MPI_Fortran_COMPILER}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/mpi_advance_fortran.pc.in
                 ${PROJECT_BINARY_DIR}/mpi_advance_fortran.pc.gen @ONLY)
  install(CODE "
    file(READ \"${PROJECT_BINARY_DIR}/mpi_advance_fortran.pc.gen\" _mpia_pc)
    string(REPLACE \"@MPIA_PC_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _mpia_pc \"\${_mpia_pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/mpi_advance_fortran.pc\" \"\${_mpia_pc}\")
  " COMPONENT MPIAdvance_Development)
  install(FILES ${PROJECT_BINARY_DIR}/mpi_advance_fortran.pc
    DESTINATION ${MPIA_INSTALL_PKGCONFIGDIR} COMPONENT MPIAdvance_Development)
endif()
