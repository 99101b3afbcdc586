# Neighborhood all-to-all tests (issue 5), included by test/mpi/CMakeLists.txt.
#
#   mpi.neighbor            every topology x algorithm x configuration (v, regular and w forms),
#                           selection, edge cases, SpMV halo products, traffic (MPIA_TEST_NPROCS,
#                           plus 6 and 12 for more Cartesian 2D/3D shapes when the full default
#                           list is in use)
#   mpi.neighbor_errors     argument errors, MPI_ERR_TOPOLOGY/COMM/INFO_VALUE/TRUNCATE
#   mpi.neighbor_ppn2       the node-aware algorithms under emulated nodes of 2 ranks
#                           (locality_partial at its defaults and at threshold 0: all direct)
#   mpi.neighbor_ppn3       ... of 3 ranks (uneven: the last node is smaller; locality_partial
#                           at min_edges 3)
#   mpi.neighbor_traffic_ppn4  inter-node message counts of locality vs direct, nodes of 4
#
# Every list of rank counts is cut down to MPIA_TEST_NPROCS (e.g. the sanitizer build's).

# The neighborhood tests' fixture library (topologies with their reference model, guarded
# buffers, configurations, runners: neighbor_fixtures.hpp), compiled once for the programs built
# from test_neighbor.cpp and for any other test that links it, as mpia_mpi_test_support is.
add_library(mpia_mpi_neighbor_fixtures STATIC neighbor_fixtures.cpp)
target_link_libraries(mpia_mpi_neighbor_fixtures PUBLIC mpia_mpi_test_support)
target_compile_options(mpia_mpi_neighbor_fixtures PRIVATE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)

set(MPIA_NEIGHBOR_TEST_PROGRAMS neighbor neighbor_errors)
foreach(prog IN LISTS MPIA_NEIGHBOR_TEST_PROGRAMS)
  add_executable(mpia_test_${prog} test_${prog}.cpp)
  target_link_libraries(mpia_test_${prog} PRIVATE mpia_mpi_test_support)
  target_compile_options(mpia_test_${prog} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)
endforeach()
target_link_libraries(mpia_test_neighbor PRIVATE mpia_mpi_neighbor_fixtures)

# Oversubscribed MPICH busy-polls (tens of milliseconds per collective at 8+ ranks on 2 cores):
# the tests sample their matrices there (sample_stride), and the extra rank counts (6, 12 and
# the 16-rank ppn:3 run) are Open MPI's only.
set(_mpia_nb_nprocs ${MPIA_TEST_NPROCS})
if("16" IN_LIST MPIA_TEST_NPROCS AND MPIA_MPIEXEC_IS_OPENMPI)
  list(APPEND _mpia_nb_nprocs 6 12)
endif()
mpia_add_mpi_test(NAME mpi.neighbor TARGET mpia_test_neighbor NPROCS ${_mpia_nb_nprocs})
mpia_add_mpi_test(NAME mpi.neighbor_errors TARGET mpia_test_neighbor_errors)

# Emulated nodes (MPIX_LOCALITY): the node-aware algorithms and auto only, on the matrix, the
# SpMV products, concurrent requests and the traffic comparison.
set(_mpia_nb_locality_tests
  "*NeighborMatrix.*:*NeighborWMatrix.*:NeighborSpMV.*:NeighborEdge.ConcurrentRequests:NeighborTraffic.*")
set(_mpia_nb_locality_filter "--gtest_filter=${_mpia_nb_locality_tests}")
mpia_test_nprocs(_np 4 5 8)
if(_np)
  mpia_add_mpi_test(NAME mpi.neighbor_ppn2 TARGET mpia_test_neighbor NPROCS ${_np}
                    ARGS ${_mpia_nb_locality_filter}
                    ENVIRONMENT MPIX_LOCALITY=ppn:2
                    MPIA_NEIGHBOR_ALGORITHMS=locality,locality_partial,locality_partial:threshold=0,auto)
endif()
mpia_test_nprocs(_np 4 7 16 MPICH 4 7)
if(_np)
  mpia_add_mpi_test(NAME mpi.neighbor_ppn3 TARGET mpia_test_neighbor NPROCS ${_np}
                    ARGS ${_mpia_nb_locality_filter}
                    ENVIRONMENT MPIX_LOCALITY=ppn:3
                    MPIA_NEIGHBOR_ALGORITHMS=locality,locality_partial:min_edges=3,auto)
endif()
mpia_test_nprocs(_np 8 16)
if(_np)
  mpia_add_mpi_test(NAME mpi.neighbor_traffic_ppn4 TARGET mpia_test_neighbor NPROCS ${_np}
                    ARGS --gtest_filter=NeighborTraffic.*
                    ENVIRONMENT MPIX_LOCALITY=ppn:4)
endif()

# MPIX_Topo (issue 20): the matrix's graph topologies through topology objects made from the
# same lists (checked against the reference and byte for byte against the communicator's own
# topology), and the objects' own rules (NeighborTopo.*): one program built from
# test_neighbor.cpp with MPIA_NEIGHBOR_VIA_TOPO. Rank counts: MPIA_TEST_NPROCS (1-5 and 16
# oversubscribed by default); under emulated nodes of 3 ranks for the node-aware algorithms.
add_executable(mpia_test_neighbor_topo test_neighbor.cpp)
target_compile_definitions(mpia_test_neighbor_topo PRIVATE MPIA_NEIGHBOR_VIA_TOPO=1)
target_link_libraries(mpia_test_neighbor_topo PRIVATE mpia_mpi_neighbor_fixtures)
target_compile_options(mpia_test_neighbor_topo PRIVATE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)
mpia_add_mpi_test(NAME mpi.neighbor_topo TARGET mpia_test_neighbor_topo
                  ARGS --gtest_filter=*NeighborMatrix.*:NeighborTopo*)
mpia_test_nprocs(_np 4 7 16 MPICH 4 7)
if(_np)
  mpia_add_mpi_test(NAME mpi.neighbor_topo_ppn3 TARGET mpia_test_neighbor_topo NPROCS ${_np}
                    ARGS --gtest_filter=*NeighborMatrix.*:NeighborTopo.FreedWhileRequestsRun
                    ENVIRONMENT MPIX_LOCALITY=ppn:3
                    MPIA_NEIGHBOR_ALGORITHMS=locality,locality_partial,auto)
endif()
