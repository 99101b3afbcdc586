// Neighbor all-to-all builders in the simulator: Cartesian rings and tori (periodic dimensions
// of size 1 and 2 included, different sizes per direction), random graphs with duplicate
// edges, self loops and silent ranks, on several node maps for the locality algorithm.
#include "collective/neighbor/builders.hpp"
#include "collective/registry.hpp"
#include "locality/node_map.hpp"
#include "schedule/simulate.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace mpia {
namespace {

struct Graph {
  std::string name;
  std::vector<NeighborShape> ranks;  // topology and sizes per rank
  // expected[rank][recv block] = (source rank, source send block)
  std::vector<std::vector<std::pair<int, int>>> expected;
};

std::int64_t size_of(int src, int block) { return (src * 7 + block * 3) % 5; }

// Cartesian grid with the given dims and periodicity, keys as neighbor_topology() makes them.
Graph cartesian(const std::vector<int>& dims, const std::vector<bool>& periodic) {
  int P = 1;
  for (int d : dims) P *= d;
  Graph g;
  g.name = "cart";
  for (int d : dims) g.name += "_" + std::to_string(d);
  auto coords = [&](int r) {
    std::vector<int> c(dims.size());
    for (int d = int(dims.size()) - 1; d >= 0; --d) c[d] = r % dims[d], r /= dims[d];
    return c;
  };
  auto rank_of = [&](std::vector<int> c) {
    int r = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) r = r * dims[d] + c[d];
    return r;
  };
  auto shift = [&](int r, std::size_t d, int by) {
    std::vector<int> c = coords(r);
    c[d] += by;
    if (c[d] < 0 || c[d] >= dims[d]) {
      if (!periodic[d]) return int(MPI_PROC_NULL);
      c[d] = (c[d] + dims[d]) % dims[d];
    }
    return rank_of(c);
  };
  g.ranks.resize(P);
  g.expected.resize(P);
  for (int r = 0; r < P; ++r) {
    NeighborShape& s = g.ranks[r];
    s.rank = r;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const int minus = shift(r, d, -1), plus = shift(r, d, +1);
      s.sources.insert(s.sources.end(), {minus, plus});
      s.destinations.insert(s.destinations.end(), {minus, plus});
      s.recv_key.insert(s.recv_key.end(), {int(2 * d), int(2 * d + 1)});
      s.send_key.insert(s.send_key.end(), {int(2 * d + 1), int(2 * d)});
      // Receive block 2d: what the -1 neighbor sent in its block 2d+1; 2d+1: the +1
      // neighbor's block 2d.
      g.expected[r].push_back({minus, int(2 * d + 1)});
      g.expected[r].push_back({plus, int(2 * d)});
    }
    for (std::size_t k = 0; k < s.destinations.size(); ++k)
      s.send_bytes.push_back(s.destinations[k] == MPI_PROC_NULL ? 0 : size_of(r, int(k)));
    for (std::size_t j = 0; j < s.sources.size(); ++j) {
      const auto [src, blk] = g.expected[r][j];
      s.recv_bytes.push_back(src == MPI_PROC_NULL ? 0 : size_of(src, blk));
    }
  }
  return g;
}

std::vector<int> occurrence(const std::vector<int>& peers) {
  std::map<int, int> seen;
  std::vector<int> k;
  for (int p : peers) k.push_back(seen[p]++);
  return k;
}

// A random directed multigraph: out-edges per rank, in-lists derived (and shuffled: MPI does
// not order a rank's sources).
Graph random_graph(int P, std::mt19937& rng, double density) {
  Graph g;
  g.name = "random" + std::to_string(P);
  std::vector<std::vector<int>> out(P), in(P);
  for (int s = 0; s < P; ++s) {
    for (int d = 0; d < P; ++d) {
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      if (u < density) out[s].push_back(d);
      if (u < density / 3) out[s].push_back(d);  // duplicate edge
    }
    std::shuffle(out[s].begin(), out[s].end(), rng);
  }
  // In-lists in an arbitrary order, but the k-th s in d's in-list pairs with the k-th d in
  // s's out-list.
  std::vector<std::vector<std::pair<int, int>>> in_edges(P);  // (src, src block)
  for (int s = 0; s < P; ++s)
    for (int k = 0; k < int(out[s].size()); ++k) in_edges[out[s][k]].push_back({s, k});
  g.ranks.resize(P);
  g.expected.resize(P);
  for (int d = 0; d < P; ++d) {
    std::vector<std::pair<int, int>> e = in_edges[d];
    std::shuffle(e.begin(), e.end(), rng);
    // Stable per source: keep the relative order of the edges from one source.
    std::map<int, std::vector<int>> blocks_from;
    for (const auto& [s, k] : in_edges[d]) blocks_from[s].push_back(k);
    std::map<int, int> used;
    NeighborShape& sh = g.ranks[d];
    sh.rank = d;
    for (const auto& [s, k] : e) {
      sh.sources.push_back(s);
      g.expected[d].push_back({s, blocks_from[s][used[s]++]});
    }
    sh.recv_key = occurrence(sh.sources);
  }
  for (int s = 0; s < P; ++s) {
    NeighborShape& sh = g.ranks[s];
    sh.destinations = out[s];
    sh.send_key = occurrence(sh.destinations);
    for (int k = 0; k < int(out[s].size()); ++k) sh.send_bytes.push_back(size_of(s, k));
  }
  for (int d = 0; d < P; ++d)
    for (const auto& [s, k] : g.expected[d]) g.ranks[d].recv_bytes.push_back(size_of(s, k));
  return g;
}

