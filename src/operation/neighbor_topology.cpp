#include "operation/neighbor_topology.hpp"

#include "operation/system.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace mpia {

namespace {

// Graph keys: the rank of each edge among this rank's edges to (from) the same peer.
std::vector<int> occurrence_keys(const std::vector<int>& peers) {
  std::map<int, int> seen;
  std::vector<int> key(peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) key[k] = seen[peers[k]]++;
  return key;
}

}  // namespace

NeighborTopology neighbor_topology(MPI_Comm comm) {
  NeighborTopology t;
  MPIA_CHECK(MPI_Topo_test(comm, &t.kind));
  if (t.kind == MPI_CART) {
    int ndims = 0;
    MPIA_CHECK(MPI_Cartdim_get(comm, &ndims));
    for (int d = 0; d < ndims; ++d) {
      int minus = MPI_PROC_NULL, plus = MPI_PROC_NULL;
      MPIA_CHECK(MPI_Cart_shift(comm, d, 1, &minus, &plus));
      // Blocks 2d (the -1 neighbor) and 2d+1 (the +1 neighbor), sent and received alike.
      t.sources.push_back(minus), t.sources.push_back(plus);
      t.destinations.push_back(minus), t.destinations.push_back(plus);
      // Direction of travel: receive block 2d comes travelling +1 (key 2d), block 2d+1
      // travelling -1 (key 2d+1); send block 2d travels -1, block 2d+1 travels +1.
      t.recv_key.push_back(2 * d), t.recv_key.push_back(2 * d + 1);
      t.send_key.push_back(2 * d + 1), t.send_key.push_back(2 * d);
    }
    return t;
  }
  if (t.kind == MPI_GRAPH) {
    int rank = 0, n = 0;
    MPIA_CHECK(MPI_Comm_rank(comm, &rank));
    MPIA_CHECK(MPI_Graph_neighbors_count(comm, rank, &n));
    t.sources.resize(n);
    if (n > 0) MPIA_CHECK(MPI_Graph_neighbors(comm, rank, n, t.sources.data()));
    t.destinations = t.sources;
  } else if (t.kind == MPI_DIST_GRAPH) {
    int indeg = 0, outdeg = 0, weighted = 0;
    MPIA_CHECK(MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted));
    t.sources.resize(indeg);
    t.destinations.resize(outdeg);
    // Weights are not needed, but MPI requires arrays for them when the graph is weighted.
    std::vector<int> sw(std::max(indeg, 1)), dw(std::max(outdeg, 1));
    MPIA_CHECK(MPI_Dist_graph_neighbors(
        comm, indeg, t.sources.data(), weighted ? sw.data() : MPI_UNWEIGHTED, outdeg,
        t.destinations.data(), weighted ? dw.data() : MPI_UNWEIGHTED));
  } else {
    fail(MPI_ERR_TOPOLOGY,
         "mpi-advance: neighbor all-to-all on a communicator without a "
         "process topology (Cartesian, graph or distributed graph)");
  }
  t.recv_key = occurrence_keys(t.sources);
  t.send_key = occurrence_keys(t.destinations);
  return t;
}

const NeighborTopology& comm_topology(CommState& st) {
  if (!st.topology)
    st.topology = std::make_shared<const NeighborTopology>(neighbor_topology(st.user));
  return *st.topology;
}

NeighborTopology graph_topology(std::vector<int> sources, std::vector<int> destinations) {
  NeighborTopology t;
  t.kind = MPI_DIST_GRAPH;
  t.library = true;
  t.sources = std::move(sources);
  t.destinations = std::move(destinations);
  t.recv_key = occurrence_keys(t.sources);
  t.send_key = occurrence_keys(t.destinations);
  return t;
}

std::shared_ptr<PrivateComm> neighbor_system_comm(CommState& st) {
  const NeighborTopology& t = comm_topology(st);
  if (!t.library) return st.comm;
  if (!st.graph) {
    // MPI wants arrays even for a zero degree.
    const int none = 0;
    MPI_Comm g = MPI_COMM_NULL;
    // The graph is made from a communicator without a topology: Open MPI 5 (5.0.6 to 5.0.10 at
    // least, open-mpi/ompi#14438) gives a graph made from a Cartesian or graph communicator both
    // kinds, and its neighborhood collectives then read the old kind's data (a segfault in
    // MPI_Neighbor_alltoallv_init). MPI_Comm_split keeps no topology, on every MPI.
    MPI_Comm base = st.comm->get(), plain = MPI_COMM_NULL;
    int kind = MPI_UNDEFINED;
    MPIA_CHECK(MPI_Topo_test(base, &kind));
    run_system(base, [&] {
      if (kind != MPI_UNDEFINED) {
        if (int rc = MPI_Comm_split(base, 0, st.rank, &plain)) return rc;
      }
      const int rc = MPI_Dist_graph_create_adjacent(
          plain != MPI_COMM_NULL ? plain : base, int(t.sources.size()),
          t.sources.empty() ? &none : t.sources.data(), MPI_UNWEIGHTED, int(t.destinations.size()),
          t.destinations.empty() ? &none : t.destinations.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
          &g);
      if (plain != MPI_COMM_NULL) MPI_Comm_free(&plain);
      return rc;
    });
    st.graph = std::make_shared<PrivateComm>(g, "mpi-advance private graph");
  }
  return st.graph;
}

}  // namespace mpia
