// MPIX_Topo: a neighborhood (a distributed graph) without a communicator. It owns a state of its
// own (derived_comm_state: a private duplicate of its communicator's, the agreed settings, a
// plan cache, locality) whose topology is the object's edge lists, so MPIX_Neighbor_alltoallv_topo
// runs the same pipeline, algorithms and caches as MPIX_Neighbor_alltoallv on a distributed graph
// communicator. Lifetime: a request made from it holds what it runs on (the private duplicate,
// its tag, the schedule, the "system" algorithm's graph communicator) by reference count, so
// freeing the object while requests use them is legal and they run on; the object also outlives
// the user's MPI_Comm_free of its communicator (errors are then raised on MPI_COMM_SELF).
#pragma once

#include "operation/comm_state.hpp"

#include <mpi.h>

#include <memory>

struct MPIX_Topo_s {
  MPI_Comm user = MPI_COMM_NULL;  // the communicator it was made over: errors are raised on it
  // The private duplicate of the user's communicator: tells whether the user has freed it.
  std::shared_ptr<mpia::PrivateComm> user_private;
  std::unique_ptr<mpia::CommState> state;  // topology set at creation
};

namespace mpia {

// MPIX_Topo_create after state_of(comm): collective over parent. Argument errors (negative
// degrees, NULL arrays, ranks outside the communicator -- MPI_PROC_NULL included, as for
// MPI_Dist_graph_create_adjacent --, a bad "mpix_algorithm"), and edge lists that do not match
// across ranks (an edge s->d in s's destinations must be in d's sources as often) fail with the
// same class on every rank: MPI_ERR_ARG (MPI_ERR_INFO_VALUE for the info value).
std::unique_ptr<MPIX_Topo_s> topo_create(CommState& parent, MPI_Comm user, int indegree,
                                         const int sources[], int outdegree,
                                         const int destinations[], MPI_Info info, bool topo_given);

// Where a topology object's errors go: its communicator, MPI_COMM_SELF once the user freed that
// (or for MPIX_TOPO_NULL).
MPI_Comm topo_error_comm(const MPIX_Topo_s* topo);

// The object's state; MPI_ERR_TOPOLOGY for MPIX_TOPO_NULL.
CommState& topo_state(MPIX_Topo_s* topo);

// Deletes the object (its requests run on; after MPI_Finalize no MPI object is freed).
void topo_free(MPIX_Topo_s* topo);

}  // namespace mpia
