// What the library caches per user communicator, as an MPI attribute: a private duplicate
// (its traffic can never match the user's, not even MPI_ANY_SOURCE/MPI_ANY_TAG receives),
// the tag allocator that keeps concurrently active plans apart, and the plan cache of blocking
// calls. Freed by the attribute's delete callback (MPI_Comm_free, or MPI_Finalize for
// MPI_COMM_WORLD through an MPI_COMM_SELF attribute).
#pragma once

#include "collective/registry.hpp"

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

namespace mpia {

class Operation;
struct Locality;
struct NeighborTopology;

// The private duplicate. Plans hold it by shared_ptr so it outlives the user's MPI_Comm_free
// while a persistent request still uses it.
class PrivateComm {
 public:
  explicit PrivateComm(MPI_Comm user);
  ~PrivateComm();
  PrivateComm(const PrivateComm&) = delete;
  PrivateComm& operator=(const PrivateComm&) = delete;
  MPI_Comm get() const { return comm_; }
  // Set when the user frees their communicator: errors of requests that outlive it are then
  // raised on MPI_COMM_SELF.
  bool user_freed = false;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

struct CommState {
  std::shared_ptr<PrivateComm> comm;
  int rank = 0;
  int size = 1;
  int tag_ub = 32767;
  int next_tag = 1;
  // Blocking calls all use tag 0 (they never overlap one another); each persistent plan takes
  // the next tag in 1..tag_ub. Collective calls are made in the same order on every rank, so
  // every rank hands out the same tag to the same plan.
  int allocate_tag();
  // Blocking calls. The selection resolved for the last environment value and key (block
  // size, or auto's agreed statistics) is kept, so a repeated call parses nothing and runs no
  // model; and the last call's plan is kept with the raw argument words it was built for, so
  // a repeated call builds nothing. Comparing reuses call_words' capacity: no allocation.
  struct Memo {
    int collective = -1;
    bool env_set = false;
    std::string env;
    std::vector<std::int64_t> key;
    Selection selection;
  } memo;
  std::unique_ptr<Operation> cached;
  // Node map, package and NUMA of every rank: computed by the first call that needs it
  // (locality/locality.cpp).
  std::unique_ptr<Locality> locality;
  // The process topology's neighbors, read at the first neighbor call (a topology never
  // changes).
  std::unique_ptr<NeighborTopology> topology;
  std::vector<std::int64_t> cached_words, call_words;
  ~CommState();
};

// Collective on the first call for a communicator (it duplicates it).
CommState& comm_state(MPI_Comm user);

}  // namespace mpia
