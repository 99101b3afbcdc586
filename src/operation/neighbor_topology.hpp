// The neighbors of a process topology as the neighbor collectives take them: read from the
// communicator's MPI topology (Cartesian, graph, distributed graph) or given by an MPIX_Topo
// (topo.hpp), with the keys that pair a rank's edges with its peers' (collective/neighbor/
// builders.hpp), and the communicator MPI's own neighbor collective ("system") runs on.
#pragma once

#include "operation/comm_state.hpp"
#include "operation/private_comm.hpp"

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

}  // namespace mpia
