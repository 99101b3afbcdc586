// The cost model's structural counts against the schedules the builders really make: rounds
// (seed 003's K), blocks sent (D), messages, and which messages leave the node (the NIC term),
// for tra at every radix, tra2 at every radix pair, pairwise and linear. Then the shape of
// auto's choices (seed 003 V) and the tuning file's syntax.
#include "collective/model.hpp"
#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "collective/tuning.hpp"
#include "locality/node_map.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace mpia {
namespace {

NodeMap blocks_of(int nodes, int ppn) {
  std::vector<int> labels;
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < ppn; ++i) labels.push_back(n);
  return make_node_map(labels);
}

Selection sel(const std::string& text, const NodeMap& map) {
  return parse_selection(Collective::Alltoall, text,
                         Extent(map.size(), map.nnodes(), map.max_local()), true);
}

// What the built schedules of every rank of node 0 say: rounds, blocks and messages of rank 0,
// and the bytes that leave node 0 per round summed over its ranks (the model's NIC term is
// the busiest node's; with block placement every node is alike).
struct Built {
  std::int64_t rounds = 0, blocks = 0, messages = 0;
  double nic_bytes = 0;
};
Built built(const Selection& s, const NodeMap& map, std::int64_t B) {
  Built b;
  const int P = map.size();
  for (int p : map.members[0]) {
    AlltoallShape shape{p, P, B, &map};
    const Schedule sch = s.algorithm->build_alltoall(shape, s.values);
    if (p == 0) {
      // Dependent rounds: a window of w exchanges (pairwise: 1) serialises a round.
      for (const Round& r : sch.rounds) {
        std::int64_t sends = 0;
        for (const Exchange& x : r.exchanges) sends += x.send.active();
        const std::int64_t w = sch.policy.window;
        b.rounds += sends == 0 ? 0 : w > 0 ? (sends + w - 1) / w : 1;
      }
      b.messages = sch.messages_sent();
      b.blocks = sch.bytes_sent() / B;
    }
    for (const Round& r : sch.rounds)
      for (const Exchange& x : r.exchanges)
        if (x.send.active() && map.node_of[x.send.peer] != 0) b.nic_bytes += double(x.send.bytes());
  }
  return b;
}

void expect_counts(const std::string& text, const NodeMap& map, bool check_nic) {
  const std::int64_t B = 8;
  const Selection s = sel(text, map);
  const Terms t = predicted_terms(s, machine_of(map), B);
  const Built b = built(s, map, B);
  EXPECT_EQ(t.rounds, b.rounds) << text << " P=" << map.size();
  EXPECT_EQ(t.blocks, b.blocks) << text << " P=" << map.size();
  EXPECT_EQ(t.messages, b.messages) << text << " P=" << map.size();
  // The model charges each round at its busiest node's NIC load; summed over the rounds of
  // node 0 that is exactly the bytes node 0's ranks send off the node (some of it, for the
  // radices whose ranks fall out of step, in the part that overlaps: wire).
  if (check_nic) EXPECT_DOUBLE_EQ(t.c[5] + t.wire[5], b.nic_bytes) << text << " P=" << map.size();
}

TEST(Model, TraCountsMatchTheBuiltSchedules) {
  for (auto [nodes, ppn] :
       {std::pair{1, 2}, {1, 3}, {1, 7}, {2, 4}, {3, 5}, {4, 4}, {5, 3}, {4, 16}}) {
    const NodeMap map = blocks_of(nodes, ppn);
    const int P = map.size();
    for (int r = 2; r <= P; ++r) {
      expect_counts("tra:radix=" + std::to_string(r), map, true);
      const Terms t =
          predicted_terms(sel("tra:radix=" + std::to_string(r), map), machine_of(map), 8);
      EXPECT_EQ(t.rounds, tra_rounds_K(P, r));
      EXPECT_EQ(t.blocks, tra_blocks_D(P, r));
    }
    expect_counts("pairwise", map, true);
    expect_counts("linear", map, false);  // one round: the model's NIC term is the node's total
    expect_counts("bruck", map, true);
    expect_counts("modified_bruck", map, true);
  }
}

