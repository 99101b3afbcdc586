// Alltoallv locality and locality_radix: node-aware, on the two-level exchange
// (collective/alltoall/two_level.cpp). Within the node both are direct (radix >= size, digits
// merged): a rank sends within its node once to each port (the rank serving the destination's
// lane). Between nodes:
//  - locality: each port once to each remote node's rank of its lane -- one message per node
//    pair and port (Open MPI's coll/han alltoallv, TuNA_l^g's coalesced inter-node messages);
//      time ~ (Q-1) alpha_intra + (N-1) alpha_inter + bytes through the NIC once
//  - locality_radix: a radix-r exchange among the lane's N ports, the rounds of one base-r digit
//    run at once (r-1 messages each way): ceil(log_r N) steps instead of N-1 messages per lane
//    (P = 1024 on 64 nodes, radix 8: 2 steps of 7 messages, not 63), bundles forwarded up to
//    log_r N times;
//      time ~ (Q-1) alpha_intra + ceil(log_r N) alpha_inter + (r-1) ceil(log_r N) o_inter
//             + D(N, r) bundles through the NIC
// A port needs the sizes of the blocks its node's other ranks give it, to the destinations it
// serves: at init every rank of a node sends every other one message (its sizes for the
// destinations that rank serves): O(P) memory, Q - 1 messages each way. locality_radix then
// runs the radix rounds on the bundles' sizes among each lane's ports (radix_size_exchange),
// learning the sizes of the bundles it forwards: O(N log N) per lane.
// Restrictions: none (any placement, uneven nodes). Parameters: locality none; locality_radix
// radix, 2..N (N: nodes), default ceil(sqrt(N)) (r = N is locality).
#include "collective/alltoall/builders.hpp"
#include "collective/alltoallv/peer_sizes.hpp"
#include "collective/record.hpp"

#include <algorithm>

namespace mpia {

namespace {

using namespace detail;

Schedule two_level_v(const AlltoallvShape& s, int radix_inter) {
  if (!s.nodes) fail(MPI_ERR_INTERN, "mpi-advance: locality built without a node map");
  return with(build_two_level(s.rank, *s.nodes, s.nodes->max_local(), radix_inter, s.pair_bytes,
                              true, s.lane_bytes),
              kRoundByRound, Lowering::Pack);
}

Schedule locality(const AlltoallvShape& s, const ParamValues&) {
  return two_level_v(s, s.nodes ? s.nodes->nnodes() : 1);
}

Schedule locality_radix(const AlltoallvShape& s, const ParamValues& v) {
  return two_level_v(s, int(v[0]));
}

// What phase 1 needs: the sizes of this node's blocks for the destinations this rank serves.
void learn(AlltoallvShape& shape, const ParamValues&, SizeChannel& channel) {
  const NodeMap& nm = *shape.nodes;
  const int me = shape.rank;
  const std::shared_ptr<PeerSizes> t = peer_sizes(shape);
  const std::vector<int>& mine = nm.members[std::size_t(nm.node_of[me])];
  const int Q = int(mine.size()), q = nm.local_of[me];
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(Q)), in(out.size());
  for (int d = 0; d < nm.size(); ++d)
    out[std::size_t(nm.local_of[d] % Q)].push_back(shape.send_bytes[std::size_t(d)]);
  const std::vector<int> served = two_level_served(me, nm);
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    in[std::size_t(a)].assign(served.size(), 0);
    channel.post_recv(mine[std::size_t(a)], in[std::size_t(a)].data(), int(served.size()));
  }
  for (int b = 0; b < Q; ++b) {
    if (b == q) continue;
    channel.post_send(mine[std::size_t(b)], out[std::size_t(b)].data(),
                      int(out[std::size_t(b)].size()));
  }
  channel.wait_all();
  for (int a = 0; a < Q; ++a)
    if (a != q)
      for (std::size_t k = 0; k < served.size(); ++k)
        t->add(mine[std::size_t(a)], served[k], in[std::size_t(a)][k]);
}

