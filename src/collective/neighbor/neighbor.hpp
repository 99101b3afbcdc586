// MPIX_Neighbor_alltoallv(_init): the communicator's topology, argument checks, size
// agreement along the edges, and building the operation a request runs.
#pragma once

#include "collective/alltoallv/alltoallv.hpp"
#include "collective/neighbor/builders.hpp"
#include "collective/registry.hpp"
#include "persistent/comm_state.hpp"
#include "persistent/request.hpp"

#include <mpi.h>

#include <memory>
#include <vector>

namespace mpia {

// The neighbors of this rank in MPI's order, with the matching keys of builders.hpp.
struct NeighborTopology {
  int kind = MPI_UNDEFINED;  // MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH
  std::vector<int> sources, destinations;
  std::vector<int> recv_key, send_key;
};

// MPI_ERR_TOPOLOGY when comm has none.
NeighborTopology neighbor_topology(MPI_Comm comm);

// Local argument checks; fills the packed bytes per block.
void check_neighbor(const AlltoallvArgs& a, const NeighborTopology& t,
                    std::vector<std::int64_t>& send_bytes, std::vector<std::int64_t>& recv_bytes);

// Sends every out-edge's byte count along the edge (point-to-point on comm, posted in key
// order like the data, so degenerate Cartesian dimensions pair up correctly) and compares
// what arrives with this rank's receive sizes. Returns the first mismatch as an error
// message (empty when all agree). Collective over the topology's edges.
std::string check_edge_sizes(const NeighborTopology& t, const std::vector<std::int64_t>& send_bytes,
                             const std::vector<std::int64_t>& recv_bytes, MPI_Comm comm, int tag);

std::unique_ptr<Operation> make_neighbor(const AlltoallvArgs& a, const Selection& sel,
                                         CommState& state, const NeighborTopology& t, int tag,
                                         std::vector<std::int64_t> send_bytes,
                                         std::vector<std::int64_t> recv_bytes);

// The system's own MPI_Neighbor_alltoallv (api/system_backend.cpp), on the private duplicate.
std::unique_ptr<Operation> make_system_neighbor(const AlltoallvArgs& a, int indegree,
                                                int outdegree, std::shared_ptr<PrivateComm> comm);

}  // namespace mpia