TEST(Model, Tra2CountsMatchTheBuiltSchedules) {
  for (auto [nodes, ppn] : {std::pair{2, 2}, {2, 5}, {3, 4}, {4, 16}, {7, 3}, {16, 4}}) {
    const NodeMap map = blocks_of(nodes, ppn);
    for (int r1 = 2; r1 <= std::max(2, ppn); ++r1)
      for (int r2 = 2; r2 <= nodes; ++r2) {
        const std::string text =
            "tra2:radix_intra=" + std::to_string(r1) + ",radix_inter=" + std::to_string(r2);
        expect_counts(text, map, true);
        const Terms t = predicted_terms(sel(text, map), machine_of(map), 8);
        EXPECT_EQ(t.rounds, tra_rounds_K(ppn, r1) + tra_rounds_K(nodes, r2)) << text;
      }
  }
}

TEST(Model, LinearNicTermIsTheNodesOffNodeTraffic) {
  const NodeMap map = blocks_of(4, 16);
  const Terms t = predicted_terms(sel("linear", map), machine_of(map), 8);
  EXPECT_DOUBLE_EQ(t.wire[5], built(sel("linear", map), map, 8).nic_bytes);
  EXPECT_DOUBLE_EQ(t.cpu[1], 48);  // off-node messages of one rank
  EXPECT_DOUBLE_EQ(t.cpu[0], 15);
  // Posting overlaps the NIC's work: the larger of the two counts.
  CostModel cm;
  const double cpu = 63 * cm.o_inter, wire = 16 * 48 * 8 / cm.bw_inter;
  EXPECT_NEAR(predicted_seconds(cm, t), cm.lat_inter + std::max(cpu, wire), 1e-15);
}

// Flat radix exchanges whose digits end at the node boundary (16 = 2^4 = 4^2) overlap one
// rank's latencies with the others' transfers: max(A, W) + 0.3 min(A, W), not A + W; other
// radices, one node, or scattered placement keep the sum of the rounds.
TEST(Model, FlatRadixOutOfStepOverlaps) {
  const CostModel cm;
  auto parts = [&cm](const Terms& t) {
    std::array<double, 7> all{};
    for (int i = 0; i < 7; ++i) all[i] = t.c[i] + t.cpu[i] + t.wire[i];
    const double A =
        all[0] * cm.o_intra + all[1] * cm.o_inter + all[2] * cm.lat_intra + all[3] * cm.lat_inter;
    const double W = all[4] / cm.bw_intra + all[5] / cm.bw_inter;
    return std::pair<double, double>(A, W);
  };
  const Machine m{1024, 64, 16, true};
  for (const char* text : {"tra:radix=2", "tra:radix=4", "bruck"}) {
    const Terms t = predicted_terms(sel(text, blocks_of(64, 16)), m, 8);
    const auto [A, W] = parts(t);
    EXPECT_NEAR(predicted_seconds(cm, t), std::max(A, W) + 0.3 * std::min(A, W), 1e-12) << text;
  }
  for (const char* text : {"tra:radix=3", "tra:radix=8", "tra:radix=16", "pairwise"}) {
    const Terms t = predicted_terms(sel(text, blocks_of(64, 16)), m, 8);
    const auto [A, W] = parts(t);
    EXPECT_NEAR(predicted_seconds(cm, t), A + W, 1e-12) << text;
  }
  const Terms one = predicted_terms(sel("tra:radix=2", blocks_of(1, 16)), Machine::flat(16), 8);
  EXPECT_NEAR(predicted_seconds(cm, one), parts(one).first + parts(one).second, 1e-12);
  Machine scattered = m;
  scattered.blocked = false;
  const Terms sc = predicted_terms(sel("tra:radix=2", blocks_of(64, 16)), scattered, 8);
  EXPECT_NEAR(predicted_seconds(cm, sc), parts(sc).first + parts(sc).second, 1e-12);
}

TEST(Model, MachineOfPlacements) {
  const Machine m = machine_of(blocks_of(4, 16));
  EXPECT_EQ(m.nranks, 64);
  EXPECT_EQ(m.nnodes, 4);
  EXPECT_EQ(m.ppn, 16);
  EXPECT_TRUE(m.blocked);
  EXPECT_FALSE(machine_of(make_node_map({0, 1, 0, 1})).blocked);
  EXPECT_FALSE(machine_of(make_node_map({0, 0, 0, 1})).blocked);
}

