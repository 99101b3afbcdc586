// The library's state on a communicator: made at the first call (collective: a private
// duplicate, the settings agreed), kept as an MPI attribute, freed with the communicator or at
// MPI_Finalize, where the library's other process-wide objects go too. And what a state computes
// collectively the first time it is needed: its locality.
#pragma once

#include "operation/comm_state.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace mpia {

// Collective on the first call for a communicator: duplicates it and agrees on the settings,
// driving running operations while it waits.
CommState& comm_state(MPI_Comm user);
// The state of user if it has one (no MPI call but the attribute lookup), else nullptr.
CommState* find_comm_state(MPI_Comm user);

// An attach that does not wait, for a nonblocking call that is the library's first on its
// communicator (a rank must not wait for its peers inside a nonblocking call: they may reach
// theirs only after a message this rank sends next). defer_on returns the pending attach a
// nonblocking call must wait for, with the call's ticket, or nullptr when it may run at once:
// attached says whether the communicator has its state; without one the attach begins here
// (MPI_Comm_idup: collective, in call order like any nonblocking collective). Once a call was
// deferred, the communicator's later nonblocking calls are deferred too until every deferred
// call was made (they take sequence numbers, hence tags, in call order on every rank).
// attach_progress advances the attach -- the duplicate, then the settings' allreduce on it --
// and returns the installed state once done, else nullptr (never waits; another thread advancing
// it: nullptr too); take_turn says whether the attach is done and it is ticket's turn (and serves
// the next). comm_state completes a pending attach of its communicator.
// The user may free the communicator right after the call: the deferred calls still run, and
// attach_comm (the private communicator to be) tells their requests so (user_freed).
struct PendingAttach;
// Whether a nonblocking call may begin the attach of user (not yet attached) at all. Not on Open
// MPI, for a communicator of several ranks: its MPI_Comm_idup agrees on the new communicator's
// context id by rounds of MPI_Iallreduce on the parent, each after the last completed, posted
// from its progress engine; a nonblocking collective the application starts on the parent
// meanwhile then comes between two rounds on some ranks and not on others, and the collectives'
// messages cross (Open MPI 4.1: truncation errors, hangs; test/c/idup_overlap.c shows it
// without this library). There such a call is handed to the MPI library on the user's own
// communicator, in call order (borrowed_state); the first blocking or persistent call attaches.
bool nonblocking_may_attach(MPI_Comm user);
// A state over user itself, borrowed (no duplicate, no agreed settings: nothing but the MPI
// library's own call runs on it) for one nonblocking call that may not attach.
std::unique_ptr<CommState> borrowed_state(MPI_Comm user);
std::shared_ptr<PendingAttach> defer_on(MPI_Comm user, bool attached, std::uint64_t* ticket);
std::shared_ptr<PrivateComm> attach_comm(const PendingAttach& p);
CommState* attach_progress(PendingAttach& p);
bool take_turn(PendingAttach& p, std::uint64_t ticket);

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

// MPIX_Comm_locality_split once its arguments are agreed: comm split into the ranks of this
// rank's node (by_node) or those of its local rank, one per node; ordered by rank. Collective.
void comm_locality_split(CommState& state, MPI_Comm comm, bool by_node, MPI_Comm* newcomm);

}  // namespace mpia
