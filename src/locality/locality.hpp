// Locality of a communicator: node of every rank (MPI_Comm_split_type, or the MPIX_LOCALITY
// override), and below the node the package and NUMA domain of every rank's CPU binding
// (hwloc). Computed once per communicator and cached in its CommState.
#pragma once

#include "locality/node_map.hpp"

#include <string>
#include <vector>

namespace mpia {

struct CommState;

struct Locality {
  NodeMap map;
  std::vector<int> package_of, numa_of;  // per rank; -1 = not bound inside one (or no hwloc)
  std::string source;                    // "MPIX_LOCALITY" or "MPI_Comm_split_type"
};

// Collective over the communicator the first time (one allgather; an MPI_Comm_split_type
// without the override), then cached. A malformed MPIX_LOCALITY throws MPI_ERR_ARG on every
// rank before any communication.
const Locality& comm_locality(CommState& state);

// The cached locality, or nullptr if nothing has needed it yet (local).
const Locality* cached_locality(const CommState& state);

}  // namespace mpia
