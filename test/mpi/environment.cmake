# The environment's own handling (included by test/mpi/CMakeLists.txt).
#
# mpi-advance reads its environment variables (MPIX_ALLTOALL, MPIX_ALLTOALLV,
# MPIX_NEIGHBOR_ALLTOALLV, MPIX_LOCALITY, ...) once per process, so a test of what a value does
# must set it before the process starts: each value is a registration of its own, running only
# the tests written for it (--gtest_filter; they skip, on every rank alike, when their variable
# is absent). Elsewhere the tests choose algorithms with MPIX_Comm_set_algorithm.
#
#   mpi.env.selection_*        test_selection  SelectionEnv.*: the environment's choice for
#                              inits without info and for blocking calls (the sends they start),
#                              info and MPIX_Comm_set_algorithm winning over it, a reset returning
#                              to it, and a bad value reported on stderr and ignored (auto) or
#                              clamped into range. MPIA_TEST_EXPECT_<X> is what MPIX_<X> must
#                              resolve to, MPIA_TEST_WARN_<X>=1 that stderr must say so.
#   mpi.env.alltoallv_errors_* test_alltoallv_errors  AlltoallvErrorsEnv.*: bad MPIX_ALLTOALLV
#   mpi.env.neighbor_*         test_neighbor  NeighborSelectionEnv.*: MPIX_NEIGHBOR_ALLTOALLV
#   mpi.env.neighbor_errors_*  test_neighbor_errors  NeighborErrorsEnv.*: bad values of it
#   mpi.env.locality_bad_*     test_locality  BadLocality.*: the blocking call under a malformed
#                              MPIX_LOCALITY with MPIX_ALLTOALL naming an algorithm that needs
#                              no locality (must work) or one that does (auto or MPI_ERR_ARG)
#   mpi.env.locality_warning_* test_locality  BadLocalityWarning.*: what stderr says at the
#                              first call under a malformed MPIX_LOCALITY: that variable named,
#                              MPI_ERR_ARG announced and returned; MPIX_ALLTOALL blamed only
#                              when it is bad itself (MPIA_TEST_WARN_ALLTOALL=1)
#
# (c.api_env, in test/c/CMakeLists.txt, does the same for the C API.) Few rank counts: 1 and 3,
# or 3 alone; all carry the label "environment" (ctest -L environment).

# _mpia_env_test(<name> <program> FILTER <gtest filter> NPROCS <n>... ENVIRONMENT <VAR=value>...)
function(_mpia_env_test name prog)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "FILTER" "NPROCS;ENVIRONMENT")
  mpia_test_nprocs(nprocs ${arg_NPROCS} UPTO)
  if(NOT nprocs)
    return()
  endif()
  mpia_add_mpi_test(NAME mpi.env.${name} TARGET mpia_test_${prog} NPROCS ${nprocs}
                    ARGS "--gtest_filter=${arg_FILTER}" ENVIRONMENT ${arg_ENVIRONMENT}
                    LABELS environment)
endfunction()

# Alltoall and alltoallv selection (both variables in each run).
_mpia_env_test(selection_good selection FILTER "SelectionEnv.*" NPROCS 1 3 ENVIRONMENT
  MPIX_ALLTOALL=bruck MPIA_TEST_EXPECT_ALLTOALL=bruck
  MPIX_ALLTOALLV=multipair_waitall:window=2
  MPIA_TEST_EXPECT_ALLTOALLV=multipair_waitall:window=2)
# Parameters at the top of their range (radix P).
_mpia_env_test(selection_radix selection FILTER "SelectionEnv.*" NPROCS 3 ENVIRONMENT
  MPIX_ALLTOALL=tra:radix=3 MPIA_TEST_EXPECT_ALLTOALL=tra:radix=3
  MPIX_ALLTOALLV=bruck:radix=3 MPIA_TEST_EXPECT_ALLTOALLV=bruck:radix=3)
# Out of range: clamped into it, with a note on stderr.
_mpia_env_test(selection_clamped selection FILTER "SelectionEnv.*" NPROCS 3 ENVIRONMENT
  MPIX_ALLTOALL=tra:radix=1 MPIA_TEST_EXPECT_ALLTOALL=tra:radix=2 MPIA_TEST_WARN_ALLTOALL=1
  MPIX_ALLTOALLV=multipair_waitall:window=0
  MPIA_TEST_EXPECT_ALLTOALLV=multipair_waitall:window=1 MPIA_TEST_WARN_ALLTOALLV=1)
# Unknown names (an alltoall algorithm for alltoallv): reported and ignored, auto runs.
_mpia_env_test(selection_unknown selection FILTER "SelectionEnv.*" NPROCS 1 3 ENVIRONMENT
  MPIX_ALLTOALL=no_such_algorithm MPIA_TEST_EXPECT_ALLTOALL=auto MPIA_TEST_WARN_ALLTOALL=1
  MPIX_ALLTOALLV=tra MPIA_TEST_EXPECT_ALLTOALLV=auto MPIA_TEST_WARN_ALLTOALLV=1)
