/*
 * system_pcoll.h -- the MPI library's own persistent all-to-all, seen from the benchmark.
 *
 * Implemented in system_pcoll.cpp, a translation unit that includes <mpi.h> (and Open MPI's
 * <mpi-ext.h>) but never mpi_advance.h: that header maps MPIX_Alltoall_init onto our own
 * symbol, while Open MPI exports its own MPIX_Alltoall_init with an MPI_Request signature.
 */
#ifndef MPIA_BENCH_SYSTEM_PCOLL_H
#define MPIA_BENCH_SYSTEM_PCOLL_H

#include <mpi.h>

/* Name of the system persistent all-to-all this build can call ("MPI_Alltoall_init",
 * "MPIX_Alltoall_init (Open MPI pcollreq)"), or nullptr when the MPI library has none. */
const char *mpia_bench_system_pcoll_name();

/* Create the system's persistent all-to-all (inactive, start with MPI_Start). Returns the
 * MPI error code; MPI_ERR_UNSUPPORTED_OPERATION when mpia_bench_system_pcoll_name() is null. */
int mpia_bench_system_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm, MPI_Info info, MPI_Request *request);

/* The same for the persistent all-to-all-v (MPI-4 MPI_Alltoallv_init, or Open MPI 4.x's
 * MPIX_Alltoallv_init from the pcollreq extension): its name or nullptr, and the init call. */
const char *mpia_bench_system_pcoll_v_name();
int mpia_bench_system_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                     const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                     const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request);

#endif
