#include "collective/neighbor/neighbor.hpp"

#include "locality/locality.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <map>
#include <string>

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
    MPIA_CHECK(MPI_Dist_graph_neighbors(comm, indeg, t.sources.data(),
                                        weighted ? sw.data() : MPI_UNWEIGHTED, outdeg,
                                        t.destinations.data(),
                                        weighted ? dw.data() : MPI_UNWEIGHTED));
  } else {
    fail(MPI_ERR_TOPOLOGY, "mpi-advance: neighbor all-to-all on a communicator without a "
                           "process topology (Cartesian, graph or distributed graph)");
  }
  t.recv_key = occurrence_keys(t.sources);
  t.send_key = occurrence_keys(t.destinations);
  return t;
}

void check_neighbor(const AlltoallvArgs& a, const NeighborTopology& t,
                    std::vector<std::int64_t>& send_bytes, std::vector<std::int64_t>& recv_bytes) {
  if (a.sendbuf == MPI_IN_PLACE || a.recvbuf == MPI_IN_PLACE)
    fail(MPI_ERR_BUFFER, "mpi-advance: MPI_IN_PLACE is not allowed in neighborhood collectives");
  check_blocks(a.recvbuf, a.recvcounts, a.rdispls, a.recvtype, int(t.sources.size()), "recv",
               recv_bytes);
  check_blocks(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, int(t.destinations.size()),
               "send", send_bytes);
}

std::string check_edge_sizes(const NeighborTopology& t, const std::vector<std::int64_t>& send_bytes,
                             const std::vector<std::int64_t>& recv_bytes, MPI_Comm comm, int tag) {
  NeighborShape s;
  s.sources = t.sources, s.destinations = t.destinations;
  s.recv_key = t.recv_key, s.send_key = t.send_key;
  // Every edge carries one value, whatever its size.
  s.send_bytes.assign(t.destinations.size(), 1);
  s.recv_bytes.assign(t.sources.size(), 1);
  const Schedule sch = build_neighbor_direct(s);
  std::vector<std::int64_t> got(t.sources.size(), -1);
  std::vector<MPI_Request> reqs;
  for (const Exchange& x : sch.rounds[0].exchanges) {
    if (x.recv.active()) {
      reqs.emplace_back();
      MPIA_CHECK(MPI_Irecv(&got[x.recv.pieces[0].block], 1, MPI_INT64_T, x.recv.peer, tag, comm,
                           &reqs.back()));
    }
  }
  for (const Exchange& x : sch.rounds[0].exchanges) {
    if (x.send.active()) {
      reqs.emplace_back();
      MPIA_CHECK(MPI_Isend(&send_bytes[x.send.pieces[0].block], 1, MPI_INT64_T, x.send.peer, tag,
                           comm, &reqs.back()));
    }
  }
  MPIA_CHECK(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
  for (std::size_t j = 0; j < t.sources.size(); ++j)
    if (t.sources[j] != MPI_PROC_NULL && got[j] != recv_bytes[j])
      return "mpi-advance: rank " + std::to_string(t.sources[j]) + " sends " +
             std::to_string(got[j]) + " bytes on the edge of receive block " + std::to_string(j) +
             ", this rank expects " + std::to_string(recv_bytes[j]);
  return {};
}

std::unique_ptr<Operation> make_neighbor(const AlltoallvArgs& a, const Selection& sel,
                                         CommState& state, const NeighborTopology& t, int tag,
                                         std::vector<std::int64_t> send_bytes,
                                         std::vector<std::int64_t> recv_bytes) {
  const int indeg = int(t.sources.size()), outdeg = int(t.destinations.size());
  if (sel.algorithm->kind == AlgorithmKind::System)
    return make_system_neighbor(a, indeg, outdeg, state.comm);
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  NeighborShape shape;
  shape.rank = state.rank;
  shape.sources = t.sources, shape.destinations = t.destinations;
  shape.recv_key = t.recv_key, shape.send_key = t.send_key;
  if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(state).map;
  if (sel.algorithm->needs_matrix) {
    // Every rank's out-edges: (destination, key, bytes) triples, allgathered.
    std::vector<std::int64_t> mine;
    for (int k = 0; k < outdeg; ++k)
      if (t.destinations[k] != MPI_PROC_NULL)
        mine.insert(mine.end(), {t.destinations[k], t.send_key[k], send_bytes[k]});
    const MPI_Comm comm = state.comm->get();
    int n = int(mine.size());
    std::vector<int> counts(state.size), displs(state.size);
    MPIA_CHECK(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
    std::int64_t total = 0;
    for (int r = 0; r < state.size; ++r) {
      if (total > std::int64_t(1) << 30)
        fail(MPI_ERR_OTHER, "mpi-advance: neighbor locality: too many edges to gather");
      displs[r] = int(total), total += counts[r];
    }
    std::vector<std::int64_t> all(static_cast<std::size_t>(total));
    MPIA_CHECK(MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(),
                              displs.data(), MPI_INT64_T, comm));
    for (int r = 0; r < state.size; ++r)
      for (int i = displs[r]; i < displs[r] + counts[r]; i += 3)
        shape.edges.push_back({r, int(all[i]), int(all[i + 1]), all[i + 2]});
    std::sort(shape.edges.begin(), shape.edges.end());
  }
  shape.send_bytes = std::move(send_bytes);
  shape.recv_bytes = std::move(recv_bytes);
  const Schedule schedule = sel.algorithm->build_neighbor(shape, sel.values);

  auto op = std::make_unique<ScheduledOperation>(sel.to_string(), state.comm);
  std::vector<MPI_Aint> displs(a.rdispls, a.rdispls + indeg);
  const BlockBuffer recv = op->bind(a.recvbuf, a.recvcounts, displs.data(), indeg, a.recvtype);
  displs.assign(a.sdispls, a.sdispls + outdeg);
  const BlockBuffer send = op->bind(a.sendbuf, a.sendcounts, displs.data(), outdeg, a.sendtype);
  op->lower(schedule, send, recv, tag);
  const Locality* loc = cached_locality(state);
  op->set_traffic(traffic_of(schedule, state.rank, loc ? &loc->map : nullptr));
  return op;
}

}  // namespace mpia
