# MPIA_MPI_LIBRARY_VERSION: the C MPI this build uses, as MPI_Get_library_version says it
# ("MPICH Version: 4.3.2 ...", "Open MPI v5.0.10 ...") where FindMPI ran it, else from mpi.h
# ("MPICH 4.3.2", "Open MPI 4.1.4"); one line, at most 80 characters. The installed config file
# records it; tests that work around one MPI release's bug test it.
set(MPIA_MPI_LIBRARY_VERSION "${MPI_C_LIBRARY_VERSION_STRING}")
if(NOT MPIA_MPI_LIBRARY_VERSION AND EXISTS "${MPI_C_HEADER_DIR}/mpi.h")
  # FindMPI only runs MPI_Get_library_version with MPI_DETERMINE_LIBRARY_VERSION; read mpi.h.
  file(STRINGS "${MPI_C_HEADER_DIR}/mpi.h" _mpia_ver
       REGEX "^#define[ \t]+(OMPI_(MAJOR|MINOR|RELEASE)_VERSION|MPICH_VERSION)[ \t]")
  set(_mpia_ompi "")
  foreach(_l IN LISTS _mpia_ver)
    if(_l MATCHES "MPICH_VERSION[ \t]+\"([^\"]*)\"")
      set(MPIA_MPI_LIBRARY_VERSION "MPICH ${CMAKE_MATCH_1}")
    elseif(_l MATCHES "OMPI_[A-Z]+_VERSION[ \t]+([0-9]+)")
      list(APPEND _mpia_ompi ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(_mpia_ompi)
    list(JOIN _mpia_ompi "." _mpia_ompi)
    set(MPIA_MPI_LIBRARY_VERSION "Open MPI ${_mpia_ompi}")
  endif()
  unset(_mpia_ver)
  unset(_mpia_ompi)
endif()
string(REGEX REPLACE "[\r\n\t]+" " " MPIA_MPI_LIBRARY_VERSION "${MPIA_MPI_LIBRARY_VERSION}")
string(SUBSTRING "${MPIA_MPI_LIBRARY_VERSION}" 0 80 MPIA_MPI_LIBRARY_VERSION)
