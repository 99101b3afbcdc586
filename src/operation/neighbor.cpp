// MPIX_Neighbor_alltoallv(_init): argument checks against the communicator's topology
// (neighbor_topology.hpp), size agreement along the edges, and building the operation a request
// runs; its entry points are declared with the other collectives' (entry_points.hpp).
#include "collective/neighbor/builders.hpp"
#include "operation/alltoallv.hpp"
#include "operation/entry_points.hpp"

#include "operation/neighbor_topology.hpp"
#include "operation/pipeline.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>

namespace mpia {

namespace {

// Local argument checks; fills the packed bytes per block.
void check_neighbor(const AlltoallvArgs& a, const NeighborTopology& t,
                    std::vector<std::int64_t>& send_bytes, std::vector<std::int64_t>& recv_bytes,
                    MPI_Comm comm) {
  if (a.send.buf == MPI_IN_PLACE || a.recv.buf == MPI_IN_PLACE)
    fail(MPI_ERR_BUFFER, "mpi-advance: MPI_IN_PLACE is not allowed in neighborhood collectives");
  check_blocks(a.recv, int(t.sources.size()), "recv", recv_bytes, comm);
  check_blocks(a.send, int(t.destinations.size()), "send", send_bytes, comm);
}

// Sends every out-edge's byte count along the edge (point-to-point on comm, posted in key
// order like the data, so degenerate Cartesian dimensions pair up correctly) and compares
// what arrives with this rank's receive sizes. Returns the first mismatch as an error message
// (empty when all agree). Collective over the topology's edges; waits while driving running
// operations.
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
  for (MPI_Request& r : reqs) complete(r, "the edge size exchange");
  for (std::size_t j = 0; j < t.sources.size(); ++j)
    if (t.sources[j] != MPI_PROC_NULL && got[j] != recv_bytes[j])
      return "mpi-advance: rank " + std::to_string(t.sources[j]) + " sends " +
             std::to_string(got[j]) + " bytes on the edge of receive block " + std::to_string(j) +
             ", this rank expects " + std::to_string(recv_bytes[j]);
  return {};
}

// Whether a neighbour stands twice in a list (a periodic dimension of 1 or 2 ranks).
bool twice(std::vector<int> v) {
  v.erase(std::remove(v.begin(), v.end(), MPI_PROC_NULL), v.end());
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) != v.end();
}

// The pipeline's adapter for the neighbor calls (pipeline.hpp): the communicator's topology
// gives the blocks; every edge agrees on its size at init, auto resolves from agreed statistics,
// and a blocking call under auto takes the agreed plan cache.
struct NeighborCall : CallBase {
  static constexpr Collective kCollective = Collective::NeighborAlltoallv;
  static constexpr bool kAgreedCache = true;
  const AlltoallvArgs& a;
  const NeighborTopology* topo = nullptr;
  std::vector<std::int64_t> sb, rb;  // packed bytes per out- and in-edge

  NeighborCall(CommState& state, const AlltoallvArgs& args) : CallBase(state), a(args) {}
  // No topology: MPI_ERR_TOPOLOGY, the same on every rank.
  void prepare() { topo = &comm_topology(st); }
  void check() { check_neighbor(a, *topo, sb, rb, st.comm->get()); }
  void clear() {
    sb.assign(topo->destinations.size(), 0);
    rb.assign(topo->sources.size(), 0);
  }