// Every rank gets every edge of the graph, or (with map) only those node-aware routing takes
// through it -- what the node-local exchange at init gives it (operation/neighbor.cpp).
void gather_edges(Graph& g, const NodeMap* map = nullptr) {
  std::vector<NeighborShape::Edge> edges;
  for (const NeighborShape& s : g.ranks)
    for (std::size_t k = 0; k < s.destinations.size(); ++k)
      if (s.destinations[k] != MPI_PROC_NULL)
        edges.push_back({s.rank, s.destinations[k], s.send_key[k], s.send_bytes[k]});
  std::sort(edges.begin(), edges.end());
  for (NeighborShape& s : g.ranks) {
    s.edges.clear();
    for (const NeighborShape::Edge& e : edges)
      if (!map || neighbor_edge_passes(*map, s.rank, e.src, e.dst)) s.edges.push_back(e);
  }
}

void check(Graph g, const NodeMap& map, const std::string& where) {
  gather_edges(g, &map);
  const int P = int(g.ranks.size());
  for (NeighborShape& s : g.ranks) s.nodes = &map;
  for (int i = 0; const AlgorithmSpec* a = algorithm_at(Collective::NeighborAlltoallv, i); ++i) {
    if (a->kind != AlgorithmKind::Scheduled) continue;
    SimResult res = simulate(
        P, [&](int r) { return a->build_neighbor(g.ranks[r], {}); },
        [&](int r) {
          return SimLayout{g.ranks[r].send_bytes, g.ranks[r].recv_bytes};
        },
        [&](int r, int j) { return g.expected[r][j]; });
    ASSERT_TRUE(res.ok) << a->name << " " << g.name << " " << where << ": " << res.error;
  }
}

std::vector<std::pair<std::string, NodeMap>> maps(int P) {
  std::vector<std::pair<std::string, NodeMap>> m;
  m.push_back({"one_node", single_node_map(P)});
  for (int ppn : {1, 2, 3}) {
    std::vector<int> block(P), rr(P);
    for (int r = 0; r < P; ++r) block[r] = r / ppn, rr[r] = r % ((P + ppn - 1) / ppn);
    m.push_back({"ppn" + std::to_string(ppn), make_node_map(block)});
    m.push_back({"ppn" + std::to_string(ppn) + "rr", make_node_map(rr)});
  }
  return m;
}

TEST(NeighborBuilders, CartesianIncludingDegeneratePeriodicDimensions) {
  const std::vector<std::pair<std::vector<int>, std::vector<bool>>> grids = {
      {{1}, {true}},
      {{2}, {true}},
      {{3}, {true}},
      {{5}, {false}},
      {{2, 3}, {true, true}},
      {{1, 4}, {true, true}},
      {{2, 2}, {true, false}},
      {{4, 3}, {false, true}},
      {{2, 2, 2}, {true, true, true}},
      {{1, 2, 3}, {true, true, false}},
      {{3, 1, 2}, {true, false, true}}};
  for (const auto& [dims, periodic] : grids) {
    const Graph g = cartesian(dims, periodic);
    for (const auto& [name, map] : maps(int(g.ranks.size()))) check(g, map, name);
  }
}

TEST(NeighborBuilders, RandomMultigraphs) {
  std::mt19937 rng(2024);
  for (int P : {1, 2, 3, 5, 8, 13})
    for (double density : {0.0, 0.2, 0.6}) {
      const Graph g = random_graph(P, rng, density);
      for (const auto& [name, map] : maps(P))
        check(g, map, name + " density " + std::to_string(density));
    }
}

// Locality: every pair of nodes exchanges at most one inter-node message per direction.
TEST(NeighborBuilders, LocalitySendsOneMessagePerNodePair) {
  std::mt19937 rng(5);
  const Graph g0 = random_graph(12, rng, 0.7);
  Graph g = g0;
  gather_edges(g);
  std::vector<int> labels(12);
  for (int r = 0; r < 12; ++r) labels[r] = r / 4;
  const NodeMap map = make_node_map(labels);
  std::map<std::pair<int, int>, int> node_pair_messages;
  std::int64_t direct_inter = 0;
  for (NeighborShape& s : g.ranks) {
    s.nodes = &map;
    for (const Round& r : build_neighbor_locality(s).rounds)
      for (const Exchange& x : r.exchanges)
        if (x.send.active() && map.node_of[x.send.peer] != map.node_of[s.rank])
          ++node_pair_messages[{map.node_of[s.rank], map.node_of[x.send.peer]}];
    for (const Round& r : build_neighbor_direct(s).rounds)
      for (const Exchange& x : r.exchanges)
        direct_inter += x.send.active() && map.node_of[x.send.peer] != map.node_of[s.rank];
  }
  std::int64_t total = 0;
  for (const auto& [pair, n] : node_pair_messages) EXPECT_EQ(n, 1), total += n;
  EXPECT_LE(total, 6);
  EXPECT_GT(direct_inter, total);
}

}  // namespace
}  // namespace mpia
