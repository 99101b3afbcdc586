// What the library keeps per user communicator, as an MPI attribute (attach.hpp): a private
// duplicate with the tags of its live requests (private_comm.hpp), whether its ranks' settings
// agree, per-communicator algorithm choices, the plan cache of blocking calls, locality and
// topology. Freed by the attribute's delete callback: MPI_Comm_free, or MPI_Finalize for every
// communicator still alive then.
#pragma once

#include "collective/registry.hpp"
#include "operation/args.hpp"
#include "operation/private_comm.hpp"

#include <mpi.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace mpia {

struct BlockingCache;
struct Locality;
struct NeighborTopology;

struct CommState {
  MPI_Comm user = MPI_COMM_NULL;
  std::shared_ptr<PrivateComm> comm;
  int rank = 0;
  int size = 1;
  // Agreed at the first call: MPI_ERR_ARG (and why) when the ranks' settings differ. Every call
  // on the communicator then fails with it, on every rank.
  int settings_error = MPI_SUCCESS;
  std::string settings_error_what;
  // What the library keeps per collective.
  struct PerCollective {
    // MPIX_Comm_set_algorithm's choice ("" = the environment's), agreed.
    std::string algorithm;
    // What the last blocking call ran (MPIX_REPORT only): mpia_private_comm_last_call.
    std::string last_algorithm;
    bool last_hit = false;
  };
  std::array<PerCollective, kCollectives> per;
  // The selections, plans, plan cache and trials of blocking calls (blocking_cache.hpp), made by
  // the first blocking call.
  std::shared_ptr<BlockingCache> blocking;
  // Node map, package and NUMA of every rank: computed by the first call that needs it.
  std::unique_ptr<Locality> locality;
  // The process topology's neighbors, read at the first neighbor call (a topology never
  // changes); an MPIX_Topo's state has its own from the start.
  std::shared_ptr<const NeighborTopology> topology;
  // A communicator with MPI's own process topology for the "system" neighbor algorithm of an
  // MPIX_Topo (whose private communicator has none): created collectively by the first call
  // that runs "system" (neighbor_topology.cpp).
  std::shared_ptr<PrivateComm> graph;
  // A state over the user's own communicator, for one nonblocking call that may not attach
  // (attach.hpp: borrowed_state): it runs nothing but the MPI library's own call.
  bool borrowed = false;
  ~CommState();

  // Throws the settings disagreement, if any.
  void check_settings() const;
  // The communicator's default algorithm text for c: MPIX_Comm_set_algorithm's, else the
  // environment's ("" = auto).
  const std::string& default_algorithm(Collective c) const;
};

// The cached locality, or nullptr if nothing has needed it yet (local).
const Locality* cached_locality(const CommState& state);

}  // namespace mpia
