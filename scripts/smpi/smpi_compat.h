/* scripts/smpi/smpi_compat.h -- force-included into every file of the SMPI build (CMakePresets.json,
 * preset "smpi": -include in CMAKE_C_FLAGS / CMAKE_CXX_FLAGS). Stand-ins for the MPI calls the
 * library uses that SimGrid 3.32's SMPI declares but does not implement (they abort the whole
 * simulation with "Not yet implemented"). Nothing else is changed; without SMPI this file is
 * never seen.
 *
 *  - MPI_Comm_idup (the library's private duplicate of a user communicator,
 *    src/operation/comm_state.cpp): a blocking MPI_Comm_dup and a null request, which every
 *    MPI_Wait / MPI_Test completes at once. The nonblocking dup only matters when a rank must
 *    drive other requests while it waits; in a simulation every rank reaches its dup anyway. */
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
#endif

#endif
