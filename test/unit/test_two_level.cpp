// The two-level exchange (tra2, alltoallv locality) in the simulator: many node counts, ranks
// per node (uniform and uneven), placements (blocks, round-robin, random) and radix pairs.
// Every receive byte is checked; the inter-node rounds and messages match the paper's K2.
#include "collective/alltoall/builders.hpp"
#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "locality/node_map.hpp"
#include "simulate.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace mpia {
namespace {

struct Placement {
  std::string name;
  NodeMap map;
};

// Node sizes laid out in blocks, round-robin, or shuffled.
std::vector<Placement> placements(const std::vector<int>& sizes, std::mt19937& rng) {
  std::vector<int> block;
  for (std::size_t n = 0; n < sizes.size(); ++n)
    for (int i = 0; i < sizes[n]; ++i) block.push_back(int(n));
  std::vector<int> rr;  // deal ranks to nodes in turn, skipping full nodes
  std::vector<int> left = sizes;
  for (std::size_t k = 0; k < block.size();)
    for (std::size_t n = 0; n < sizes.size(); ++n)
      if (left[n] > 0) --left[n], rr.push_back(int(n)), ++k;
  std::vector<int> shuffled = block;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  return {{"blocks", make_node_map(block)},
          {"roundrobin", make_node_map(rr)},
          {"random", make_node_map(shuffled)}};
}

std::string describe(const std::vector<int>& sizes) {
  std::string s;
  for (int q : sizes) s += (s.empty() ? "" : ",") + std::to_string(q);
  return "nodes{" + s + "}";
}

std::vector<std::vector<int>> node_shapes() {
  return {{1},          {4},
          {1, 1},       {2, 2},
          {3, 3, 3},    {4, 4},
          {4, 4, 4, 4}, {2, 2, 2, 2, 2},
          {8, 8},       {5, 5, 5},
          {4, 2},       {4, 4, 2},
          {3, 1, 2},    {1, 4},
          {6, 1, 1, 3}, {2, 3, 2, 3, 2},
          {7, 5},       {3, 3, 3, 3, 3, 3, 1}};
}

// Every locality-aware alltoall algorithm of the registry (tra2) at every value of its
// parameters (up to 64 combinations: every radix pair on these machines).
TEST(TwoLevel, Tra2DeliversEveryByteForEveryPlacementAndRadix) {
  std::mt19937 rng(7);
  for (const auto& sizes : node_shapes()) {
    const int Q = *std::max_element(sizes.begin(), sizes.end());
    const int N = int(sizes.size());
    for (const Placement& pl : placements(sizes, rng)) {
      const int P = pl.map.size();
      const Extent e(P, N, Q);
      for (int i = 0; const AlgorithmSpec* a = algorithm_at(Collective::Alltoall, i); ++i) {
        if (a->kind != AlgorithmKind::Scheduled || !a->needs_locality) continue;
        for (const ParamValues& values : param_grid(*a, e, 64))
          for (std::int64_t B : {std::int64_t(1), std::int64_t(3)}) {
            const Selection sel{a, values};
            SimResult res = simulate_alltoall(P, B, [&](int rank) {
              AlltoallShape shape{rank, P, B, &pl.map};
              return sel.algorithm->build_alltoall(shape, sel.values);
            });
            ASSERT_TRUE(res.ok) << sel.to_string() << " " << describe(sizes) << " " << pl.name
                                << " B=" << B << ": " << res.error;
          }
      }
    }
  }
}

// With Q ranks on each of N nodes: K1 = K(Q, r1) intra-node rounds and K2 = K(N, r2)
// inter-node rounds, one inter-node message per rank per inter-node round; TRA over the same
// P at the same radix sends more messages across nodes.
TEST(TwoLevel, InterNodeMessagesMatchK2AndBeatTra) {
  for (int N : {2, 3, 4, 8})
    for (int Q : {2, 4, 8}) {
      const int P = N * Q;
      std::vector<int> labels(P);
      for (int r = 0; r < P; ++r) labels[r] = r / Q;
      const NodeMap map = make_node_map(labels);
      for (int r1 = 2; r1 <= Q; ++r1)
        for (int r2 = 2; r2 <= N; ++r2) {
          std::int64_t tra2_total = 0;
          for (int rank = 0; rank < P; ++rank) {
            const Schedule s = build_two_level(
                rank, map, r1, r2, [](int, int) { return 1; }, false);
            int inter = 0, intra_rounds = 0, inter_rounds = 0;
            for (const Round& round : s.rounds) {
              bool any_intra = false, any_inter = false;
              for (const Exchange& x : round.exchanges) {
                if (!x.send.active()) continue;
                if (map.node_of[x.send.peer] != map.node_of[rank])
                  ++inter, any_inter = true;
                else
                  any_intra = true;
              }
              intra_rounds += any_intra, inter_rounds += any_inter;
              ASSERT_FALSE(any_intra && any_inter) << "phases mix";
            }
            EXPECT_EQ(inter, tra_rounds_K(N, r2)) << "N=" << N << " Q=" << Q << " r2=" << r2;
            EXPECT_EQ(inter_rounds, tra_rounds_K(N, r2));
            EXPECT_EQ(intra_rounds, tra_rounds_K(Q, r1)) << "N=" << N << " Q=" << Q << " r1=" << r1;
            tra2_total += inter;
          }
          // TRA at the inter-node radix (the paper's Figure 5 compares equal radices).
          std::int64_t tra_total = 0;
          const int r = r2;
          for (int rank = 0; rank < P; ++rank) {
            const Schedule s =
                build_radix_bruck(AlltoallShape{rank, P, 1}, r, BruckVariant::ZeroCopy);
            for (const Round& round : s.rounds)
              for (const Exchange& x : round.exchanges)
                if (x.send.active() && map.node_of[x.send.peer] != map.node_of[rank]) ++tra_total;
          }
          EXPECT_LT(tra2_total, tra_total) << "N=" << N << " Q=" << Q << " r=" << r2;
        }
    }
}

using Matrix = std::vector<std::int64_t>;

// Alltoallv locality: every byte, for random and sparse sizes, on every placement; at most one
// inter-node message per lane served and remote node, and two rounds.
TEST(TwoLevel, LocalityAlltoallvDeliversEveryByte) {
  std::mt19937 rng(99);
  const Selection sel = parse_selection(Collective::Alltoallv, "locality", 1, true);
  for (const auto& sizes : node_shapes()) {
    for (const Placement& pl : placements(sizes, rng)) {
      const int P = pl.map.size();
      for (int pattern = 0; pattern < 3; ++pattern) {
        Matrix m(std::size_t(P) * P);
        for (auto& v : m)
          v = pattern == 0   ? std::int64_t(rng() % 5)
              : pattern == 1 ? (rng() % 4 == 0 ? std::int64_t(1 + rng() % 9) : 0)
                             : std::int64_t(2);
        auto layout = [&](int r) {
          SimLayout l;
          for (int q = 0; q < P; ++q) {
            l.send_bytes.push_back(m[std::size_t(r) * P + q]);
            l.recv_bytes.push_back(m[std::size_t(q) * P + r]);
          }
          return l;
        };
        SimResult res = simulate(
            P,
            [&](int rank) {
              AlltoallvShape shape;
              shape.rank = rank;
              shape.size = P;
              shape.nodes = &pl.map;
              const SimLayout l = layout(rank);
              shape.send_bytes = l.send_bytes;
              shape.recv_bytes = l.recv_bytes;
              // Only its own blocks and its node's blocks for the destinations it serves: what
              // the node-local size exchange at init tells it.
              const std::vector<int> served = two_level_served(rank, pl.map);
              const std::vector<int>& node = pl.map.members[pl.map.node_of[rank]];
              shape.pair_bytes = [&m, P, rank, served, node](int src, int dst) {
                const bool local = std::find(node.begin(), node.end(), src) != node.end() &&
                                   std::find(served.begin(), served.end(), dst) != served.end();
                if (src != rank && dst != rank && !local)
                  ADD_FAILURE() << "rank " << rank << " asked for the size of " << src << " -> "
                                << dst;
                return m[std::size_t(src) * P + dst];
              };
              const Schedule s = sel.algorithm->build_alltoallv(shape, sel.values);
              EXPECT_LE(s.rounds.size(), 2u);
              const int Qn = int(pl.map.members[pl.map.node_of[rank]].size());
              const int lanes = (pl.map.max_local() - pl.map.local_of[rank] + Qn - 1) / Qn;
              std::int64_t inter = 0;
              for (const Round& round : s.rounds)
                for (const Exchange& x : round.exchanges)
                  inter += x.send.active() && pl.map.node_of[x.send.peer] != pl.map.node_of[rank];
              EXPECT_LE(inter, std::int64_t(lanes) * (pl.map.nnodes() - 1));
              return s;
            },
            layout, [](int rank, int block) { return std::make_pair(block, rank); });
        ASSERT_TRUE(res.ok) << describe(sizes) << " " << pl.name << " pattern " << pattern << ": "
                            << res.error;
      }
    }
  }
}

TEST(TwoLevel, DefaultsFollowThePaper) {
  const Extent e(64, 4, 16);  // 4 nodes of 16
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra2", e, true).to_string(),
            "tra2:radix_intra=4,radix_inter=4");
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra2", Extent(6, 2, 4), true).to_string(),
            "tra2:radix_intra=2,radix_inter=2");
  EXPECT_THROW(parse_selection(Collective::Alltoall, "tra2:radix_inter=5", e, true), Error);
  EXPECT_THROW(parse_selection(Collective::Alltoall, "tra2:radix_intra=17", e, true), Error);
  EXPECT_THROW(parse_selection(Collective::Alltoall, "tra2:radix_intra=1", e, true), Error);
}