std::string choice(int nodes, int ppn, std::int64_t B, const CostModel& cm = CostModel{}) {
  Machine m{nodes * ppn, nodes, ppn, true};
  return choose_alltoall(cm, m, B).to_string();
}

TEST(Model, AutoPicksARunnableAlgorithm) {
  for (int P : {1, 2, 3, 16, 1024}) {
    for (std::int64_t n : {0, 8, 1 << 20}) {
      Selection s = choose_alltoall(CostModel{}, Machine::flat(P), n);
      ASSERT_NE(s.algorithm, nullptr);
      EXPECT_EQ(s.algorithm->kind, AlgorithmKind::Scheduled) << s.to_string();
    }
  }
}

// Seed 003 V, and what the simulation of scripts/smpi shows: on several nodes small blocks take
// small radices (the two-level exchange, or at 8 B on 16 and 64 nodes a flat radix 2 or 4, as
// measured there), the inter-node radix growing with the block, large blocks the direct
// exchange; on one node, tra with a small radix for tiny blocks.
// What any model of these schedules must pick, whatever its constants were fitted to: a small
// radix for tiny blocks on one node (seed 003: rounds dominate), tra2's smallest intra-node
// radix for small blocks on many nodes, linear when bandwidth dominates (every byte crosses the
// NIC once). The picks at the simulated sweep's own points are not pinned here: the model's
// constants and its out-of-step factor were fitted there (HeldOutFatTree below judges it on a
// machine it was not fitted to).
TEST(Model, AutoFollowsTheSeedShape) {
  EXPECT_EQ(choice(1, 4096, 8).rfind("tra:radix=", 0), 0u) << choice(1, 4096, 8);
  EXPECT_LT(choose_alltoall(CostModel{}, Machine::flat(4096), 8).value("radix"), 16);
  for (int nodes : {4, 16, 64}) {
    EXPECT_EQ(choice(nodes, 16, 64).rfind("tra2:radix_intra=2,", 0), 0u) << nodes;
    EXPECT_EQ(choice(nodes, 16, 1 << 20), "linear") << nodes;
  }
  const Machine m{1024, 64, 16, true};
  const Selection a = choose_alltoall(CostModel{}, m, 64), b = choose_alltoall(CostModel{}, m, 256);
  EXPECT_LT(a.value("radix_inter"), b.value("radix_inter"))
      << a.to_string() << " " << b.to_string();
}

// Out of sample: the simulated fat tree (docs/results/smpi/sweep.csv, platform "fattree",
// P = 256 on 16 nodes of 16: a 2-level tree, not the cluster whose inputs are the built-in
// constants and whose sweep fitted the out-of-step factor). At every measured block size the
// built-in model's pick, measured there, is within 10 % of the best measured selection.
TEST(Model, HeldOutFatTree) {
  std::ifstream in(MPIA_SOURCE_DIR "/docs/results/smpi/sweep.csv");
  ASSERT_TRUE(in) << "docs/results/smpi/sweep.csv";
  // Fields, honouring double quotes (selections hold commas).
  auto fields = [](const std::string& line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"')
        quoted = !quoted;
      else if (ch == ',' && !quoted)
        out.emplace_back();
      else
        out.back() += ch;
    }
    return out;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> head = fields(line);
  auto col = [&](const char* name) {
    return std::size_t(std::find(head.begin(), head.end(), name) - head.begin());
  };
  const std::size_t cplat = col("platform"), cP = col("P"), cppn = col("ppn"),
                    cbytes = col("block_bytes"), csel = col("selection"), ctime = col("time_us");
  ASSERT_LT(ctime, head.size());
  std::map<std::pair<int, std::int64_t>, std::map<std::string, double>> points;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = fields(line);
    if (f.size() < head.size() || f[cplat] != "fattree") continue;
    const std::string& sel_text = f[csel];
    if (sel_text == "auto" || sel_text.rfind("smpi:", 0) == 0) continue;
    char* end = nullptr;
    const double t = std::strtod(f[ctime].c_str(), &end);
    if (end == f[ctime].c_str()) continue;
    points[{std::stoi(f[cP]) * 1000 + std::stoi(f[cppn]), std::stoll(f[cbytes])}][sel_text] = t;
  }
  int judged = 0;
  for (const auto& [key, times] : points) {
    const int P = key.first / 1000, ppn = key.first % 1000;
    const Machine m{P, P / ppn, ppn, true};
    const std::string pick = choose_alltoall(CostModel{}, m, key.second).to_string();
    const auto it = times.find(pick);
    if (it == times.end()) continue;
    double best = it->second;
    for (const auto& [s, t] : times) best = std::min(best, t);
    EXPECT_LE(it->second, 1.10 * best) << "P=" << P << " " << key.second << " B: " << pick;
    ++judged;
  }
  EXPECT_GE(judged, 3) << "the held-out points must be judged, not skipped";
}

