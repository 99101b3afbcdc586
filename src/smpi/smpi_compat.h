/* src/smpi/smpi_compat.h -- force-included into every file of the SMPI build
 * (CMakePresets.json, preset "smpi": -include in CMAKE_C_FLAGS / CMAKE_CXX_FLAGS). Stand-ins for
 * the MPI calls the library and mpia_bench use that SimGrid 3.32's SMPI declares but does not
 * implement (they abort the whole simulation with "Not yet implemented"), gets wrong, or makes
 * flat. Nothing else is changed; without SMPI this file is never seen.
 *
 *  - MPI_Comm_idup (the library's private duplicate of a user communicator,
 *    src/operation/attach.cpp): a blocking MPI_Comm_dup and a null request, which every
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
 *    are taken after init, so no simulated time changes. MPI_Ireduce_scatter_block (MPIX_Topo's
 *    edge check) likewise.
 *
 * Process topologies (neighbor collectives, issue 20). SMPI 3.32 implements MPI_Cart_create,
 * MPI_Cart_shift and MPI_Cartdim_get, but aborts in MPI_Topo_test (which every neighbor
 * collective calls first), MPI_Dist_graph_create_adjacent, MPI_Dist_graph_neighbors(_count) and
 * MPI_(I)neighbor_alltoall(v). The stand-ins keep a record of the topology as an attribute of the
 * communicators they make (copied by MPI_Comm_dup); they are defined once per rank in the
 * library (src/smpi/compat.cpp, exported as MPIA_Smpi_*), so that the benchmark and the
 * library find one record whichever module made the communicator:
 *  - MPI_Cart_create, MPI_Cart_sub: SMPI's own, plus the record (kind MPI_CART).
 *  - MPI_Dist_graph_create_adjacent: a duplicate of comm_old with the record of the lists
 *    (weights kept); reorder is ignored (as reorder = 0); ranks out of range: MPI_ERR_ARG.
 *  - MPI_Topo_test: the record's kind, else MPI_UNDEFINED (not SMPI's MPI_Cartdim_get, which
 *    warns on stderr for every communicator without a topology).
 *  - MPI_Dist_graph_neighbors_count, MPI_Dist_graph_neighbors: from the record.
 *  - MPI_Neighbor_alltoall(v): MPI_Irecv from every source, MPI_Isend to every destination,
 *    MPI_Waitall, on a duplicate the first call makes (never the user's traffic): the flat
 *    exchange of MPICH's and Open MPI's default neighbor algorithms, paying SMPI's per-message
 *    send overhead like SMPI's own collectives, and the machine's receive overhead (smpi/or,
 *    which SMPI charges to none of these receives) as the library's own receives do
 *    (mpia_bench's MPI_Neighbor_alltoallv baseline, the library's "system"). Cartesian
 *    messages are matched by direction, so periodic dimensions of size 1 and 2 follow MPI-4.1
 *    (receive block 2d from the -1 neighbor's block 2d+1).
 *  - MPI_Ineighbor_alltoall(v): that blocking exchange and a null request.
 * MPI_Graph_create is not implemented by SMPI and has no stand-in. */
#ifndef MPIA_SMPI_COMPAT_H
#define MPIA_SMPI_COMPAT_H

#include <mpi.h>

#if defined(SMPI_H)
static inline int mpia_smpi_comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return PMPI_Comm_dup(comm, newcomm);
}
#define MPI_Comm_idup mpia_smpi_comm_idup

static inline int mpia_smpi_iallreduce(const void* sendbuf, void* recvbuf, int count,
                                       MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                       MPI_Request* request) {
  if (sendbuf != MPI_IN_PLACE)
    return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  *request = MPI_REQUEST_NULL;
  return MPI_Allreduce(MPI_IN_PLACE, recvbuf, count, type, op, comm);
}
#define MPI_Iallreduce mpia_smpi_iallreduce

static inline int mpia_smpi_iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
#define MPI_Iallgather mpia_smpi_iallgather

static inline int mpia_smpi_ibarrier(MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Barrier(comm);
}
#define MPI_Ibarrier mpia_smpi_ibarrier

static inline int mpia_smpi_ireduce_scatter_block(const void* sendbuf, void* recvbuf, int count,
                                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                                  MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm);
}
#define MPI_Ireduce_scatter_block mpia_smpi_ireduce_scatter_block

#ifdef __cplusplus
extern "C" {
#endif
int MPIA_Smpi_cart_create(MPI_Comm comm, int ndims, const int* dims, const int* periods,
                          int reorder, MPI_Comm* cart);
int MPIA_Smpi_cart_sub(MPI_Comm comm, const int* remain, MPI_Comm* sub);
int MPIA_Smpi_dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int* sources,
                                         const int* sweights, int outdegree,
                                         const int* destinations, const int* dweights,
                                         MPI_Info info, int reorder, MPI_Comm* graph);
int MPIA_Smpi_topo_test(MPI_Comm comm, int* status);
int MPIA_Smpi_dist_graph_neighbors_count(MPI_Comm comm, int* indegree, int* outdegree,
                                         int* weighted);
int MPIA_Smpi_dist_graph_neighbors(MPI_Comm comm, int maxindegree, int* sources, int* sweights,
                                   int maxoutdegree, int* destinations, int* dweights);
int MPIA_Smpi_neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Smpi_neighbor_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls,
                                 MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                                 const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Smpi_ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Request* request);
int MPIA_Smpi_ineighbor_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls,
                                  MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                                  const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                                  MPI_Request* request);
#ifdef __cplusplus
}
#endif
#define MPI_Cart_create MPIA_Smpi_cart_create
#define MPI_Cart_sub MPIA_Smpi_cart_sub
#define MPI_Dist_graph_create_adjacent MPIA_Smpi_dist_graph_create_adjacent
#define MPI_Topo_test MPIA_Smpi_topo_test
#define MPI_Dist_graph_neighbors_count MPIA_Smpi_dist_graph_neighbors_count
#define MPI_Dist_graph_neighbors MPIA_Smpi_dist_graph_neighbors
#define MPI_Neighbor_alltoall MPIA_Smpi_neighbor_alltoall
#define MPI_Neighbor_alltoallv MPIA_Smpi_neighbor_alltoallv
#define MPI_Ineighbor_alltoall MPIA_Smpi_ineighbor_alltoall
#define MPI_Ineighbor_alltoallv MPIA_Smpi_ineighbor_alltoallv
/* The library calls the MPI library's collectives by their PMPI_ names (operation/system.cpp):
 * here they are the same stand-ins. */
#define PMPI_Neighbor_alltoall MPIA_Smpi_neighbor_alltoall
#define PMPI_Neighbor_alltoallv MPIA_Smpi_neighbor_alltoallv
#define PMPI_Ineighbor_alltoall MPIA_Smpi_ineighbor_alltoall
#define PMPI_Ineighbor_alltoallv MPIA_Smpi_ineighbor_alltoallv
#endif

#endif
