# Threads and progress (issue 9, items 1-3), included by test/mpi/CMakeLists.txt.
#
#   mpi.threads                  2 and 4 threads per rank under MPI_THREAD_MULTIPLE: blocking
#                                calls on own communicators, persistent requests on own and on
#                                one shared communicator, frees while others run (test_threads)
#   mpi.progress                 a late rank runs a library call that waits for its peers
#                                (persistent inits, first call on a new communicator, locality,
#                                blocking calls, MPIX_Comm_set_algorithm, locality split) while a
#                                multi-round request is active and its peers wait on it
#                                (test_progress; MPI_THREAD_SINGLE)
#   mpi.progress_ppn2            ... under MPIX_LOCALITY=ppn:2 (locality from the environment,
#                                several nodes for the node-aware algorithms)
#   mpi.progress_debug           ... the blocking cases under MPIX_DEBUG=1 (an agreement in every
#                                blocking call)
#   mpi.progress_thread          the progress thread, per-request info "mpix_progress"=thread:
#                                Start; MPI_Barrier / MPI_Recv; Wait with rank-dependent arrival
#                                (test_progress_thread; MPI_THREAD_MULTIPLE)
#   mpi.progress_thread_env      ... every request threaded by MPIX_PROGRESS=thread
#   mpi.progress_thread_single   the same program initialised with MPI_THREAD_SINGLE: the info
#                                key is harmless (warning, no thread), the thread tests skip
#   mpi.progress_thread_single_env  ... with MPIX_PROGRESS=thread
#   mpi.running_list             the running list and the progress thread from inside (the static
#                                library's internals, operations of the test's own): passes by
#                                other threads never put the progress thread to sleep while a
#                                threaded operation runs (test_running_list; rank-local)
#
# Rank counts: Open MPI 1-8 (16 for the thread program); oversubscribed MPICH busy-polls (and
# more so with threads), so it runs few, with fewer iterations and a sample of the progress
# cases; the sanitizer build runs fewer counts (SANITIZE lists) with the same reductions. Every
# list is cut down to MPIA_TEST_NPROCS. A hang is ended by each program's watchdog
# (MPIA_TEST_WATCHDOG_S overrides its limit) in about a minute, long before the ctest TIMEOUT.
# All carry the label "threads" (ctest -L threads).

find_package(Threads REQUIRED)

# The MPI gtest main asking for MPI_THREAD_MULTIPLE.
add_library(mpia_mpi_gtest_main_mt STATIC mpi_gtest_main.cpp)
target_compile_features(mpia_mpi_gtest_main_mt PUBLIC cxx_std_17)
target_link_libraries(mpia_mpi_gtest_main_mt PUBLIC GTest::gtest MPI::MPI_C Threads::Threads
                      PRIVATE mpia_build_flags)
target_compile_definitions(mpia_mpi_gtest_main_mt
  PUBLIC OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1 PRIVATE MPIA_TEST_THREAD_MULTIPLE=1)

# _mpia_thread_test(<target> <source> <gtest main>)
function(_mpia_thread_test target source main)
  add_executable(${target} ${source})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${target} PRIVATE mpi_advance ${main} Threads::Threads mpia_build_flags)
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()
_mpia_thread_test(mpia_test_threads test_threads.cpp mpia_mpi_gtest_main_mt)
_mpia_thread_test(mpia_test_progress test_progress.cpp mpia_mpi_gtest_main)
_mpia_thread_test(mpia_test_progress_thread test_progress_thread.cpp mpia_mpi_gtest_main_mt)
_mpia_thread_test(mpia_test_progress_thread_single test_progress_thread.cpp mpia_mpi_gtest_main)
add_executable(mpia_test_running_list test_running_list.cpp)
target_include_directories(mpia_test_running_list PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(mpia_test_running_list PRIVATE mpia_internal mpia_mpi_gtest_main_mt
                      Threads::Threads mpia_build_flags)

# _mpia_thread_register(NAME <name> TARGET <target> OPENMPI <n>... MPICH <n>...
#                       [SANITIZE <n>...] [ARGS ...] [ENVIRONMENT ...])
function(_mpia_thread_register)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TARGET" "OPENMPI;MPICH;SANITIZE;ARGS;ENVIRONMENT")
  mpia_test_nprocs(np ${arg_OPENMPI} MPICH ${arg_MPICH} SANITIZE ${arg_SANITIZE})
  if(np)
    mpia_add_mpi_test(NAME ${arg_NAME} TARGET ${arg_TARGET} NPROCS ${np} TIMEOUT 300
                      ARGS ${arg_ARGS} ENVIRONMENT ${arg_ENVIRONMENT} LABELS threads)
  endif()
endfunction()

# Oversubscribed MPICH, and the sanitizer build (every allocation unwinds the stack): fewer
# iterations per thread, and each progress case with one of its three active requests
# (MPIA_TEST_PROGRESS_SAMPLE, see test_progress.cpp).
set(_mpia_slow_env)
if(NOT MPIA_MPIEXEC_IS_OPENMPI OR MPIA_SANITIZE)
  set(_mpia_slow_env MPIA_TEST_THREAD_ITERS=4 MPIA_TEST_PROGRESS_SAMPLE=3)
endif()

_mpia_thread_register(NAME mpi.threads TARGET mpia_test_threads
                      OPENMPI 1 2 3 5 8 16 MPICH 2 3 SANITIZE 2 3 5 8
                      ENVIRONMENT ${_mpia_slow_env})
_mpia_thread_register(NAME mpi.progress TARGET mpia_test_progress
                      OPENMPI 1 2 3 5 8 MPICH 3 4 SANITIZE 3 5
                      ENVIRONMENT ${_mpia_slow_env})
_mpia_thread_register(NAME mpi.progress_ppn2 TARGET mpia_test_progress
                      OPENMPI 4 5 MPICH 4 SANITIZE 4
                      ARGS "--gtest_filter=*Locality*:*Tra2*:*Split*:*FirstCall*"
                      ENVIRONMENT MPIX_LOCALITY=ppn:2 ${_mpia_slow_env})
_mpia_thread_register(NAME mpi.progress_debug TARGET mpia_test_progress
                      OPENMPI 3 5 MPICH 3 SANITIZE 3
                      ARGS "--gtest_filter=*Blocking*"
                      ENVIRONMENT MPIX_DEBUG=1 ${_mpia_slow_env})
_mpia_thread_register(NAME mpi.progress_thread TARGET mpia_test_progress_thread
                      OPENMPI 1 2 3 5 8 MPICH 3 SANITIZE 2 3 5)
_mpia_thread_register(NAME mpi.progress_thread_env TARGET mpia_test_progress_thread
                      OPENMPI 3 5 MPICH 3 SANITIZE 3
                      ENVIRONMENT MPIX_PROGRESS=thread)
_mpia_thread_register(NAME mpi.progress_thread_single TARGET mpia_test_progress_thread_single
                      OPENMPI 1 3 MPICH 3 SANITIZE 3)
_mpia_thread_register(NAME mpi.running_list TARGET mpia_test_running_list
                      OPENMPI 1 3 MPICH 1 SANITIZE 3)
_mpia_thread_register(NAME mpi.progress_thread_single_env TARGET mpia_test_progress_thread_single
                      OPENMPI 3 MPICH 3
                      ENVIRONMENT MPIX_PROGRESS=thread)
