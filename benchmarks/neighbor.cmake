# mpia_bench_neighbor: the neighborhood all-to-all-v benchmark (stencil halo exchanges on
# Cartesian topologies, sparse-matrix exchanges on distributed graphs; see neighbor_bench.cpp
# and scripts/bench.sh). Included from benchmarks/CMakeLists.txt.
#
# system_neighbor.cpp calls the MPI library's own persistent neighborhood all-to-all-v (MPI-4
# MPI_Neighbor_alltoallv_init, or Open MPI 4's MPIX_Neighbor_alltoallv_init from <mpi-ext.h>).
# It must stay a separate translation unit that never includes mpi_advance.h, whose
# MPIX_Neighbor_alltoallv_init macro names our function.
add_executable(mpia_bench_neighbor neighbor_bench.cpp system_neighbor.cpp)
target_compile_features(mpia_bench_neighbor PRIVATE cxx_std_17)
# Keep the deprecated MPI C++ bindings out: only the C API is used.
target_compile_definitions(mpia_bench_neighbor PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_compile_options(mpia_bench_neighbor PRIVATE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra>)
target_link_libraries(mpia_bench_neighbor PRIVATE mpi_advance MPI::MPI_CXX Threads::Threads
                      mpia_build_flags)

# Smoke run at 4 ranks emulating 2 nodes of 2 ranks (MPIX_LOCALITY=ppn:2): every pattern at a
# small size, every variant, each result checked against MPI_Neighbor_alltoallv.
if(MPIA_BUILD_TESTS AND MPIEXEC_EXECUTABLE)
  if(DEFINED MPIA_MPIEXEC_IS_OPENMPI)
    set(_nb_is_ompi ${MPIA_MPIEXEC_IS_OPENMPI})
  else()
    set(_nb_is_ompi OFF)
    execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version
                    OUTPUT_VARIABLE _nb_out ERROR_VARIABLE _nb_err TIMEOUT 30)
    if("${_nb_out}${_nb_err}" MATCHES "Open MPI|OpenRTE|open-mpi\\.org")
      set(_nb_is_ompi ON)
    endif()
  endif()
  set(_nb_preflags ${MPIEXEC_PREFLAGS})
  if(_nb_is_ompi)
    list(APPEND _nb_preflags --oversubscribe)
  endif()
  add_test(NAME mpia_bench_neighbor.np4
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${_nb_preflags}
                   $<TARGET_FILE:mpia_bench_neighbor> ${MPIEXEC_POSTFLAGS} --quick)
  set_tests_properties(mpia_bench_neighbor.np4 PROPERTIES
    TIMEOUT 300
    LABELS mpi
    PROCESSORS 4
    ENVIRONMENT "MPIX_LOCALITY=ppn:2;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_hwloc_base_binding_policy=none;OMPI_MCA_btl=self,vader;OMPI_MCA_pml=ob1")
endif()