// The receive-side overheads and the in-flight cost (issue #18) default to 0: every built-in
// prediction is what it was. A receive is charged per message received, which every schedule
// here matches with a message sent (same distance, same node or not), in the same place as the
// send's overhead (serial, or overlapping the NIC for linear); only linear has messages in
// flight beyond one exchange per rank: 2Q(P-Q-1) of them through the node's NIC.
TEST(Model, ReceiveAndInflightTermsDefaultToNoChange) {
  const CostModel cm;
  EXPECT_EQ(cm.o_recv_intra, 0.0);
  EXPECT_EQ(cm.o_recv_inter, 0.0);
  EXPECT_EQ(cm.g_inflight, 0.0);
  for (auto [nodes, ppn] : {std::pair{1, 16}, {4, 16}, {8, 16}, {3, 5}}) {
    const Machine m{nodes * ppn, nodes, ppn, true};
    for (const Selection& s : alltoall_candidates(m)) {
      const Terms t = predicted_terms(s, m, 512);
      double sent[2] = {0, 0}, received[2] = {0, 0};
      for (const TermArray* a : {&t.c, &t.cpu, &t.wire}) {
        sent[0] += (*a)[0], sent[1] += (*a)[1];
        received[0] += (*a)[7], received[1] += (*a)[8];
      }
      EXPECT_DOUBLE_EQ(received[0], sent[0]) << s.to_string();
      EXPECT_DOUBLE_EQ(received[1], sent[1]) << s.to_string();
      const bool linear = std::string(s.algorithm->name) == "linear";
      EXPECT_DOUBLE_EQ(t.c[9], linear && nodes > 1 ? 2.0 * ppn * (nodes * ppn - ppn - 1) : 0.0)
          << s.to_string() << " " << nodes << "x" << ppn;
      EXPECT_EQ(t.cpu[9] + t.wire[9], 0.0);
      // Zero constants: the same time as a model that never heard of the terms.
      Terms old = t;
      for (TermArray* a : {&old.c, &old.cpu, &old.wire}) (*a)[7] = (*a)[8] = (*a)[9] = 0;
      EXPECT_EQ(predicted_seconds(cm, t), predicted_seconds(cm, old)) << s.to_string();
    }
  }
}

TEST(Model, ReceiveOverheadAddsPerMessageReceived) {
  const NodeMap map = blocks_of(4, 16);
  const Machine m = machine_of(map);
  CostModel recv;
  recv.o_recv_intra = 2e-7;
  recv.o_recv_inter = 3e-7;
  // Round by round: each round's receive in series with its send.
  const Terms pw = predicted_terms(sel("pairwise", map), m, 8);
  EXPECT_NEAR(predicted_seconds(recv, pw) - predicted_seconds(CostModel{}, pw),
              pw.c[0] * 2e-7 + pw.c[1] * 3e-7, 1e-15);
  const Terms t2 = predicted_terms(sel("tra2:radix_intra=2,radix_inter=2", map), m, 8);
  EXPECT_NEAR(predicted_seconds(recv, t2) - predicted_seconds(CostModel{}, t2), 4 * 2e-7 + 2 * 3e-7,
              1e-15);  // K1 = 4 rounds in the node, K2 = 2 between nodes
  // Linear: the receives join the posting that overlaps the NIC's transfers.
  const Terms lin = predicted_terms(sel("linear", map), m, 8);
  EXPECT_NEAR(predicted_seconds(recv, lin),
              recv.lat_inter + 15 * (recv.o_intra + 2e-7) + 48 * (recv.o_inter + 3e-7), 1e-15);
}