// The cost model's off-node statistics: non-empty sends to other nodes and the distinct nodes
// they reach; empty sends, sends within the node and no-rank destinations count for nothing.
TEST(NodeMap, OffNodeCountsNonEmptySendsAndTheNodesTheyReach) {
  const NodeMap map = make_node_map({0, 0, 1, 1, 2, 2, 3});  // 4 nodes, the last of one rank
  // rank 1 to every rank (alltoallv): blocks to 0 (own node), 2, 3 (node 1), 6 (node 3)
  const OffNode a = off_node(map, 1, nullptr, {5, 0, 8, 8, 0, 0, 1});
  EXPECT_EQ(a.sends, 3);
  EXPECT_EQ(a.nodes, 2);
  // rank 6 to a list of neighbours, one of them twice, one MPI_PROC_NULL-like
  const std::vector<int> dest{6, 4, 4, -2, 0, 5};
  const OffNode b = off_node(map, 6, &dest, {9, 1, 2, 7, 0, 3});
  EXPECT_EQ(b.sends, 3);  // 4, 4, 5 (the self send, the no-rank and the empty one are not)
  EXPECT_EQ(b.nodes, 1);
  EXPECT_EQ(off_node(map, 0, nullptr, std::vector<std::int64_t>(7, 0)).nodes, 0);
}

TEST(NodeMap, LocalitySpecSyntax) {
  auto labels = [](const char* text, int P) { return parse_locality_spec(text, P); };
  EXPECT_EQ(labels("ppn:4", 10), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(labels("ppn:4,roundrobin", 10), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(labels("nodes:0,0,1,1,1,2", 6), (std::vector<int>{0, 0, 1, 1, 1, 2}));
  for (const char* bad : {"ppn:0", "ppn:", "ppn:x", "ppn:4,blocks", "ppn:-1", "nodes:0,1",
                          "nodes:0,,1,2", "nodes:a,b,c,d", "nodes:0,1,2,-3", "bogus", "", "ppn:4,"})
    EXPECT_THROW(labels(bad, 4), Error) << bad;
  const NodeMap m = make_node_map({5, 2, 5, 2, 9});
  EXPECT_EQ(m.node_of, (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(m.local_of, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(m.max_local(), 2);
  EXPECT_FALSE(m.uniform());
}

}  // namespace
}  // namespace mpia
