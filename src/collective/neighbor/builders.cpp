#include "collective/neighbor/builders.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <numeric>

namespace mpia {

namespace {

// Block indices sorted by (key, index), skipping MPI_PROC_NULL peers and empty blocks.
std::vector<int> posting_order(const std::vector<int>& peers, const std::vector<int>& key,
                               const std::vector<std::int64_t>& bytes) {
  std::vector<int> order;
  for (int k = 0; k < int(peers.size()); ++k)
    if (peers[k] != MPI_PROC_NULL && bytes[k] > 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] < key[b]; });
  return order;
}

}  // namespace

Schedule build_neighbor_direct(const NeighborShape& s) {
  const std::vector<int> sends = posting_order(s.destinations, s.send_key, s.send_bytes);
  const std::vector<int> recvs = posting_order(s.sources, s.recv_key, s.recv_bytes);
  Schedule sch;
  Round round;
  for (std::size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
    Exchange x;
    if (i < sends.size()) {
      const int k = sends[i];
      x.send.peer = s.destinations[k];
      x.send.pieces.push_back(Piece::send(k, s.send_bytes[k]));
    }
    if (i < recvs.size()) {
      const int j = recvs[i];
      x.recv.peer = s.sources[j];
      x.recv.pieces.push_back(Piece::recv(j, s.recv_bytes[j]));
    }
    round.exchanges.push_back(std::move(x));
  }
  sch.rounds.push_back(std::move(round));
  return sch;
}

Schedule build_neighbor_locality(const NeighborShape& s) {
  if (!s.nodes) fail(MPI_ERR_INTERN, "mpi-advance: neighbor locality without a node map");
  const NodeMap& nm = *s.nodes;
  const int me = s.rank;
  auto gateway = [&](int on_node, int towards_node) {
    return neighbor_gateway(nm, on_node, towards_node);
  };
  // My blocks for each edge: the k-th edge (by key) from me to d is my send block with the
  // k-th smallest key among my blocks to d; likewise for receive blocks from each source.
  std::map<int, std::vector<int>> my_sends, my_recvs;  // peer -> blocks sorted by key
  for (int k : posting_order(s.destinations, s.send_key,
                             std::vector<std::int64_t>(s.destinations.size(), 1)))
    my_sends[s.destinations[k]].push_back(k);
  for (int j : posting_order(s.sources, s.recv_key, std::vector<std::int64_t>(s.sources.size(), 1)))
    my_recvs[s.sources[j]].push_back(j);

  // Per round and peer, the pieces sent and received, in edge order (the same on both ends).
  std::map<std::pair<int, int>, Transfer> out, in;
  std::int64_t scratch = 0;
  int prev_src = -1, prev_dst = -1, nth = 0;
  for (const NeighborShape::Edge& e : s.edges) {
    nth = (e.src == prev_src && e.dst == prev_dst) ? nth + 1 : 0;
    prev_src = e.src, prev_dst = e.dst;
    if (e.bytes == 0) continue;
    const int ns = nm.node_of[e.src], nd = nm.node_of[e.dst];
    // The ranks the edge visits and the round of each hop.
    int path[4], rounds[3], hops = 0;
    path[0] = e.src;
    if (ns == nd) {
      path[1] = e.dst, rounds[0] = s.intra_round, hops = 1;
    } else if (std::binary_search(s.direct_node_pairs.begin(), s.direct_node_pairs.end(),
                                  std::make_pair(ns, nd))) {
      path[1] = e.dst, rounds[0] = 1, hops = 1;
    } else {
      const int go = gateway(ns, nd), gi = gateway(nd, ns);
      if (go != e.src) path[++hops] = go, rounds[hops - 1] = 0;
      path[++hops] = gi, rounds[hops - 1] = 1;
      if (gi != e.dst) path[++hops] = e.dst, rounds[hops - 1] = 2;
    }
    if (std::find(path, path + hops + 1, me) == path + hops + 1) continue;
    // Where the edge's bytes are on this rank: leaving from its send block at the source,
    // arriving in its receive block at the destination, in scratch in between. (A self loop
    // leaves from one and arrives in the other.)
    Piece depart, arrive;
    if (me == e.dst) {
      const auto it = my_recvs.find(e.src);
      if (it == my_recvs.end() || nth >= int(it->second.size()))
        fail(MPI_ERR_TRUNCATE, "mpi-advance: rank " + std::to_string(e.src) +
                                   " sends on an edge this rank's topology does not have");
      arrive = Piece::recv(it->second[nth], e.bytes);
    } else if (me != e.src) {
      arrive = Piece::scratch(scratch, e.bytes);
      scratch += e.bytes;
    }
    if (me == e.src) {
      const auto it = my_sends.find(e.dst);
      if (it == my_sends.end() || nth >= int(it->second.size()))
        fail(MPI_ERR_INTERN, "mpi-advance: neighbor edge list disagrees with the topology");
      depart = Piece::send(it->second[nth], e.bytes);
    } else {
      depart = arrive;
    }
    for (int h = 0; h < hops; ++h) {
      if (path[h] == me) {
        Transfer& t = out[{rounds[h], path[h + 1]}];
        t.peer = path[h + 1];
        t.pieces.push_back(depart);
      }
      if (path[h + 1] == me) {
        Transfer& t = in[{rounds[h], path[h]}];
        t.peer = path[h];
        t.pieces.push_back(arrive);
      }
    }
  }
  Schedule sch;
  sch.scratch_bytes = scratch;
  sch.rounds.resize(3);
  std::vector<std::vector<Transfer>> sends(3), recvs(3);
  for (auto& [key, t] : out) sends[key.first].push_back(std::move(t));
  for (auto& [key, t] : in) recvs[key.first].push_back(std::move(t));
  // Off-node sends first: where a round holds both (a node that sends everything directly, its
  // edges within the node in round 1), the slower messages leave before the local ones.
  for (std::vector<Transfer>& r : sends)
    std::stable_partition(r.begin(), r.end(),
                          [&](const Transfer& t) { return nm.node_of[t.peer] != nm.node_of[me]; });
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < std::max(sends[r].size(), recvs[r].size()); ++i) {
      Exchange x;
      if (i < sends[r].size()) x.send = std::move(sends[r][i]);
      if (i < recvs[r].size()) x.recv = std::move(recvs[r][i]);
      sch.rounds[r].exchanges.push_back(std::move(x));
    }
  return sch;
}

// The edges node-aware routing sends through this rank: its own out- and in-edges, and as its
// node's gateway towards node B (B mod Q = its local rank) the edges between its node and B,
// which its node's other ranks tell it: each sends every other rank of the node one message of
// (peer, key, bytes) triples, its out-edges towards and in-edges from the nodes that rank is
// the gateway for. O(edges of this node) memory, Q - 1 messages each way; the keys of an edge's
// two ends are equal by construction (builders.hpp).
void learn_neighbor_node_edges(NeighborShape& shape, SizeChannel& channel) {
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

int neighbor_gateway(const NodeMap& nm, int on_node, int towards_node) {
  const std::vector<int>& m = nm.members[std::size_t(on_node)];
  return m[std::size_t(towards_node) % m.size()];
}

bool neighbor_edge_passes(const NodeMap& nm, int me, int src, int dst) {
  if (me == src || me == dst) return true;
  const int ns = nm.node_of[src], nd = nm.node_of[dst];
  return ns != nd && (neighbor_gateway(nm, ns, nd) == me || neighbor_gateway(nm, nd, ns) == me);
}

}  // namespace mpia
