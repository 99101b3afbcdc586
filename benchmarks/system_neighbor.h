/*
 * system_neighbor.h -- the MPI library's own persistent neighborhood all-to-all-v, seen from
 * the neighbor benchmark (mpia_bench_neighbor).
 *
 * Implemented in system_neighbor.cpp, a translation unit that includes <mpi.h> (and Open MPI's
 * <mpi-ext.h>) but never mpi_advance.h: that header maps MPIX_Neighbor_alltoallv_init onto our
 * own symbol, while Open MPI 4's pcollreq extension exports its own MPIX_Neighbor_alltoallv_init
 * with an MPI_Request signature.
 */
#ifndef MPIA_BENCH_SYSTEM_NEIGHBOR_H
#define MPIA_BENCH_SYSTEM_NEIGHBOR_H

#include <mpi.h>

/* Name of the system persistent neighborhood all-to-all-v this build can call
 * ("MPI_Neighbor_alltoallv_init", "MPIX_Neighbor_alltoallv_init(ompi-ext)"), or nullptr when
 * the MPI library has none. */
const char *mpia_bench_system_neighbor_name();

/* Create the system's persistent neighborhood all-to-all-v (inactive, start with MPI_Start).
 * Returns the MPI error code; MPI_ERR_UNSUPPORTED_OPERATION when
 * mpia_bench_system_neighbor_name() is null. */
int mpia_bench_system_neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                              const int sdispls[], MPI_Datatype sendtype,
                                              void *recvbuf, const int recvcounts[],
                                              const int rdispls[], MPI_Datatype recvtype,
                                              MPI_Comm comm, MPI_Info info,
                                              MPI_Request *request);

#endif
