// Neighbor all-to-all builders in the simulator: Cartesian rings and tori (periodic dimensions
// of size 1 and 2 included, different sizes per direction), random graphs with duplicate
// edges, self loops and silent ranks, on several node maps for the locality algorithm.
#include "collective/neighbor/builders.hpp"
#include "collective/registry.hpp"
#include "locality/node_map.hpp"
#include "simulate.hpp"
#include "thread_channel.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

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

// The graph of the out-edges out[s] (destinations, in s's order) of sizes bytes[s][k]; in-lists
// derived, each shuffled with rng when given (MPI does not order a rank's sources), but the k-th
// s in d's in-list pairing with the k-th d in s's out-list.
Graph graph_of(std::string name, const std::vector<std::vector<int>>& out,
               const std::vector<std::vector<std::int64_t>>& bytes, std::mt19937* rng) {
  const int P = int(out.size());
  Graph g;
  g.name = std::move(name);
  std::vector<std::vector<std::pair<int, int>>> in_edges(P);  // (src, src block)
  for (int s = 0; s < P; ++s)
    for (int k = 0; k < int(out[s].size()); ++k) in_edges[out[s][k]].push_back({s, k});
  g.ranks.resize(P);
  g.expected.resize(P);
  for (int d = 0; d < P; ++d) {
    std::vector<std::pair<int, int>> e = in_edges[d];
    if (rng) std::shuffle(e.begin(), e.end(), *rng);
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
    sh.send_bytes = bytes[s];
  }
  for (int d = 0; d < P; ++d)
    for (const auto& [s, k] : g.expected[d]) g.ranks[d].recv_bytes.push_back(bytes[s][k]);
  return g;
}

