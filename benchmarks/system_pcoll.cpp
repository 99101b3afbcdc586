/*
 * system_pcoll.cpp -- calls the MPI library's own persistent all-to-all.
 *
 * This file must not include mpi_advance.h (see system_pcoll.h): here MPIX_Alltoall_init and
 * MPIX_Alltoallv_init are Open MPI's extensions from <mpi-ext.h>, not mpi-advance's.
 */
#include "system_pcoll.h"

#include <mpi.h>

#ifdef MPI_ADVANCE_H
#error "system_pcoll.cpp must not include mpi_advance.h"
#endif

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define MPIA_BENCH_PCOLL_STANDARD 1
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPIA_BENCH_PCOLL_OMPI_EXT 1
#endif

const char *mpia_bench_system_pcoll_name()
{
#if defined(MPIA_BENCH_PCOLL_STANDARD)
    return "MPI_Alltoall_init";
#elif defined(MPIA_BENCH_PCOLL_OMPI_EXT)
    return "MPIX_Alltoall_init(ompi-ext)";
#else
    return nullptr;
#endif
}

int mpia_bench_system_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
#if defined(MPIA_BENCH_PCOLL_STANDARD)
    return MPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             info, request);
#elif defined(MPIA_BENCH_PCOLL_OMPI_EXT)
    return MPIX_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              info, request);
#else
    (void)sendbuf; (void)sendcount; (void)sendtype; (void)recvbuf; (void)recvcount;
    (void)recvtype; (void)comm; (void)info;
    *request = MPI_REQUEST_NULL;
    return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}

const char *mpia_bench_system_pcoll_v_name()
{
#if defined(MPIA_BENCH_PCOLL_STANDARD)
    return "MPI_Alltoallv_init";
#elif defined(MPIA_BENCH_PCOLL_OMPI_EXT)
    return "MPIX_Alltoallv_init(ompi-ext)";
#else
    return nullptr;
#endif
}

int mpia_bench_system_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                     const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                     const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request)
{
#if defined(MPIA_BENCH_PCOLL_STANDARD)
    return MPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm, info, request);
#elif defined(MPIA_BENCH_PCOLL_OMPI_EXT)
    return MPIX_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                               rdispls, recvtype, comm, info, request);
#else
    (void)sendbuf; (void)sendcounts; (void)sdispls; (void)sendtype; (void)recvbuf;
    (void)recvcounts; (void)rdispls; (void)recvtype; (void)comm; (void)info;
    *request = MPI_REQUEST_NULL;
    return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
