// Locality of a communicator: node of every rank (MPI_Comm_split_type, or the MPIX_LOCALITY
// override), and below the node the package and NUMA domain of every rank's CPU binding
// (hwloc). Computed once per communicator by the operation layer, which caches it; this module
// knows nothing of that layer (it is handed the way to wait).
#pragma once

#include "locality/node_map.hpp"

#include <mpi.h>

#include <string>
#include <vector>

namespace mpia {

struct Locality {
  NodeMap map;
  std::vector<int> package_of, numa_of;  // per rank; -1 = not bound inside one (or no hwloc)
  std::string source;                    // "MPIX_LOCALITY" or "MPI_Comm_split_type"
};

// How the caller waits for a nonblocking MPI request (it may have other work to drive
// meanwhile); throws on failure.
using CompleteRequest = void (*)(MPI_Request& request, const char* what);

// Collective over comm (rank and size given): one allgather, plus MPI_Comm_split_type when
// spec (the value of MPIX_LOCALITY) is empty. A malformed spec throws MPI_ERR_ARG on every
// rank before any communication. Every wait goes through complete; the blocking split is
// entered only after a nonblocking barrier has completed.
Locality compute_locality(MPI_Comm comm, int rank, int size, const std::string& spec,
                          CompleteRequest complete);

}  // namespace mpia