// The machine of issue #18 in small: at P = 64 and 128, 512 B the built-in model takes linear
// (its posting and the NIC's transfer overlap); a receive-side cost, or a cost per message in
// flight, each alone moves the pick to a round-by-round exchange.
TEST(Model, NewTermsMoveLinearAtMediumBlocks) {
  for (int nodes : {4, 8}) {
    EXPECT_EQ(choice(nodes, 16, 512), "linear") << nodes;
    CostModel recv;
    recv.o_recv_intra = recv.o_recv_inter = 5e-7;
    EXPECT_NE(choice(nodes, 16, 512, recv), "linear") << nodes;
    CostModel inflight;
    inflight.g_inflight = 2e-8;
    EXPECT_NE(choice(nodes, 16, 512, inflight), "linear") << nodes;
    // Large blocks stay with linear (bandwidth-bound, the fewest bytes).
    EXPECT_EQ(choice(nodes, 16, 1 << 20, inflight), "linear") << nodes;
  }
}

TEST(Model, InflightCostMovesTheDirectExchanges) {
  const Machine m{256, 16, 16, true};
  // Alltoallv, sparse (8 blocks of 512 B a rank): the direct exchange, all 8 at once, beats
  // forwarding every block at the largest size, until its messages in flight cost.
  const AlltoallvStats st{512, 8 * 512, 8};
  EXPECT_EQ(choose_alltoallv(CostModel{}, m, st).to_string(), "linear");
  CostModel g;
  g.g_inflight = 1e-6;
  EXPECT_NE(choose_alltoallv(g, m, st).to_string(), "linear");
  // Neighbor: direct has every off-node edge in flight, locality one message per other node.
  const NeighborStats ns{8, 26, 2};
  EXPECT_EQ(choose_neighbor(CostModel{}, m, ns).to_string(), "direct");
  EXPECT_EQ(choose_neighbor(g, m, ns).to_string(), "locality");
}

// Node-aware neighbor routing sends one message per (round, peer): a rank's edges to a node go
// to that node's gateway in its own node in one message, so its intra-node messages are at
// most Q - 1 each way however many edges leave the node. Priced at two per edge, the model put
// locality at 3.47x direct's cost on the lab's SpMV halo (P = 256 on 16-rank nodes, n = 32:
// about 95 off-node edges of at most 3 doubles per rank, to all 15 other nodes), where it
// measured 18.2 us against direct's 63.
TEST(Model, NeighborLocalityIntraMessagesAreBoundedByTheNode) {
  const Machine m{256, 16, 16, true};
  const NeighborStats ns{24, 95, 15};
  const Extent e(m.nranks, m.nnodes, m.ppn);
  const Terms t = predicted_terms(
      parse_selection(Collective::NeighborAlltoallv, "locality", e, true), m, stats_of(ns));
  EXPECT_LE(t.c[0], 2.0 * (m.ppn - 1)) << "intra-node messages sent";
  EXPECT_EQ(choose_neighbor(CostModel{}, m, ns).to_string(), "locality");
}

// locality_partial sends a node pair straight when its senders have few off-node edges in all (a
// stencil's faces): the gateways would cost each of them two intra-node hops and save it
// nothing. Without that rule (rank_edges 0) it combined every pair of two or more small edges
// and measured as locality did, 3.9x direct on the lab's 7-point stencil (P = 1024 on 16-rank
// nodes, n = 2: faces of 32 B, at most 6 off-node neighbours a rank). On the 64-neighbour random
// graph (63 off-node edges to 60 nodes) the load passes 2Q and the rule changes nothing.
TEST(Model, NeighborPartialSendsFacesDirectly) {
  const Machine m{1024, 64, 16, true};
  const Extent e(m.nranks, m.nnodes, m.ppn);
  auto seconds = [&](const std::string& spec, const NeighborStats& ns) {
    return predicted_seconds(
        CostModel{}, predicted_terms(parse_selection(Collective::NeighborAlltoallv, spec, e, true),
                                     m, stats_of(ns)));
  };
  const NeighborStats stencil{32, 6, 6}, graph{8, 63, 60};
  EXPECT_LT(seconds("locality_partial", stencil), 1.1 * seconds("direct", stencil));
  EXPECT_GT(seconds("locality_partial:rank_edges=0", stencil), 1.5 * seconds("direct", stencil));
  EXPECT_NEAR(seconds("locality_partial", graph), seconds("locality_partial:rank_edges=0", graph),
              1e-12);
}

