/*
 * system_neighbor.cpp -- calls the MPI library's own persistent neighborhood all-to-all-v.
 *
 * This file must not include mpi_advance.h (see system_neighbor.h): here
 * MPIX_Neighbor_alltoallv_init is Open MPI's extension from <mpi-ext.h>, not mpi-advance's.
 *
 *   MPI-4 library (MPICH 4, Open MPI 5)  MPI_Neighbor_alltoallv_init
 *   Open MPI 4.x with the pcollreq ext.  MPIX_Neighbor_alltoallv_init (<mpi-ext.h>,
 *                                        openmpi/mpiext/mpiext_pcollreq_c.h)
 *   anything else                        none (the benchmark skips the variant)
 */
#include "system_neighbor.h"

#include <mpi.h>

#ifdef MPI_ADVANCE_H
#error "system_neighbor.cpp must not include mpi_advance.h"
#endif

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define MPIA_BENCH_NEIGHBOR_STANDARD 1
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPIA_BENCH_NEIGHBOR_OMPI_EXT 1
#endif

const char *mpia_bench_system_neighbor_name()
{
#if defined(MPIA_BENCH_NEIGHBOR_STANDARD)
    return "MPI_Neighbor_alltoallv_init";
#elif defined(MPIA_BENCH_NEIGHBOR_OMPI_EXT)
    return "MPIX_Neighbor_alltoallv_init(ompi-ext)";
#else
    return nullptr;
#endif
}

int mpia_bench_system_neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                              const int sdispls[], MPI_Datatype sendtype,
                                              void *recvbuf, const int recvcounts[],
                                              const int rdispls[], MPI_Datatype recvtype,
                                              MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
#if defined(MPIA_BENCH_NEIGHBOR_STANDARD)
    return MPI_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                       recvcounts, rdispls, recvtype, comm, info, request);
#elif defined(MPIA_BENCH_NEIGHBOR_OMPI_EXT)
    return MPIX_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                        recvcounts, rdispls, recvtype, comm, info, request);
#else
    (void)sendbuf; (void)sendcounts; (void)sdispls; (void)sendtype; (void)recvbuf;
    (void)recvcounts; (void)rdispls; (void)recvtype; (void)comm; (void)info;
    *request = MPI_REQUEST_NULL;
    return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