  void compare(Proposal& p) const {
    // Every edge must agree on its size (tag 0: no blocking call is in flight during init).
    const std::string mismatch = check_edge_sizes(*topo, sb, rb, st.comm->get(), 0);
    if (!p.error && !mismatch.empty()) {
      p.derived = true;
      p.error = std::make_unique<Error>(MPI_ERR_TRUNCATE, mismatch);
    }
    for (std::int64_t b : sb) p.maxima[0] = std::max(p.maxima[0], b);
    // Off-node edges and the distinct nodes they reach, for the model.
    const OffNode off = off_node(comm_locality(st).map, st.rank, &topo->destinations, sb);
    p.maxima[1] = off.sends;
    p.maxima[2] = off.nodes;
    // Where the MPI library's neighbor collective is known to give wrong answers, auto does not
    // try it: a neighbour twice in a list (the libraries differ from MPI's rule and from one
    // another, system.cpp), and MPICH's w form on a rank whose in- and out-degree differ (MPICH
    // 4.0.2 loses receive blocks there: test_neighbor.cpp's runnable_w). Agreed: the maximum over
    // the ranks.
#if defined(MPICH)
    constexpr bool kMpich = true;
#else
    constexpr bool kMpich = false;
#endif
    const bool uneven_w =
        kMpich && (a.send.w || a.recv.w) && topo->sources.size() != topo->destinations.size();
    p.maxima[3] = twice(topo->sources) || twice(topo->destinations) || uneven_w;
  }
  Stats stats(const Agreement& ag) const {
    Stats s;
    s.max_block = ag.maxima[0];
    s.remote_edges = ag.maxima[1];
    s.remote_nodes = ag.maxima[2];
    return s;
  }
  bool with_library(const Agreement& ag) const { return ag.maxima[3] == 0; }

  std::shared_ptr<const Schedule> schedule(const Selection& sel, int tag, bool last) {
    if (!sel.algorithm->build_neighbor)
      fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
    const NeighborTopology& t = *topo;
    NeighborShape shape;
    shape.rank = st.rank;
    shape.sources = t.sources, shape.destinations = t.destinations;
    shape.recv_key = t.recv_key, shape.send_key = t.send_key;
    if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(st).map;
    shape.send_bytes = last ? std::move(sb) : sb;
    shape.recv_bytes = last ? std::move(rb) : rb;
    return learnt_schedule(st, tag, "the edge exchange", shape, sel.algorithm->learn_neighbor,
                           sel.algorithm->build_neighbor, sel.values);
  }

  std::pair<BlockBuffer, BlockBuffer> bind(ScheduledOperation& op) const {
    const BlockBuffer recv = op.bind(a.recv, indegree());
    return {op.bind(a.send, outdegree()), recv};
  }

  LibraryCall library(bool blocking) const {
    LibraryCall l;
    l.collective = kCollective;
    l.blocks = &a;
    l.nsend = outdegree();
    l.nrecv = indegree();
    l.comm = neighbor_system_comm(st);
    l.blocking = blocking;
    return l;
  }

  bool predefined_types() const {
    for (const auto& [side, n] :
         {std::make_pair(&a.recv, indegree()), std::make_pair(&a.send, outdegree())}) {
      if (!side->w && !predefined(side->type)) return false;
      for (int i = 0; i < n && side->w; ++i)
        if (!predefined(side->types[i])) return false;
    }
    return true;
  }
  void words(std::vector<std::int64_t>& key, bool buffers) const {
    key.push_back(a.recv.w + 2 * a.large + 4 * a.regular);
    if (buffers) key.push_back(word(a.send.buf)), key.push_back(word(a.recv.buf));
    auto identity = [&key](MPI_Datatype t) { push_type_identity(key, t); };
    if (!a.recv.w) identity(a.recv.type), identity(a.send.type);
    push_side_words(key, a.recv, indegree(), identity);
    push_side_words(key, a.send, outdegree(), identity);
  }
  std::pair<const void*, const void*> buffers() const { return {a.send.buf, a.recv.buf}; }

 private:
  int indegree() const { return int(topo->sources.size()); }
  int outdegree() const { return int(topo->destinations.size()); }
};

}  // namespace

template <>
struct CallOf<Collective::NeighborAlltoallv> : CallIs<NeighborCall> {};
template struct EntryPoints<Collective::NeighborAlltoallv>;

}  // namespace mpia