// locality_radix at radix N is locality (one exchange between every two nodes), so the model
// must price them alike, at skewed counts too. It priced locality at the largest block for
// every block: issue 19's lab, simgrid_net P = 64, hotspot counts at 64 B (largest 697 B),
// predicted locality 3.3x locality_radix radix 3, which left it out of the trial's margin;
// measured locality 19.1 us, locality_radix radix 3 22.2.
TEST(Model, LocalityIsLocalityRadixAtEveryNode) {
  for (const Machine m : {Machine{64, 4, 16, true}, Machine{256, 16, 16, true}})
    for (const AlltoallvStats v : {AlltoallvStats{697, 64 * 64, 63},
                                   AlltoallvStats{512, 512 * 64, 63}, AlltoallvStats{8, 8, 1}}) {
      const Extent e(m.nranks, m.nnodes, m.ppn);
      const Selection loc = parse_selection(Collective::Alltoallv, "locality", e, true);
      const Selection rad = parse_selection(
          Collective::Alltoallv, "locality_radix:radix=" + std::to_string(m.nnodes), e, true);
      EXPECT_NEAR(predicted_seconds(CostModel{}, predicted_terms(loc, m, stats_of(v))),
                  predicted_seconds(CostModel{}, predicted_terms(rad, m, stats_of(v))), 1e-12)
          << "P=" << m.nranks << " largest block " << v.max_block;
    }
}

// A node-aware exchange sends a message between nodes only when it carries something: where a
// rank's blocks reach few other nodes, locality's N - 1 messages per rank become that many, and
// locality_radix's fewer; where the statistic is not known (0), or every node is reached, the
// price is the one of every message sent.
TEST(Model, NodeAwareExchangesSendNoEmptyBundle) {
  const Machine m{1024, 64, 16, true};
  const Extent e(m.nranks, m.nnodes, m.ppn);
  auto terms = [&](const char* sel, std::int64_t reach) {
    return predicted_terms(parse_selection(Collective::Alltoallv, sel, e, true), m,
                           stats_of(AlltoallvStats{256, 8192, 32, reach}));
  };
  // (radix 2's rounds each hold half the bundles: priced as sent at any reach above one node)
  for (const char* sel : {"locality", "locality_radix:radix=8", "locality_radix:radix=4"}) {
    const Terms all = terms(sel, 0), every = terms(sel, 63), more = terms(sel, 1000),
                two = terms(sel, 2);
    for (int i = 0; i < kModelTerms; ++i) {
      EXPECT_DOUBLE_EQ(all.c[i], every.c[i]) << sel << i;
      EXPECT_DOUBLE_EQ(all.c[i], more.c[i]) << sel << i;
    }
    EXPECT_LT(two.c[detail::kMsgInter], all.c[detail::kMsgInter]) << sel;
    EXPECT_DOUBLE_EQ(two.c[detail::kBytesNic], all.c[detail::kBytesNic]) << sel;
    EXPECT_DOUBLE_EQ(two.c[detail::kMsgIntra], all.c[detail::kMsgIntra]) << sel;
  }
  EXPECT_DOUBLE_EQ(terms("locality", 0).c[detail::kMsgInter], 63);
  EXPECT_NEAR(terms("locality", 2).c[detail::kMsgInter], 2, 1e-9);
  EXPECT_DOUBLE_EQ(terms("locality_radix:radix=2", 2).c[detail::kMsgInter], 6);
  EXPECT_LT(terms("locality_radix:radix=2", 1).c[detail::kMsgInter], 6);
}