# Parameters that cannot be repaired (not a number, not the algorithm's): auto runs.
_mpia_env_test(selection_badparam selection FILTER "SelectionEnv.*" NPROCS 3 ENVIRONMENT
  MPIX_ALLTOALL=tra:radix=abc MPIA_TEST_EXPECT_ALLTOALL=auto MPIA_TEST_WARN_ALLTOALL=1
  MPIX_ALLTOALLV=pairwise:window=2 MPIA_TEST_EXPECT_ALLTOALLV=auto MPIA_TEST_WARN_ALLTOALLV=1)

# Bad MPIX_ALLTOALLV: calls (blocking and persistent) still work.
_mpia_env_test(alltoallv_errors_unknown alltoallv_errors FILTER "AlltoallvErrorsEnv.*"
  NPROCS 1 3 ENVIRONMENT MPIX_ALLTOALLV=nosuch)
_mpia_env_test(alltoallv_errors_window alltoallv_errors FILTER "AlltoallvErrorsEnv.*"
  NPROCS 3 ENVIRONMENT MPIX_ALLTOALLV=multipair_waitall:window=0)

# MPIX_NEIGHBOR_ALLTOALLV: valid values, then bad ones.
_mpia_env_test(neighbor_locality neighbor FILTER "NeighborSelectionEnv.*" NPROCS 1 3
  ENVIRONMENT MPIX_NEIGHBOR_ALLTOALLV=locality)
_mpia_env_test(neighbor_direct neighbor FILTER "NeighborSelectionEnv.*" NPROCS 3
  ENVIRONMENT MPIX_NEIGHBOR_ALLTOALLV=direct)
_mpia_env_test(neighbor_errors_unknown neighbor_errors FILTER "NeighborErrorsEnv.*" NPROCS 1 3
  ENVIRONMENT MPIX_NEIGHBOR_ALLTOALLV=nosuch)
_mpia_env_test(neighbor_errors_param neighbor_errors FILTER "NeighborErrorsEnv.*" NPROCS 3
  ENVIRONMENT MPIX_NEIGHBOR_ALLTOALLV=direct:window=0)

# A malformed MPIX_LOCALITY with MPIX_ALLTOALL set.
_mpia_env_test(locality_bad_pairwise locality FILTER "BadLocality.*" NPROCS 3 ENVIRONMENT
  MPIX_LOCALITY=bogus MPIA_TEST_EXPECT_BAD_LOCALITY=1 MPIX_ALLTOALL=pairwise)
_mpia_env_test(locality_bad_tra2 locality FILTER "BadLocality.*" NPROCS 3 ENVIRONMENT
  MPIX_LOCALITY=bogus MPIA_TEST_EXPECT_BAD_LOCALITY=1 MPIX_ALLTOALL=tra2)
# ... and what stderr says about it: a good MPIX_ALLTOALL needing locality, then a bad one.
_mpia_env_test(locality_warning_tra2 locality FILTER "BadLocalityWarning.*" NPROCS 1 3
  ENVIRONMENT MPIX_LOCALITY=garbage MPIA_TEST_EXPECT_BAD_LOCALITY=1 MPIX_ALLTOALL=tra2)
_mpia_env_test(locality_warning_unknown locality FILTER "BadLocalityWarning.*" NPROCS 3
  ENVIRONMENT MPIX_LOCALITY=garbage MPIA_TEST_EXPECT_BAD_LOCALITY=1 MPIX_ALLTOALL=no_such
  MPIA_TEST_WARN_ALLTOALL=1)

# MPIX_TUNING: the file's rules apply where the algorithm is auto (MPIX_ALLTOALL=auto, said
# explicitly so that SelectionEnv runs) and lose to MPI_Info, MPIX_Comm_set_algorithm and an
# environment variable naming an algorithm.
_mpia_env_test(tuning_rules selection FILTER "SelectionEnv.*" NPROCS 1 3 ENVIRONMENT
  MPIX_TUNING=${CMAKE_CURRENT_SOURCE_DIR}/tuning_example.txt
  MPIX_ALLTOALL=auto MPIA_TEST_EXPECT_ALLTOALL=pairwise
  MPIX_ALLTOALLV=auto MPIA_TEST_EXPECT_ALLTOALLV=linear)
_mpia_env_test(tuning_env_wins selection FILTER "SelectionEnv.*" NPROCS 3 ENVIRONMENT
  MPIX_TUNING=${CMAKE_CURRENT_SOURCE_DIR}/tuning_example.txt
  MPIX_ALLTOALL=bruck MPIA_TEST_EXPECT_ALLTOALL=bruck
  MPIX_ALLTOALLV=pairwise MPIA_TEST_EXPECT_ALLTOALLV=pairwise)

# A blocking alltoall repeated with the same arguments follows every change (buffers, sizes, the
# communicator's algorithm, auto settling, a communicator freed and made again); under
# MPIX_REPORT each call's algorithm is checked as well.
_mpia_env_test(blocking_repeat alltoall FILTER "AlltoallEdge.BlockingRepeat*" NPROCS 1 3 4
  ENVIRONMENT MPIX_REPORT=1)
