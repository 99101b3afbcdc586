# Hardening tests (issue 9), included by test/mpi/CMakeLists.txt.
#
#   mpi.hardening          mismatched blocking calls with every algorithm (MPI_ERR_TRUNCATE on
#                          the truncating rank, the communicator clean afterwards), error
#                          ownership, uncommitted datatypes, MPIX_Startall, neighbor "system" on
#                          periodic dimensions of 1 and 2 ranks
#   mpi.error_ownership    a persistent request that fails at run time (an MPI_ERR_TRUNCATE
#                          injected on rank 0 through the profiling interface) next to ones
#                          that succeed: each reports its own outcome; the failed one is clean
#   mpi.tags               tag life cycles over the full tag range
#   mpi.tags_ub4           the same with MPIX_TAG_UB=4: wrap-around, exhaustion, recovery
#   mpi.settings_differ_*  rank 0's environment differs in one MPIX_* setting: MPI_ERR_ARG on
#                          every rank for every call (MPIA_TEST_RANK0_ENV, see the program)
#   mpi.settings_same      the same settings everywhere: everything works and they take effect
#   mpi.finalize_cleanup   MPI_Finalize frees the library's state of communicators never freed
#   mpi.large_types        a 2 GiB + 64 byte datatype with every algorithm, and 2^31 + 64
#                          elements through every large-count (_c) function (label "large"; not
#                          in the sanitizer build; skipped when memory is short)
#
# Every list of rank counts is cut down to MPIA_TEST_NPROCS (e.g. the sanitizer build's).
# Oversubscribed MPICH busy-polls: fewer rank counts there. Each run takes seconds, so the
# timeout is 120 s (a hang costs less CI time than the default's).

set(MPIA_HARDENING_TEST_PROGRAMS hardening error_ownership tags settings_agreement)
if(NOT MPIA_SANITIZE)
  list(APPEND MPIA_HARDENING_TEST_PROGRAMS large_types)
endif()
foreach(prog IN LISTS MPIA_HARDENING_TEST_PROGRAMS)
  add_executable(mpia_test_${prog} test_${prog}.cpp)
  target_link_libraries(mpia_test_${prog} PRIVATE mpia_mpi_test_support)
  target_compile_options(mpia_test_${prog} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)
endforeach()

# A plain MPI program (its own main, checks after MPI_Finalize) that interposes MPI functions
# through the profiling interface to see what the library creates and frees.
add_executable(mpia_test_finalize_cleanup test_finalize_cleanup.cpp)
target_link_libraries(mpia_test_finalize_cleanup PRIVATE mpi_advance MPI::MPI_C mpia_build_flags)
target_compile_features(mpia_test_finalize_cleanup PRIVATE cxx_std_17)
target_compile_definitions(mpia_test_finalize_cleanup PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_compile_options(mpia_test_finalize_cleanup PRIVATE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)


mpia_test_nprocs(_np 1 2 3 5 8 16 MPICH 1 2 3 5)
if(_np)
  mpia_add_mpi_test(NAME mpi.hardening TARGET mpia_test_hardening NPROCS ${_np} TIMEOUT 120)
endif()
mpia_test_nprocs(_np 2 3 5 8 MPICH 2 3)
if(_np)
  mpia_add_mpi_test(NAME mpi.error_ownership TARGET mpia_test_error_ownership NPROCS ${_np}
                    TIMEOUT 120)
endif()

mpia_test_nprocs(_np 1 2 3 8 MPICH 2 3)
if(_np)
  mpia_add_mpi_test(NAME mpi.tags TARGET mpia_test_tags NPROCS ${_np} TIMEOUT 120)
endif()
mpia_test_nprocs(_np 1 2 3 5 8 16 MPICH 1 2 3 5)
if(_np)
  mpia_add_mpi_test(NAME mpi.tags_ub4 TARGET mpia_test_tags NPROCS ${_np} TIMEOUT 120
                    ENVIRONMENT MPIX_TAG_UB=4)
endif()

# One registration per setting, each with its own value on rank 0 only.
set(_mpia_settings_cases
  "alltoall|MPIX_ALLTOALL=bruck"
  "alltoall_value|MPIX_ALLTOALL=bruck|MPIX_ALLTOALL=pairwise"
  "alltoallv|MPIX_ALLTOALLV=pairwise"
  "neighbor|MPIX_NEIGHBOR_ALLTOALLV=direct"
  "cost_model|MPIX_COST_MODEL=lat_inter=1e-5"
  "tuning|MPIX_TUNING=${CMAKE_CURRENT_SOURCE_DIR}/tuning_example.txt"
  "locality|MPIX_LOCALITY=ppn:1"
  "tag_ub|MPIX_TAG_UB=4"
  "debug|MPIX_DEBUG=1"
  "trial_sync|MPIX_TRIAL_SYNC=barrier")
mpia_test_nprocs(_np 2 5 MPICH 2 3)
if(_np)
  foreach(case IN LISTS _mpia_settings_cases)
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 name)
    list(GET parts 1 rank0)
    set(env MPIA_TEST_RANK0_ENV=${rank0})
    list(LENGTH parts n)
    if(n GREATER 2)
      list(GET parts 2 everyone)  # what every rank has (rank 0 then overrides it)
      list(APPEND env ${everyone})
    endif()
    mpia_add_mpi_test(NAME mpi.settings_differ_${name} TARGET mpia_test_settings_agreement
                      NPROCS ${_np} TIMEOUT 120 ARGS --gtest_filter=Settings.Disagree
                      ENVIRONMENT ${env})
  endforeach()
endif()
mpia_test_nprocs(_np 1 2 3 MPICH 1 2 3)
if(_np)
  mpia_add_mpi_test(NAME mpi.settings_same TARGET mpia_test_settings_agreement NPROCS ${_np}
                    TIMEOUT 120 ARGS --gtest_filter=Settings.Agree
                    ENVIRONMENT MPIX_ALLTOALL=bruck MPIX_ALLTOALLV=pairwise
                                MPIX_NEIGHBOR_ALLTOALLV=direct MPIX_COST_MODEL=lat_inter=1e-5
                                MPIX_TUNING=${CMAKE_CURRENT_SOURCE_DIR}/tuning_example.txt
                                MPIX_TAG_UB=8)
  # "none" is MPIX_TRIAL_SYNC's default ("arrival") by its former name: the same setting.
  mpia_add_mpi_test(NAME mpi.settings_same_trial_sync TARGET mpia_test_settings_agreement
                    NPROCS ${_np} TIMEOUT 120 ARGS --gtest_filter=Settings.Agree
                    ENVIRONMENT MPIA_TEST_RANK0_ENV=MPIX_TRIAL_SYNC=none)
endif()

mpia_test_nprocs(_np 1 2 3 MPICH 1 2 3)
if(_np)
  mpia_add_mpi_test(NAME mpi.finalize_cleanup TARGET mpia_test_finalize_cleanup NPROCS ${_np}
                    TIMEOUT 120)
endif()

if(NOT MPIA_SANITIZE)
  mpia_test_nprocs(_np 1 2 MPICH 1 2)
  if(_np)
    mpia_add_mpi_test(NAME mpi.large_types TARGET mpia_test_large_types NPROCS ${_np}
                      TIMEOUT 1800 LABELS large)
  endif()
endif()
