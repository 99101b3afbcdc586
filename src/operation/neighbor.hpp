// MPIX_Neighbor_alltoallv(_init): argument checks against the communicator's topology
// (neighbor_topology.hpp), size agreement along the edges, and building the operation a request
// runs.
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

std::unique_ptr<Operation> neighbor_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                         bool request_given);
void neighbor_blocking(CommState& st, const AlltoallvArgs& a);
// A nonblocking call (MPIX_Ineighbor_alltoall(v,w)): its plan, started (pipeline.hpp,
// nonblocking.hpp).
std::unique_ptr<Operation> neighbor_nonblocking(CommState& st, const AlltoallvArgs& a);

}  // namespace mpia
