// MPIX_Neighbor_alltoallv(_init): the communicator's topology, argument checks, size
// agreement along the edges, and building the operation a request runs.
#pragma once

#include "collective/neighbor/builders.hpp"
#include "collective/registry.hpp"
#include "operation/alltoallv.hpp"
#include "operation/comm_state.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <memory>
#include <vector>

namespace mpia {

// The neighbors of this rank in MPI's order, with the matching keys of builders.hpp.
struct NeighborTopology {
  int kind = MPI_UNDEFINED;  // MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH
  std::vector<int> sources, destinations;
  std::vector<int> recv_key, send_key;
  // The library's own (an MPIX_Topo): no communicator carries it as an MPI topology.
  bool library = false;
};

// MPI_ERR_TOPOLOGY when comm has none.
NeighborTopology neighbor_topology(MPI_Comm comm);

// The communicator's topology, read the first time (MPI_ERR_TOPOLOGY when it has none).
const NeighborTopology& comm_topology(CommState& st);

// An MPIX_Topo's adjacency: a distributed graph, duplicate edges paired in order (no checks).
NeighborTopology graph_topology(std::vector<int> sources, std::vector<int> destinations);

// Where the "system" algorithm runs: the private duplicate, which keeps the communicator's MPI
// topology; for the library's own topology a distributed graph communicator made from it at the
// first call (collective: every rank runs "system" at the same call).
std::shared_ptr<PrivateComm> neighbor_system_comm(CommState& st);

std::unique_ptr<Operation> neighbor_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                         bool request_given);
void neighbor_blocking(CommState& st, const AlltoallvArgs& a);
// A nonblocking call (MPIX_Ineighbor_alltoall(v,w)): its plan, started (pipeline.hpp,
// nonblocking.hpp).
std::unique_ptr<Operation> neighbor_nonblocking(CommState& st, const AlltoallvArgs& a);

}  // namespace mpia
