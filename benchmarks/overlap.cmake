# mpia_bench_overlap: Start / compute / Wait with and without the progress thread (issue 9,
# item 3; see overlap_bench.cpp). Included from benchmarks/CMakeLists.txt.
add_executable(mpia_bench_overlap overlap_bench.cpp)
target_compile_features(mpia_bench_overlap PRIVATE cxx_std_17)
# Keep the deprecated MPI C++ bindings out: only the C API is used.
target_compile_definitions(mpia_bench_overlap PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_compile_options(mpia_bench_overlap PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra>)
target_link_libraries(mpia_bench_overlap PRIVATE mpi_advance MPI::MPI_CXX Threads::Threads
                      mpia_build_flags)

# Smoke run at 3 ranks (a multi-round bruck and tra): every result checked, a few iterations.
# mpia_add_mpi_test (test/CMakeLists.txt) reads its launcher flags and environment from that
# directory's scope, which this one does not see: the Open MPI settings are repeated here
# (rmaps_base_oversubscribe stands in for --oversubscribe; MPICH ignores them all).
if(MPIA_BUILD_TESTS AND COMMAND mpia_add_mpi_test)
  mpia_add_mpi_test(NAME mpia_bench_overlap TARGET mpia_bench_overlap NPROCS 3 TIMEOUT 300
                    ARGS --sizes 1k,64k --iters 3 --warmup 1 --watchdog 60 LABELS threads
                    ENVIRONMENT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                                OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
                                OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl=self,vader
                                OMPI_MCA_pml=ob1)
endif()
