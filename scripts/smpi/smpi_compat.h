/* scripts/smpi/smpi_compat.h -- force-included into every file of the SMPI build (CMakePresets.json,
 * preset "smpi": -include in CMAKE_C_FLAGS / CMAKE_CXX_FLAGS). Stand-ins for the MPI calls the
 * library uses that SimGrid 3.32's SMPI declares but does not implement (they abort the whole
 * simulation with "Not yet implemented"). Nothing else is changed; without SMPI this file is
 * never seen.
 *
 *  - MPI_Comm_idup (the library's private duplicate of a user communicator,
 *    src/operation/comm_state.cpp): a blocking MPI_Comm_dup and a null request, which every
 *    MPI_Wait / MPI_Test completes at once. The nonblocking dup only matters when a rank must
 *    drive other requests while it waits; in a simulation every rank reaches its dup anyway.
 *  - MPI_Iallreduce in place (the init protocol's agreement): SMPI reads the MPI_IN_PLACE
 *    marker as the send buffer (scripts/smpi/README.md); the blocking call and a null request.
 *  - MPI_Iallgather and MPI_Ibarrier (the locality exchange, the system path): the blocking
 *    call and a null request. SMPI implements its nonblocking collectives as flat exchanges --
 *    every rank with every rank, P(P-1) messages -- whatever smpi/allgather and the like say;
 *    at P = 1024 the library's one MPI_Iallgather of 12 bytes per rank is a million simulated
 *    messages, and a run did not get past it in 12 minutes (the flow solver; P = 256 is 65,280
 *    messages, seconds). The blocking ones run the log-round algorithms of platform.env. Times
 *    are taken after init, so no simulated time changes. */
#ifndef MPIA_SMPI_COMPAT_H
#define MPIA_SMPI_COMPAT_H

#include <mpi.h>

#if defined(SMPI_H)
static inline int mpia_smpi_comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request)
{
  *request = MPI_REQUEST_NULL;
  return MPI_Comm_dup(comm, newcomm);
}
#define MPI_Comm_idup mpia_smpi_comm_idup

static inline int mpia_smpi_iallreduce(const void* sendbuf, void* recvbuf, int count,
                                       MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                       MPI_Request* request)
{
  if (sendbuf != MPI_IN_PLACE) return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  *request = MPI_REQUEST_NULL;
  return MPI_Allreduce(MPI_IN_PLACE, recvbuf, count, type, op, comm);
}
#define MPI_Iallreduce mpia_smpi_iallreduce

static inline int mpia_smpi_iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Request* request)
{
  *request = MPI_REQUEST_NULL;
  return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
#define MPI_Iallgather mpia_smpi_iallgather

static inline int mpia_smpi_ibarrier(MPI_Comm comm, MPI_Request* request)
{
  *request = MPI_REQUEST_NULL;
  return MPI_Barrier(comm);
}
#define MPI_Ibarrier mpia_smpi_ibarrier
#endif

#endif
