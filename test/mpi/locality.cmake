# Locality and TRA2 tests (issue 4), included by test/mpi/CMakeLists.txt.
#
#   test_locality  MPIX_Comm_locality / _rank_locality / _locality_split against the layout the
#                  test derives itself from MPIX_LOCALITY (or MPI_Comm_split_type), and the
#                  MPI_ERR_ARG of a malformed MPIX_LOCALITY (MPIA_TEST_EXPECT_BAD_LOCALITY=1)
#   test_tra2      alltoall "tra2" and alltoallv "locality": data, traffic, errors
#
# Each program runs under several pretend machines (MPIX_LOCALITY layouts), at rank counts
# chosen so that every layout meets uniform and uneven nodes; the tests are named
# mpi.<program>.<layout>.np<N>. Explicit node lists fit exactly one world size. MPICH
# additionally runs them without MPIX_LOCALITY under MPIR_CVAR_NUM_CLIQUES, which makes its
# MPI_Comm_split_type(SHARED) report several "nodes": the library's own detection path.

foreach(prog IN ITEMS locality tra2)
  add_executable(mpia_test_${prog} test_${prog}.cpp)
  target_link_libraries(mpia_test_${prog} PRIVATE mpia_mpi_test_support)
  target_compile_options(mpia_test_${prog} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)
endforeach()

# _mpia_locality_tests(<program> <layout name> <MPIX_LOCALITY value or "">
#                      NPROCS <n>... [SLOW_NPROCS <n>...])
# Oversubscribed MPICH busy-polls (a collective costs tens of milliseconds at 8 ranks on 2
# cores, see test_support.hpp) and the sanitizer build's allocations are slow (full stack
# unwinding), so there each layout runs at the SLOW_NPROCS subset only (none when empty); the
# programs also sample their matrices when MPI is slow.
function(_mpia_locality_tests prog layout value)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "NPROCS;SLOW_NPROCS")
  set(wanted ${arg_NPROCS})
  if(NOT MPIA_MPIEXEC_IS_OPENMPI OR MPIA_SANITIZE)
    set(wanted ${arg_SLOW_NPROCS})
  endif()
  mpia_test_nprocs(nprocs ${wanted} UPTO)
  if(NOT nprocs)
    return()
  endif()
  set(env)
  if(NOT "${value}" STREQUAL "")
    list(APPEND env "MPIX_LOCALITY=${value}")
  endif()
  mpia_add_mpi_test(NAME mpi.${prog}.${layout} TARGET mpia_test_${prog}
                    NPROCS ${nprocs} ENVIRONMENT ${env} LABELS locality)
endfunction()

# Layouts (commas in a value are safe: CMake lists split on ";"). All these tests carry the
# label "locality" (ctest -L locality).
set(_mpia_nodes6 "nodes:0,0,0,1,2,2")      # 3 + 1 + 2 ranks
set(_mpia_nodes7 "nodes:5,2,5,0,2,0,9")    # ids out of order, interleaved: 2 + 2 + 2 + 1

# test_locality: cheap (a few collectives per communicator), so many rank counts.
_mpia_locality_tests(locality detected "" NPROCS 1 2 3 5 8 SLOW_NPROCS 1 3 8)
_mpia_locality_tests(locality ppn1 "ppn:1" NPROCS 1 4 SLOW_NPROCS 4)
_mpia_locality_tests(locality ppn2 "ppn:2" NPROCS 1 2 3 4 7 8 16 SLOW_NPROCS 2 7)
_mpia_locality_tests(locality ppn3 "ppn:3" NPROCS 4 5 7 8 SLOW_NPROCS 5 8)
_mpia_locality_tests(locality ppn4 "ppn:4" NPROCS 4 6 8 12 16 SLOW_NPROCS 6 12)
_mpia_locality_tests(locality ppn4rr "ppn:4,roundrobin" NPROCS 5 6 8 12 16 SLOW_NPROCS 6 8)
_mpia_locality_tests(locality nodes6 "${_mpia_nodes6}" NPROCS 6 SLOW_NPROCS 6)
_mpia_locality_tests(locality nodes7 "${_mpia_nodes7}" NPROCS 7 SLOW_NPROCS 7)

# Malformed values: MPI_ERR_ARG on every rank, no hang (fast: no data is exchanged).
set(_mpia_bad_locality
  "ppn0|ppn:0|2"
  "ppnx|ppn:x|3"
  "ppnneg|ppn:-1|2"
  "ppnopt|ppn:4,blah|4"
  "nodesshort|nodes:0,1|3"
  "nodesempty|nodes:0,,1|3"
  "bogus|bogus|1"
  "bogus|bogus|4")
foreach(entry IN LISTS _mpia_bad_locality)
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 name)
  list(GET fields 1 value)
  list(GET fields 2 np)
  mpia_add_mpi_test(NAME mpi.locality.bad_${name} TARGET mpia_test_locality NPROCS ${np}
                    ENVIRONMENT "MPIX_LOCALITY=${value}" MPIA_TEST_EXPECT_BAD_LOCALITY=1
                    LABELS locality)
endforeach()

# test_tra2: the full data matrix per run (sampled when MPI is slow, see test_support.hpp).
_mpia_locality_tests(tra2 detected "" NPROCS 1 2 3 SLOW_NPROCS 1 3)
_mpia_locality_tests(tra2 ppn1 "ppn:1" NPROCS 4)
_mpia_locality_tests(tra2 ppn2 "ppn:2" NPROCS 4 5 8 16 SLOW_NPROCS 4)
_mpia_locality_tests(tra2 ppn3 "ppn:3" NPROCS 5 7 SLOW_NPROCS 5)
_mpia_locality_tests(tra2 ppn4 "ppn:4" NPROCS 8 16 SLOW_NPROCS 8)
_mpia_locality_tests(tra2 ppn4rr "ppn:4,roundrobin" NPROCS 6 8 16 SLOW_NPROCS 6)
_mpia_locality_tests(tra2 nodes6 "${_mpia_nodes6}" NPROCS 6)
_mpia_locality_tests(tra2 nodes7 "${_mpia_nodes7}" NPROCS 7 SLOW_NPROCS 7)

# MPICH: the real detection path, with MPICH pretending to be several nodes (round robin, and
# blocks).
if(NOT MPIA_MPIEXEC_IS_OPENMPI)
  # 2 cliques round robin: uniform at 4 ranks, uneven at 5; 3 blocks of 3, 2, 2 at 7.
  mpia_add_mpi_test(NAME mpi.locality.mpich_cliques2 TARGET mpia_test_locality NPROCS 4 5
                    ENVIRONMENT MPIR_CVAR_NUM_CLIQUES=2 LABELS locality)
  mpia_add_mpi_test(NAME mpi.tra2.mpich_cliques2 TARGET mpia_test_tra2 NPROCS 4
                    ENVIRONMENT MPIR_CVAR_NUM_CLIQUES=2 LABELS locality)
  foreach(prog IN ITEMS locality tra2)
    mpia_add_mpi_test(NAME mpi.${prog}.mpich_cliques3_block TARGET mpia_test_${prog} NPROCS 7
                      ENVIRONMENT MPIR_CVAR_NUM_CLIQUES=3 MPIR_CVAR_CLIQUES_BY_BLOCK=1
                      LABELS locality)
  endforeach()
endif()
