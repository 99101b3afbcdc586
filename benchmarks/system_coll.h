/*
 * system_coll.h -- the MPI library's own persistent collectives, seen from the benchmarks.
 *
 * Implemented in system_coll.cpp, a translation unit that includes <mpi.h> (and Open MPI's
 * <mpi-ext.h>) but never mpi_advance.h: that header maps MPIX_Alltoall_init (and the v and
 * neighbor ones) onto our own symbols, while Open MPI exports its own with MPI_Request
 * signatures.
 *
 *   MPI-4 library (MPICH 4, Open MPI 5)  MPI_Alltoall_init, MPI_Alltoallv_init,
 *                                        MPI_Neighbor_alltoallv_init
 *   Open MPI 4.x with the pcollreq ext.  MPIX_Alltoall_init, ... (<mpi-ext.h>)
 *   anything else                        none (the benchmark skips the variant)
 *
 * Each *_name() returns the name of the call this build makes, or nullptr when the library has
 * none; each init returns the MPI error code (MPI_ERR_UNSUPPORTED_OPERATION when it has none)
 * and creates an inactive request (start with MPI_Start).
 */
#ifndef MPIA_BENCH_SYSTEM_COLL_H
#define MPIA_BENCH_SYSTEM_COLL_H

#include <mpi.h>

const char* mpia_bench_system_pcoll_name();
int mpia_bench_system_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm, MPI_Info info, MPI_Request* request);

const char* mpia_bench_system_pcoll_v_name();
int mpia_bench_system_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                     const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request* request);

const char* mpia_bench_system_neighbor_name();
int mpia_bench_system_neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                              const int sdispls[], MPI_Datatype sendtype,
                                              void* recvbuf, const int recvcounts[],
                                              const int rdispls[], MPI_Datatype recvtype,
                                              MPI_Comm comm, MPI_Info info, MPI_Request* request);

#endif
