// Neighbor alltoallv locality: node-aware routing (build_neighbor_locality, builders.cpp). An
// edge between nodes A and B goes to A's gateway for B, in one message per node pair to B's
// gateway for A, and on to its destination: fewer off-node messages for two intra-node hops.
//   time ~ 2 (E o_intra + alpha_intra + n beta_intra) + (nodes reached) (o + alpha_inter)
//          + the node's off-node bytes through its NIC + 4 E n copied
// At init a rank learns the edges that pass through it (edges_through below).
// Restrictions: none (any topology, any placement). No parameters.
#include "collective/neighbor/builders.hpp"
#include "collective/record.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <climits>

namespace mpia {

namespace {

using namespace detail;

Schedule locality(const NeighborShape& s, const ParamValues&) {
  return with(build_neighbor_locality(s), kRoundByRound, Lowering::Pack);
}

// The edges node-aware routing sends through this rank: its own out- and in-edges, and as its
// node's gateway towards node B (B mod Q = its local rank) the edges between its node and B,
// which its node's other ranks tell it: each sends every other rank of the node one message of
// (peer, key, bytes) triples, its out-edges towards and in-edges from the nodes that rank is
// the gateway for. O(edges of this node) memory, Q - 1 messages each way; the keys of an edge's
// two ends are equal by construction (builders.hpp).
void learn(NeighborShape& shape, const ParamValues&, SizeChannel& channel) {
  const NodeMap& nm = *shape.nodes;
  const int me = shape.rank;
  const int n = nm.node_of[me], q = nm.local_of[me];
  const std::vector<int>& mine = nm.members[std::size_t(n)];
  const int Q = int(mine.size());
  std::vector<NeighborShape::Edge> edges;
  // Per local rank b: [count of out-triples, out-triples..., in-triples...].
  std::vector<std::vector<std::int64_t>> out(std::size_t(Q), std::vector<std::int64_t>(1, 0));
  for (std::size_t k = 0; k < shape.destinations.size(); ++k) {
    const int d = shape.destinations[k];
    if (d == MPI_PROC_NULL) continue;
    edges.push_back({me, d, shape.send_key[k], shape.send_bytes[k]});
    const int nd = nm.node_of[d];
    if (nd == n) continue;
    auto& o = out[std::size_t(nd % Q)];
    o.insert(o.end(), {d, shape.send_key[k], shape.send_bytes[k]});
    ++o[0];
  }
  for (std::size_t j = 0; j < shape.sources.size(); ++j) {
    const int s = shape.sources[j];
    if (s == MPI_PROC_NULL) continue;
    if (s != me) edges.push_back({s, me, shape.recv_key[j], shape.recv_bytes[j]});
    const int ns = nm.node_of[s];
    if (ns == n) continue;
    auto& o = out[std::size_t(ns % Q)];
    o.insert(o.end(), {s, shape.recv_key[j], shape.recv_bytes[j]});
  }
  // Sizes first, then the triples.
  std::vector<std::int64_t> len(std::size_t(Q), 0), got_len(std::size_t(Q), 0);
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    len[std::size_t(a)] = std::int64_t(out[std::size_t(a)].size());
    channel.post_recv(mine[std::size_t(a)], &got_len[std::size_t(a)], 1);
    channel.post_send(mine[std::size_t(a)], &len[std::size_t(a)], 1);
  }
  channel.wait_all();
  std::vector<std::vector<std::int64_t>> in(static_cast<std::size_t>(Q));
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    if (got_len[std::size_t(a)] > INT_MAX)
      fail(MPI_ERR_OTHER, "mpi-advance: neighbor locality: too many edges through one rank");
    in[std::size_t(a)].assign(std::size_t(got_len[std::size_t(a)]), 0);
    channel.post_recv(mine[std::size_t(a)], in[std::size_t(a)].data(),
                      int(got_len[std::size_t(a)]));
    channel.post_send(mine[std::size_t(a)], out[std::size_t(a)].data(),
                      int(out[std::size_t(a)].size()));
  }
  channel.wait_all();
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    const std::vector<std::int64_t>& v = in[std::size_t(a)];
    const int from = mine[std::size_t(a)];
    const std::int64_t nout = v.empty() ? 0 : v[0];
    for (std::size_t i = 1; i + 3 <= v.size(); i += 3) {
      const bool outgoing = std::int64_t((i - 1) / 3) < nout;
      const int peer = int(v[i]), key = int(v[i + 1]);
      if (outgoing)
        edges.push_back({from, peer, key, v[i + 2]});
      else
        edges.push_back({peer, from, key, v[i + 2]});
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [](const NeighborShape::Edge& x, const NeighborShape::Edge& y) {
                            return x.src == y.src && x.dst == y.dst && x.key == y.key;
                          }),
              edges.end());
  shape.edges = std::move(edges);
}

// Gathers a node's off-node edges to one gateway per remote node (one intra-node hop), sends
// one message per node pair, and scatters on arrival (a second hop).
Terms cost(const Machine& m, const Stats& st, const ParamValues&) {
  Terms l;
  const double E = double(st.remote_edges), M = double(st.max_block);
  const double Q = double(m.ppn);
  l.c[kMsgIntra] = l.c[kRecvIntra] = 2 * E;
  l.c[kLatIntra] = 2;
  l.c[kBytesIntra] = 2 * M;
  l.c[kMsgInter] = l.c[kRecvInter] = double(st.remote_nodes);
  l.c[kLatInter] = 1;
  l.c[kInflight] = inflight_beyond_one(Q, double(st.remote_nodes));
  l.c[kBytesNic] = Q * E * M;
  l.c[kBytesCopy] = 4 * E * M;
  return l;
}

// Only where some edge leaves its node.
std::vector<ParamValues> candidates(const Machine& m, const Stats& st) {
  if (m.nnodes <= 1 || st.remote_edges == 0) return {};
  return {ParamValues{}};
}

}  // namespace

MPIA_ALGORITHMS(neighbor_locality) {
  AlgorithmSpec a = detail::record(
      Collective::NeighborAlltoallv, "locality", 500,
      "node-aware: edges between two nodes combined into one message between one gateway "
      "rank on each; routing from the allgathered edge list at init");
  a.build_neighbor = locality;
  a.needs_peer_sizes = true;
  a.learn_neighbor = learn;
  a.needs_locality = true;
  a.cost = cost;
  a.candidates = candidates;
  a.search = 20;
  return {a};
}

}  // namespace mpia