// Phase 1's sizes, then, for every lane this rank is the port of (in ascending order on every
// rank, so that the lanes' exchanges match), the radix rounds on the lane's bundle sizes.
void learn_radix(AlltoallvShape& shape, const ParamValues& v, SizeChannel& channel) {
  learn(shape, v, channel);
  const NodeMap& nm = *shape.nodes;
  const int N = nm.nnodes(), L = nm.max_local(), me = shape.rank;
  if (N < 2) return;
  const int n = nm.node_of[me], r = two_level_radix(int(v[0]), N);
  const std::vector<int>& mine = nm.members[std::size_t(n)];
  const int Q = int(mine.size());
  auto table = std::make_shared<std::unordered_map<std::int64_t, std::int64_t>>();
  auto key = [N](int lane, int i, int j) {
    return (std::int64_t(lane) * N + i) * std::int64_t(N) + j;
  };
  std::vector<int> port(static_cast<std::size_t>(N));
  std::vector<std::int64_t> slot(static_cast<std::size_t>(N));
  for (int lane = nm.local_of[me]; lane < L; lane += Q) {
    for (int j = 0; j < N; ++j) {
      const std::vector<int>& node = nm.members[std::size_t(j)];
      port[std::size_t(j)] = node[std::size_t(lane) % node.size()];
    }
    for (int k = 0; k < N; ++k) {  // the bundle for node n - k: my node's blocks for its `lane`
      const std::vector<int>& node = nm.members[std::size_t((n - k + N) % N)];
      std::int64_t sum = 0;
      if (k != 0 && lane < int(node.size()))
        for (int s : mine) sum += shape.pair_bytes(s, node[std::size_t(lane)]);
      slot[std::size_t(k)] = sum;
    }
    radix_size_exchange(
        n, N, r, slot, [&port](int k) { return port[std::size_t(k)]; }, channel,
        [&](int i, int j, std::int64_t b) { (*table)[key(lane, i, j)] = b; });
  }
  shape.lane_bytes = [table, key](int lane, int i, int j) {
    const auto it = table->find(key(lane, i, j));
    if (it == table->end())
      fail(MPI_ERR_INTERN, "mpi-advance: locality_radix asked for the size of a bundle (node " +
                               std::to_string(i) + " to node " + std::to_string(j) + ", lane " +
                               std::to_string(lane) + ") this rank never learnt");
    return it->second;
  };
}

// A radix-Q exchange within the node moving bundles of N blocks, then the radix-r rounds between
// nodes moving bundles of Q, the r-1 rounds of a digit at once: one latency per digit, their
// messages in flight together through the NIC; blocks at the mean size (at most the largest).
// A message between nodes is sent only when it carries something (the builder skips empty
// ones): where a rank's blocks reach only `reach` of the N - 1 other nodes (the agreed
// statistic), a message holding b of the N - 1 bundles is priced as sent min(1, b reach/(N-1))
// times -- locality's N - 1 messages become `reach` (issue 19, P = 1024 sparse counts at 8 B: a
// rank's 32 peers on 2 nodes; locality measured 14.5 us, priced at 63 messages it was fifth in
// the ranking and out of the trial, which settled on linear, 16.9). The bytes through the NIC
// stay the node's off-node bytes, in fewer messages.
Terms radix_cost(const Machine& m, const Stats& st, const ParamValues& v) {
  Terms t;
  const std::int64_t Q = std::min<std::int64_t>(m.ppn, m.nranks), N = m.nnodes;
  const std::int64_t r = two_level_radix(int(v[0]), int(N));
  const double u = forwarded_block(m, st);  // bundles of Q (or N) such blocks
  add_radix(t, Q, Q, double(N) * u, N, [](std::int64_t) { return 0; });
  // (0: not known -- a Stats of the alltoall or a test -- or no block leaves its node, the
  // price of the exchange before this statistic)
  const double reach =
      st.remote_nodes <= 0 ? double(N - 1) : std::min(double(N - 1), double(st.remote_nodes));
  for (std::int64_t rx = 1; rx < N; rx *= r) {
    std::int64_t k = 0;
    double sent = 0;  // the digit's messages that carry something
    for (std::int64_t z = 1; z < r; ++z) {
      const std::int64_t b = round_blocks(N, rx, r, z);
      if (b == 0) continue;
      ++k;
      const double share = std::min(1.0, double(b) * reach / double(N - 1));
      sent += share;
      add_round(t, double(b) * double(Q) * u, Q, b * Q);  // one message each way, off the node
      t.c[kMsgInter] -= 1 - share;
      t.c[kRecvInter] -= 1 - share;
    }
    t.c[kLatInter] -= double(k - 1);
    t.rounds -= k - 1;
    t.c[kInflight] += inflight_beyond_one(double(Q), sent);
  }
  return t;
}

