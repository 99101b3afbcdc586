// The library's state on a communicator: made at the first call (collective: a private
// duplicate, the settings agreed), kept as an MPI attribute, freed with the communicator or at
// MPI_Finalize, where the library's other process-wide objects go too. And what a state computes
// collectively the first time it is needed: its locality.
#pragma once

#include "operation/comm_state.hpp"

#include <mpi.h>

#include <memory>

namespace mpia {

// Collective on the first call for a communicator: duplicates it and agrees on the settings,
// driving running operations while it waits.
CommState& comm_state(MPI_Comm user);
// The state comm_state returned last on this thread for user, while no state has been deleted
// since; else nullptr. A hit costs no MPI call: blocking calls look their state up on every call.
CommState* last_comm_state(MPI_Comm user);

// A state of its own over the ranks of parent, attached to no communicator (an MPIX_Topo's; its
// owner deletes it): a new private duplicate of parent's, parent's agreed settings, algorithm
// choices and locality (when computed). Collective over parent.
std::unique_ptr<CommState> derived_comm_state(const CommState& parent);

// A private duplicate of comm (collective over it; nonblocking, so that a rank whose peers still
// wait for it on a running request drives that request meanwhile). Its traffic can never match
// the user's, not even MPI_ANY_SOURCE/MPI_ANY_TAG receives.
std::shared_ptr<PrivateComm> private_duplicate(MPI_Comm comm);

// The communicator's locality, computed the first time (collective; see locality/), else
// cached.
const Locality& comm_locality(CommState& state);

}  // namespace mpia