// A random directed multigraph with duplicate edges, self loops and silent ranks.
Graph random_graph(int P, std::mt19937& rng, double density) {
  std::vector<std::vector<int>> out(P);
  std::vector<std::vector<std::int64_t>> bytes(P);
  for (int s = 0; s < P; ++s) {
    for (int d = 0; d < P; ++d) {
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      if (u < density) out[s].push_back(d);
      if (u < density / 3) out[s].push_back(d);  // duplicate edge
    }
    std::shuffle(out[s].begin(), out[s].end(), rng);
    for (int k = 0; k < int(out[s].size()); ++k) bytes[s].push_back(size_of(s, k));
  }
  return graph_of("random" + std::to_string(P), out, bytes, &rng);
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

// Each rank's shape after the init-time exchange of selection (a, values), run for all ranks in
// process: learn_neighbor where the algorithm has one, else every edge (gather_edges).
std::vector<NeighborShape> learnt(Graph g, const NodeMap& map, const AlgorithmSpec& a,
                                  const ParamValues& values, std::string& error) {
  for (NeighborShape& s : g.ranks) s.nodes = &map;
  if (!a.learn_neighbor) {
    gather_edges(g);
    return g.ranks;
  }
  error = run_threads(int(g.ranks.size()), [&](int r, SizeChannel& ch) {
    a.learn_neighbor(g.ranks[std::size_t(r)], values, ch);
  });
  return g.ranks;
}

SimResult run(const Graph& g, const std::vector<NeighborShape>& shapes, const AlgorithmSpec& a,
              const ParamValues& values) {
  return simulate(
      int(shapes.size()), [&](int r) { return a.build_neighbor(shapes[std::size_t(r)], values); },
      [&](int r) {
        return SimLayout{g.ranks[r].send_bytes, g.ranks[r].recv_bytes};
      },
      [&](int r, int j) { return g.expected[r][j]; });
}

// Every scheduled algorithm at values spanning its parameters, after its own init exchange, and
// node-aware routing on the edges neighbor_edge_passes says a rank needs.
void check(const Graph& g, const NodeMap& map, const std::string& where) {
  const int P = int(g.ranks.size());
  int max_local = 1;
  for (const std::vector<int>& m : map.members) max_local = std::max(max_local, int(m.size()));
  const Extent extent(P, int(map.members.size()), max_local);
  for (int i = 0; const AlgorithmSpec* a = algorithm_at(Collective::NeighborAlltoallv, i); ++i) {
    if (a->kind != AlgorithmKind::Scheduled) continue;
    for (const ParamValues& values : param_grid(*a, extent, 9)) {
      std::string error;
      const std::vector<NeighborShape> shapes = learnt(g, map, *a, values, error);
      ASSERT_EQ(error, "") << a->name << " " << g.name << " " << where;
      const SimResult res = run(g, shapes, *a, values);
      ASSERT_TRUE(res.ok) << Selection{a, values}.to_string() << " " << g.name << " " << where
                          << ": " << res.error;
    }
  }
  Graph h = g;
  gather_edges(h, &map);
  for (NeighborShape& s : h.ranks) s.nodes = &map;
  const SimResult res = simulate(
      P, [&](int r) { return build_neighbor_locality(h.ranks[r]); },
      [&](int r) {
        return SimLayout{g.ranks[r].send_bytes, g.ranks[r].recv_bytes};
      },
      [&](int r, int j) { return g.expected[r][j]; });
  ASSERT_TRUE(res.ok) << "locality on neighbor_edge_passes " << g.name << " " << where << ": "
                      << res.error;
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

// Off-node messages a rank's schedule sends.
std::int64_t inter_node_messages(const Schedule& sch, const NodeMap& map, int rank) {
  std::int64_t n = 0;
  for (const Round& r : sch.rounds)
    for (const Exchange& x : r.exchanges)
      n += x.send.active() && map.node_of[x.send.peer] != map.node_of[rank];
  return n;
}

// locality_partial on 4 nodes of 3 ranks whose node pairs have 1 edge, 2 large ones, 2 or 3 or 4
// small ones (duplicates and an empty edge among them): every byte delivered at min_edges 1, 2, 3
// and thresholds 0, 4096, 2^30, and the off-node messages those of the rule -- one per
// aggregated node pair, one per (source, destination) rank pair of the direct ones. min_edges 1
// with the largest threshold is locality's schedule, threshold 0 sends every edge directly.
// (rank_edges 0 throughout: the senders' load plays no part; the next test weighs it.)
TEST(NeighborBuilders, PartialAggregationPerNodePair) {
  struct E {
    int src, dst;
    std::int64_t bytes;
  };
  const std::vector<E> edges = {
      {0, 3, 8},                                            // node 0 -> 1: one edge
      {0, 6, 8},    {1, 7, 8},     {2, 8, 16}, {2, 8, 16},  // 0 -> 2: four, three rank pairs
      {3, 0, 8},    {4, 1, 8},     {5, 1, 8},               // 1 -> 0: three
      {6, 9, 5000}, {7, 10, 5000},                          // 2 -> 3: two large
      {9, 0, 0},    {10, 2, 8},                             // 3 -> 0: one non-empty
      {4, 9, 8},    {4, 9, 8},     {5, 11, 8},              // 1 -> 3: three, two rank pairs
      {11, 8, 8},   {11, 8, 100},                           // 3 -> 2: two, one rank pair
      {0, 1, 8},    {3, 3, 8},     {7, 6, 4}};              // within nodes
  const int P = 12;
  std::vector<std::vector<int>> out(P);
  std::vector<std::vector<std::int64_t>> bytes(P);
  for (const E& e : edges) out[e.src].push_back(e.dst), bytes[e.src].push_back(e.bytes);
  std::mt19937 rng(7);
  const Graph g = graph_of("partial", out, bytes, &rng);
  std::vector<int> labels(P);
  for (int r = 0; r < P; ++r) labels[r] = r / 3;
  const NodeMap map = make_node_map(labels);
  const AlgorithmSpec* partial = find_algorithm(Collective::NeighborAlltoallv, "locality_partial");
  const AlgorithmSpec* locality = find_algorithm(Collective::NeighborAlltoallv, "locality");
  ASSERT_NE(partial, nullptr);
  ASSERT_NE(locality, nullptr);

  // The rule, from the edge list: per directed node pair its non-empty edges, their bytes and
  // their distinct rank pairs.
  struct Pair {
    std::int64_t edges = 0, bytes = 0;
    std::set<std::pair<int, int>> ranks;
  };
  std::map<std::pair<int, int>, Pair> pairs;
  for (const E& e : edges)
    if (e.bytes > 0 && labels[e.src] != labels[e.dst]) {
      Pair& p = pairs[{labels[e.src], labels[e.dst]}];
      ++p.edges, p.bytes += e.bytes, p.ranks.insert({e.src, e.dst});
    }
  auto expected_messages = [&](std::int64_t min_edges, std::int64_t threshold) {
    std::int64_t n = 0;
    for (const auto& [key, p] : pairs)
      n +=
          p.edges >= min_edges && p.bytes <= threshold * p.edges ? 1 : std::int64_t(p.ranks.size());
    return n;
  };
  auto messages = [&](const AlgorithmSpec& a, const ParamValues& v) {
    std::string error;
    const std::vector<NeighborShape> shapes = learnt(g, map, a, v, error);
    EXPECT_EQ(error, "");
    const SimResult res = run(g, shapes, a, v);
    EXPECT_TRUE(res.ok) << Selection{&a, v}.to_string() << ": " << res.error;
    std::vector<Schedule> schedules;
    std::int64_t n = 0;
    for (int r = 0; r < P; ++r) {
      schedules.push_back(a.build_neighbor(shapes[std::size_t(r)], v));
      n += inter_node_messages(schedules.back(), map, r);
    }
    return std::make_pair(n, schedules);
  };
  const auto [locality_n, locality_sch] = messages(*locality, {});
  EXPECT_EQ(locality_n, std::int64_t(pairs.size()));
  std::int64_t direct_n = 0;
  for (const NeighborShape& s : g.ranks)
    direct_n += inter_node_messages(build_neighbor_direct(s), map, s.rank);
  EXPECT_EQ(direct_n, 16);
  for (std::int64_t min_edges : {1, 2, 3})
    for (std::int64_t threshold : {std::int64_t(0), std::int64_t(4096), std::int64_t(1) << 30}) {
      const std::int64_t n = messages(*partial, {min_edges, threshold, 0}).first;
      const std::string at =
          "min_edges " + std::to_string(min_edges) + " threshold " + std::to_string(threshold);
      EXPECT_EQ(n, expected_messages(min_edges, threshold)) << at;
      EXPECT_GE(n, locality_n) << at;
      EXPECT_LT(n, direct_n) << at;  // duplicate edges share a message even when direct
    }
  // The three regimes: all aggregated (locality's very schedule), split, all direct.
  EXPECT_EQ(expected_messages(1, std::int64_t(1) << 30), locality_n);
  EXPECT_EQ(expected_messages(3, std::int64_t(1) << 30), locality_n + 1);
  EXPECT_EQ(expected_messages(2, 4096), locality_n + 1);
  EXPECT_EQ(expected_messages(1, 0), 13);
  const std::vector<Schedule> same = messages(*partial, {1, std::int64_t(1) << 30, 0}).second;
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(same[r].rounds.size(), locality_sch[r].rounds.size());
    EXPECT_EQ(same[r].scratch_bytes, locality_sch[r].scratch_bytes);
    for (std::size_t k = 0; k < same[r].rounds.size(); ++k) {
      const std::vector<Exchange>& a = same[r].rounds[k].exchanges;
      const std::vector<Exchange>& b = locality_sch[r].rounds[k].exchanges;
      ASSERT_EQ(a.size(), b.size()) << "rank " << r << " round " << k;
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].send.peer, b[i].send.peer);
        EXPECT_EQ(a[i].send.bytes(), b[i].send.bytes());
        EXPECT_EQ(a[i].recv.peer, b[i].recv.peer);
        EXPECT_EQ(a[i].recv.bytes(), b[i].recv.bytes());
      }
    }
  }
}