// locality_radix at radix N: one exchange between every two nodes, priced as such (it priced
// every block at the largest one, 3.3x locality_radix radix 3 at issue 19's hotspot counts).
Terms cost(const Machine& m, const Stats& st, const ParamValues&) {
  return radix_cost(m, st, ParamValues{std::int64_t(m.nnodes)});
}
// What radix_cost computes, and (kCost) what it comes to at r = N: one digit of N-1 rounds of one
// bundle, whose shares of a message add up to R.
constexpr const char* kRadixCost =
    "(Q-1) round(N b, 0) + the sum over the digit positions i of N in base r of (lat_inter + "
    "G(Q, s_i) g_inflight + the sum over z = 1..r-1 with k = k(N, r, i, z) > 0 of (min(1, k "
    "R/(N-1)) msg_inter + Q^2 k b/bw_inter + [k Q > 1] 2 k Q b/bw_copy)), s_i = the sum of the "
    "min(1, k R/(N-1)), r = min(radix, N): the node's ranks exchange directly, then each lane's "
    "ports run the rounds of one digit at once, a message priced only where a rank's blocks "
    "reach its nodes";
constexpr const char* kCost =
    "(Q-1) round(N b, 0) + [N > 1] (lat_inter + R msg_inter + G(Q, R) g_inflight + (N-1) (Q^2 "
    "b/bw_inter + [Q > 1] 2 Q b/bw_copy)): the node's ranks exchange directly, then one message "
    "per node pair and port, all at once";

// Weighed on several nodes, within the range where auto weighs forwarding at all (bruck's).
std::vector<ParamValues> candidates(const Machine& m, const Stats& st) {
  if (m.nranks < 4 || m.nranks > 1024 || st.max_block == 0 || m.nnodes <= 1) return {};
  return {ParamValues{}};
}

// Radices 2, 3, 4, 8, 16 below the number of nodes (r = N is locality); the size exchange at
// init is O(N log N) per lane: up to 4096 ranks.
std::vector<ParamValues> radix_candidates(const Machine& m, const Stats& st) {
  std::vector<ParamValues> out;
  if (m.nranks < 4 || m.nranks > 4096 || st.max_block == 0 || m.nnodes <= 2) return out;
  for (std::int64_t r : {2, 3, 4, 8, 16})
    if (r < m.nnodes) out.push_back({r});
  return out;
}

}  // namespace

MPIA_ALGORITHMS(alltoallv_locality) {
  return {
      record("locality", 500,
             "node-aware: blocks for a remote node gathered in the node and sent as one message "
             "per node pair and port; the sizes a port forwards are gathered within its node at "
             "init",
             {"Open MPI's coll/han alltoallv (one message per node pair and port); the coalesced "
              "inter-node messages of " MPIA_REF_TUNA
              "; on the two-level exchange of " MPIA_SEED_003 ", section IV (TRA2)",
              kCost},
             {}, locality, learn, {cost, candidates, 30}, kNeedsLocality),
      record(
          "locality_radix", 510,
          "node-aware for many nodes: blocks gathered in the node as in locality, then a "
          "radix-r exchange among each lane's ports between nodes (ceil(log_r N) steps of r-1 "
          "messages); the sizes of the bundles a port forwards are learnt at init",
          {MPIA_SEED_003 ", section IV (TRA2: a radix-r exchange between nodes), on the bundles "
                         "of locality; " MPIA_REF_TUNA,
           kRadixCost},
          {{"radix", "base of the exchange between nodes (N: nodes)",
            Bound::sqrt_of(Bound::Of::Nodes, 2), kRadixMin, Bound::of_size(Bound::Of::Nodes, 2)}},
          locality_radix, learn_radix, {radix_cost, radix_candidates, 35}, kNeedsLocality),
  };
}

}  // namespace mpia
