#include "collective/neighbor/builders.hpp"

#include "util/error.hpp"

#include <algorithm>
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
      path[1] = e.dst, rounds[0] = 0, hops = 1;
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
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < std::max(sends[r].size(), recvs[r].size()); ++i) {
      Exchange x;
      if (i < sends[r].size()) x.send = std::move(sends[r][i]);
      if (i < recvs[r].size()) x.recv = std::move(recvs[r][i]);
      sch.rounds[r].exchanges.push_back(std::move(x));
    }
  return sch;
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