// locality_partial weighs who sends a node pair's edges: a pair is aggregated only when its
// senders average at least rank_edges off-node edges in all (then sharing gateways saves each of
// them messages; a stencil's face, one edge from each of ranks with few off-node neighbours,
// goes direct). 3 nodes of 4 ranks; the rule is
// computed here from the edge list, the schedules' off-node messages must follow it at every
// rank_edges (0: the load plays no part; the default 2Q = 8 here), and every byte arrives.
TEST(NeighborBuilders, PartialAggregationWeighsTheSendersLoad) {
  struct E {
    int src, dst;
  };
  const std::vector<E> edges = {
      {0, 4}, {1, 5}, {2, 6},  {3, 7},   // node 0 -> 1: a face, one edge per sender
      {0, 8}, {1, 9},                    // 0 -> 2: two senders that have two off-node edges each
      {4, 8}, {4, 9}, {4, 10}, {4, 11},  // 1 -> 2: a hub (8 off-node edges in all)
      {8, 0}, {9, 1}, {10, 2}, {11, 3},  // 2 -> 0: a face
      {8, 4},                            // 2 -> 1: one edge
      {4, 0}, {4, 1}, {4, 2},  {4, 3},   // 1 -> 0: the hub, and
      {5, 0}, {5, 0},                    //   a rank with a duplicate edge
      {0, 1}, {6, 7}};                   // within nodes
  const int P = 12, Q = 4;
  std::vector<std::vector<int>> out(P);
  std::vector<std::vector<std::int64_t>> bytes(P);
  for (const E& e : edges) out[e.src].push_back(e.dst), bytes[e.src].push_back(8);
  std::mt19937 rng(11);
  const Graph g = graph_of("load", out, bytes, &rng);
  std::vector<int> labels(P);
  for (int r = 0; r < P; ++r) labels[r] = r / Q;
  const NodeMap map = make_node_map(labels);
  const AlgorithmSpec* partial = find_algorithm(Collective::NeighborAlltoallv, "locality_partial");
  ASSERT_NE(partial, nullptr);
  ASSERT_EQ(partial->params.size(), 3u);
  EXPECT_EQ(partial->params[2].default_value.at(Extent(P, 3, Q)), 2 * Q);

  std::vector<std::int64_t> load(P, 0);  // each rank's off-node edges
  struct Pair {
    std::int64_t edges = 0;
    std::set<int> senders;
    std::set<std::pair<int, int>> ranks;
  };
  std::map<std::pair<int, int>, Pair> pairs;
  for (const E& e : edges)
    if (labels[e.src] != labels[e.dst]) {
      ++load[e.src];
      Pair& p = pairs[{labels[e.src], labels[e.dst]}];
      ++p.edges, p.senders.insert(e.src), p.ranks.insert({e.src, e.dst});
    }
  auto expected_messages = [&](std::int64_t min_edges, std::int64_t rank_edges) {
    std::int64_t n = 0;
    for (const auto& [key, p] : pairs) {
      std::int64_t senders_load = 0;
      for (int s : p.senders) senders_load += load[s];
      const std::int64_t S = std::int64_t(p.senders.size());
      const bool combined = p.edges >= min_edges && senders_load >= rank_edges * S;
      n += combined ? 1 : std::int64_t(p.ranks.size());
    }
    return n;
  };
  for (std::int64_t min_edges : {1, 2})
    for (std::int64_t rank_edges : {0, 1, 2, 3, 2 * Q}) {
      const ParamValues v = {min_edges, 4096, rank_edges};
      const std::string at =
          "min_edges " + std::to_string(min_edges) + " rank_edges " + std::to_string(rank_edges);
      std::string error;
      const std::vector<NeighborShape> shapes = learnt(g, map, *partial, v, error);
      ASSERT_EQ(error, "") << at;
      const SimResult res = run(g, shapes, *partial, v);
      ASSERT_TRUE(res.ok) << at << ": " << res.error;
      std::int64_t n = 0;
      for (int r = 0; r < P; ++r)
        n += inter_node_messages(partial->build_neighbor(shapes[std::size_t(r)], v), map, r);
      EXPECT_EQ(n, expected_messages(min_edges, rank_edges)) << at;
    }
  // Every pair direct (threshold 0): one round on every rank, as direct's schedule (the edges
  // within a node beside the others, not a round before them).
  {
    const ParamValues v = {2, 0, 2 * Q};
    std::string error;
    const std::vector<NeighborShape> shapes = learnt(g, map, *partial, v, error);
    ASSERT_EQ(error, "");
    ASSERT_TRUE(run(g, shapes, *partial, v).ok);
    for (int r = 0; r < P; ++r) {
      int busy = 0;
      for (const Round& round : partial->build_neighbor(shapes[std::size_t(r)], v).rounds) {
        busy += !round.exchanges.empty();
        // its off-node sends before the ones within the node (they take longer to arrive)
        bool local_seen = false;
        for (const Exchange& x : round.exchanges) {
          if (!x.send.active()) continue;
          const bool off = map.node_of[x.send.peer] != map.node_of[r];
          EXPECT_FALSE(off && local_seen) << "rank " << r << " sends off-node after on-node";
          local_seen = local_seen || !off;
        }
      }
      EXPECT_LE(busy, 1) << "rank " << r;
    }
  }
  // At the default only the hub's pair 1 -> 2 goes through the gateways (1 -> 0 averages the
  // hub's 8 with the other sender's 2); every pair of two or more edges does when the load plays
  // no part.
  EXPECT_EQ(expected_messages(2, 0), 6);
  EXPECT_EQ(expected_messages(2, 2 * Q), 4 + 2 + 1 + 4 + 1 + 5);
}

}  // namespace
}  // namespace mpia