TEST(Model, CostModelText) {
  CostModel m;
  std::string warnings;
  apply_cost_model(m, "o_inter=1e-6,bw_copy=5e9,nonsense=3,lat_intra=-1,bw_inter=x", &warnings);
  EXPECT_DOUBLE_EQ(m.o_inter, 1e-6);
  EXPECT_DOUBLE_EQ(m.bw_copy, 5e9);
  EXPECT_DOUBLE_EQ(m.lat_intra, CostModel{}.lat_intra);
  EXPECT_NE(warnings.find("nonsense"), std::string::npos);
  EXPECT_NE(warnings.find("lat_intra=-1"), std::string::npos);
  EXPECT_NE(warnings.find("bw_inter=x"), std::string::npos);
  EXPECT_NE(warnings.find("g_inflight"), std::string::npos);  // the keys it knows, all ten
  apply_cost_model(m, "o_recv_intra=1e-7,o_recv_inter=2e-7,g_inflight=3e-9", &warnings);
  EXPECT_DOUBLE_EQ(m.o_recv_intra, 1e-7);
  EXPECT_DOUBLE_EQ(m.o_recv_inter, 2e-7);
  EXPECT_DOUBLE_EQ(m.g_inflight, 3e-9);
  for (int i = 0; i < kModelTerms; ++i)
    EXPECT_NE(to_string(m).find(std::string(cost_model_key(i)) + "="), std::string::npos) << i;
  // Round trip.
  EXPECT_EQ(to_string(parse_cost_model(to_string(m))), to_string(m));
}

TEST(Tuning, RulesAndModel) {
  Tuning t;
  std::string w;
  parse_tuning(
      "# a comment\n"
      "model o_intra=1e-7,bw_copy=1e10,o_recv_inter=4e-7,g_inflight=1e-9   # trailing comment\n"
      "\n"
      "alltoall nranks=64-256 bytes=0-512 tra2:radix_intra=2,radix_inter=4\n"
      "alltoall bytes=4096- linear\n"
      "alltoallv nodes=2 locality\n"
      "neighbor_alltoallv direct\n"
      "alltoall nranks=x-3 linear\n"
      "alltoall nonsense\n"
      "allreduce linear\n"
      "model\n",
      t, w);
  EXPECT_DOUBLE_EQ(t.model.o_intra, 1e-7);
  EXPECT_DOUBLE_EQ(t.model.bw_copy, 1e10);
  EXPECT_DOUBLE_EQ(t.model.o_recv_inter, 4e-7);
  EXPECT_DOUBLE_EQ(t.model.g_inflight, 1e-9);
  EXPECT_DOUBLE_EQ(t.model.o_recv_intra, 0.0);
  ASSERT_EQ(t.rules.size(), 4u) << w;
  EXPECT_NE(w.find("line 8:"), std::string::npos) << w;
  EXPECT_NE(w.find("line 9:"), std::string::npos) << w;
  EXPECT_NE(w.find("line 10:"), std::string::npos) << w;
  EXPECT_NE(w.find("line 11:"), std::string::npos) << w;
  const TuningRule* r = find_rule(t, Collective::Alltoall, 64, 4, 8);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->selection, "tra2:radix_intra=2,radix_inter=4");
  EXPECT_EQ(find_rule(t, Collective::Alltoall, 63, 4, 8), nullptr);
  EXPECT_EQ(find_rule(t, Collective::Alltoall, 64, 4, 513), nullptr);
  EXPECT_EQ(find_rule(t, Collective::Alltoall, 2, 1, 1 << 20)->selection, "linear");
  EXPECT_EQ(find_rule(t, Collective::Alltoallv, 8, 2, 0)->selection, "locality");
  EXPECT_EQ(find_rule(t, Collective::Alltoallv, 8, 3, 0), nullptr);
  EXPECT_EQ(find_rule(t, Collective::NeighborAlltoallv, 8, 3, 0)->selection, "direct");
}

TEST(Tuning, ResolveAutoPrefersTheRuleThenTheModel) {
  Tuning t;
  std::string w;
  parse_tuning(
      "alltoall bytes=0-64 tra:radix=3\nalltoall bytes=65-128 auto\n"
      "alltoall bytes=129-256 tra:radix=999\n",
      t, w);
  const Machine m = Machine::flat(16);
  int model_calls = 0;
  auto model = [&] {
    ++model_calls;
    return choose_alltoall(t.model, m, 100);
  };
  EXPECT_EQ(resolve_auto(t, Collective::Alltoall, m, 8, model).to_string(), "tra:radix=3");
  EXPECT_EQ(model_calls, 0);
  resolve_auto(t, Collective::Alltoall, m, 100, model);  // "auto": the model
  EXPECT_EQ(model_calls, 1);
  // Out of range for this communicator: clamped, as MPIX_ALLTOALL is.
  EXPECT_EQ(resolve_auto(t, Collective::Alltoall, m, 200, model).to_string(), "tra:radix=16");
}

}  // namespace
}  // namespace mpia
