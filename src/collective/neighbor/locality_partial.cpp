// Neighbor alltoallv locality_partial: node-aware routing (build_neighbor_locality,
// builders.cpp) for the node pairs where combining pays, direct messages for the others. The
// edges from node A to node B are aggregated (A's gateway for B, one message to B's gateway for
// A, on to their destinations: locality's three rounds) iff A -> B has at least `min_edges`
// non-empty edges whose mean size is at most `threshold` bytes, and its senders have at least
// `rank_edges` non-empty off-node edges each on average (their load); otherwise each goes from
// its source straight to its destination in round 1, beside the bundles (one message per
// source, destination pair). A pair of few or large edges saves little by sharing one message
// and pays two intra-node hops and four copies; a pair of many small ones saves their
// per-message costs -- but only for senders with many off-node edges: routing its edges through
// the gateways costs a rank up to 2 (Q - 1) intra-node messages and saves it the off-node
// messages beyond the few it sends as a gateway, so the default `rank_edges` is 2Q. (The lab's
// stencils, 6-26 neighbours of which a few leave the node, run direct; the 64-neighbour random
// graph and the SpMV halo of ~95 off-node neighbours run through the gateways. A rule on the
// edges per sender into one node instead kept the 27-point stencil's pairs, up to 9 edges from
// one rank into the next node, aggregated and 1.2x slower than direct.)
//   time ~ 2 (min(E_a, Q - 1) o_intra + alpha_intra + n beta_intra) + (R_a + E_d) (o + alpha_inter)
//          + the node's off-node bytes through its NIC + 4 E_a n copied
// (E_a, R_a: a rank's aggregated edges and the node pairs they join; E_d: its direct ones.)
// Agreement: at init a rank learns the edges that pass through it as locality does
// (learn_neighbor_node_edges), then every rank tells the others of its node its load (Q - 1
// messages each way). A's gateway for B then knows every edge A -> B, their senders and their
// loads, and decides A -> B; it swaps that decision with B's gateway for A, which decides
// B -> A (one value each way, for node pairs with an edge either way). One more exchange within
// each node (Q - 1 messages each way, one value per remote node a rank is the gateway for)
// tells every rank of the node the decisions of its gateways, so every rank an edge visits
// computes the same path (NeighborShape::direct_node_pairs), and whether any pair of the node
// is aggregated: where none is, the node's ranks send their edges within the node in round 1
// too, and exchange in one round, as direct does.
// The cost model sees only the agreed statistics (the most remote edges E and remote nodes R of
// one rank, the largest message): no pair is aggregated unless E >= rank_edges;
// then it takes the edges of a node pair as Poisson with mean Q E / min(N - 1, Q R),
// aggregates the share that falls in pairs of min_edges or more, and all of them as direct when
// the largest message exceeds the threshold -- an approximation.
// Restrictions: none (any topology, any placement). Parameters: min_edges 1..65536 (default 2;
// 1 with a threshold above every mean and rank_edges 0 is locality's routing), threshold
// 0..2^30 bytes (default 4096; 0: every edge direct), rank_edges 0..2^20 (default 2Q; 0: the
// senders' load plays no part).
// References (ideas only): G. Collom, A. Bienz et al., "Optimizing irregular communication
// with neighborhood collectives and locality-aware parallelism" (its partially aggregated
// variant), and MPI Advance's implementation of that variant.
#include "collective/neighbor/builders.hpp"
#include "collective/neighbor/gateway_cost.hpp"
#include "collective/record.hpp"

#include <algorithm>
#include <cmath>

namespace mpia {

namespace {

using namespace detail;

constexpr std::int64_t kMinEdgesDefault = 2;
constexpr std::int64_t kThresholdDefault = 4096;
constexpr std::int64_t kRankEdgesPerRank = 2;  // rank_edges' default: 2 per rank of the node

Schedule locality_partial(const NeighborShape& s, const ParamValues&) {
  return with(build_neighbor_locality(s), kRoundByRound, Lowering::Pack);
}

// Whether n edges of `bytes` in all, n > 0, are aggregated: n >= min_edges and their mean
// bytes / n <= threshold (without forming threshold * n).
bool aggregated(std::int64_t n, std::int64_t bytes, std::int64_t min_edges,
                std::int64_t threshold) {
  const std::int64_t mean = bytes / n;
  return n >= min_edges && (mean < threshold || (mean == threshold && bytes % n == 0));
}

// The remote nodes that rank `gateway` of node n is node n's gateway towards, ascending.
std::vector<int> gated(const NodeMap& nm, int n, int gateway) {
  std::vector<int> out;
  for (int x = 0; x < int(nm.members.size()); ++x)
    if (x != n && neighbor_gateway(nm, n, x) == gateway) out.push_back(x);
  return out;
}

void learn(NeighborShape& shape, const ParamValues& v, SizeChannel& channel) {
  learn_neighbor_node_edges(shape, channel);
  const NodeMap& nm = *shape.nodes;
  const int me = shape.rank;
  const int n = nm.node_of[me], q = nm.local_of[me];
  const std::vector<int>& mine = nm.members[std::size_t(n)];
  const int Q = int(mine.size()), N = int(nm.members.size());
  // Every rank's load (its non-empty off-node out-edges), told to the rest of its node.
  std::int64_t my_load = 0;
  for (const NeighborShape::Edge& e : shape.edges)
    my_load += e.src == me && e.bytes > 0 && nm.node_of[e.dst] != n;
  std::vector<std::int64_t> load(static_cast<std::size_t>(Q), 0);
  load[std::size_t(q)] = my_load;
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    channel.post_recv(mine[std::size_t(a)], &load[std::size_t(a)], 1);
    channel.post_send(mine[std::size_t(a)], &my_load, 1);
  }
  channel.wait_all();
  // As the gateway towards node x: the non-empty edges n -> x (counted, summed, their senders)
  // and whether there is one x -> n.
  struct Tally {
    std::int64_t out_n = 0, out_bytes = 0, in_n = 0;
    std::vector<int> senders;  // local ranks, with repeats
  };
  std::vector<Tally> tally(static_cast<std::size_t>(N));
  for (const NeighborShape::Edge& e : shape.edges) {
    if (e.bytes == 0) continue;
    const int ns = nm.node_of[e.src], nd = nm.node_of[e.dst];
    if (ns == nd || neighbor_gateway(nm, n, ns == n ? nd : ns) != me) continue;
    Tally& t = tally[std::size_t(ns == n ? nd : ns)];
    if (ns == n)
      ++t.out_n, t.out_bytes += e.bytes, t.senders.push_back(nm.local_of[e.src]);
    else
      ++t.in_n;
  }
  // Whether n -> x goes direct: not aggregated by count and size, or its senders' load too
  // small.
  auto direct_out = [&](Tally& t) {
    if (t.out_n == 0) return false;
    if (!aggregated(t.out_n, t.out_bytes, v[0], v[1])) return true;
    std::sort(t.senders.begin(), t.senders.end());
    t.senders.erase(std::unique(t.senders.begin(), t.senders.end()), t.senders.end());
    const std::int64_t S = std::int64_t(t.senders.size());
    std::int64_t senders_load = 0;
    for (int s : t.senders) senders_load += load[std::size_t(s)];
    return senders_load < v[2] * S;
  };
  // Per gated node, 1: n -> x goes direct, 2: x -> n does (x's gateway for n decides it); 4:
  // n -> x has an edge, 8: x -> n has one.
  const std::vector<int> own = gated(nm, n, me);
  std::vector<std::int64_t> decided(own.size(), 0), theirs(own.size(), 0);
  for (std::size_t i = 0; i < own.size(); ++i) {
    Tally& t = tally[std::size_t(own[i])];
    decided[i] = (direct_out(t) ? 1 : 0) | (t.out_n > 0 ? 4 : 0) | (t.in_n > 0 ? 8 : 0);
    if (t.out_n == 0 && t.in_n == 0) continue;  // x's gateway for n sees no edge either
    const int peer = neighbor_gateway(nm, own[i], n);
    channel.post_recv(peer, &theirs[i], 1);
    channel.post_send(peer, &decided[i], 1);
  }
  channel.wait_all();
  for (std::size_t i = 0; i < own.size(); ++i)
    decided[i] |= (theirs[i] & 1) ? 2 : 0;  // its bit 1: x -> n goes direct
  std::vector<std::vector<std::int64_t>> heard(static_cast<std::size_t>(Q));
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    heard[std::size_t(a)].assign(gated(nm, n, mine[std::size_t(a)]).size(), 0);
    if (!heard[std::size_t(a)].empty())
      channel.post_recv(mine[std::size_t(a)], heard[std::size_t(a)].data(),
                        int(heard[std::size_t(a)].size()));
    if (!decided.empty()) channel.post_send(mine[std::size_t(a)], decided.data(), int(own.size()));
  }
  channel.wait_all();
  heard[std::size_t(q)] = decided;
  shape.direct_node_pairs.clear();
  bool aggregates = false;  // some pair of this node goes through the gateways
  for (int a = 0; a < Q; ++a) {
    const std::vector<int> nodes = gated(nm, n, mine[std::size_t(a)]);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::int64_t f = heard[std::size_t(a)][i];
      if (f & 1) shape.direct_node_pairs.push_back({n, nodes[i]});
      if (f & 2) shape.direct_node_pairs.push_back({nodes[i], n});
      aggregates = aggregates || ((f & 4) && !(f & 1)) || ((f & 8) && !(f & 2));
    }
  }
  // Nothing through the gateways: the node's own edges beside the direct ones, one round.
  shape.intra_round = aggregates ? 0 : 1;
  std::sort(shape.direct_node_pairs.begin(), shape.direct_node_pairs.end());
}

// The share of a rank's remote edges that fall in aggregated node pairs (edges) and of the
// node pairs it reaches that are aggregated (pairs), under the model of the header comment.
struct Split {
  double edges = 1, pairs = 1;
};

Split split(const Machine& m, const Stats& st, const ParamValues& v) {
  if (st.max_block > v[1]) return {0, 0};
  const double E = double(st.remote_edges), Q = double(m.ppn);
  // Too few off-node edges a rank to pay for the gateways: all direct.
  if (E < double(v[2])) return {0, 0};
  const double reached = std::max(1.0, std::min(double(m.nnodes - 1), Q * double(st.remote_nodes)));
  const double lambda = Q * E / reached;
  // P(X >= k) for X ~ Poisson(lambda), k = min_edges - 1 and min_edges: an edge's own pair
  // holds 1 + Poisson(lambda) edges (size-biased), a pair min_edges or more with P(X >= m).
  double term = std::exp(-lambda), below = 0, below_m1 = 0;
  const std::int64_t me = v[0];
  for (std::int64_t k = 0; k < me; ++k) {
    if (k == me - 1) below_m1 = below;
    below += term;
    term *= lambda / double(k + 1);
    if (term < 1e-300 && double(k) > lambda) {
      if (k < me - 1) below_m1 = below;
      break;
    }
  }
  const double reached_any = 1 - std::exp(-lambda);
  Split s;
  s.edges = std::clamp(1 - below_m1, 0.0, 1.0);
  s.pairs = reached_any > 0 ? std::clamp((1 - below) / reached_any, 0.0, 1.0) : 0.0;
  return s;
}

Terms cost(const Machine& m, const Stats& st, const ParamValues& v) {
  const Split f = split(m, st, v);
  const double Ea = f.edges * double(st.remote_edges);
  return gateway_terms(m, st, Ea, f.pairs * double(st.remote_nodes), Ea > 0);
}
constexpr const char* kCost =
    "2 min(E_a, Q-1) msg_intra + [E_a > 0] (2 lat_intra + 2 B/bw_intra) + (R_a + E_d) msg_inter "
    "+ lat_inter + G(Q, R_a + E_d) g_inflight + Q E B/bw_inter + 4 E_a B/bw_copy (locality's, "
    "for the share aggregated), E_a = e E, E_d = E - E_a, R_a = p R; e = p = 0 when B > "
    "threshold or E < rank_edges, else, with X ~ Poisson(l), l = Q E/max(1, min(N-1, Q R)) (an "
    "edge's node pair holds 1 + X edges): e = P(X >= min_edges - 1), p = P(X >= min_edges)/(1 - "
    "exp(-l)) (0 when l = 0)";

// Where some edge leaves its node, min_edges 2, 3, 4 at the default threshold and rank_edges
// when the split the model predicts is partial (all or nothing is locality's or direct's
// schedule).
std::vector<ParamValues> candidates(const Machine& m, const Stats& st) {
  std::vector<ParamValues> out;
  if (m.nnodes <= 1 || st.remote_edges == 0 || st.max_block > kThresholdDefault) return out;
  const std::int64_t rank_edges = kRankEdgesPerRank * m.ppn;
  for (std::int64_t me : {2, 3, 4}) {
    const Split f = split(m, st, {me, kThresholdDefault, rank_edges});
    if (f.edges > 0.01 && f.edges < 0.99) out.push_back({me, kThresholdDefault, rank_edges});
  }
  return out;
}

}  // namespace

MPIA_ALGORITHMS(neighbor_locality_partial) {
  return {record(
      "locality_partial", 600,
      "node-aware where it pays: the edges between two nodes combined through gateways as "
      "locality does when there are at least `min_edges` of at most `threshold` bytes on "
      "average and their senders have `rank_edges` off-node edges in all on average, sent "
      "directly otherwise; decided per direction at init by the gateways",
      {MPIA_REF_COLLOM " (its partially aggregated variant) and MPI Advance's implementation of "
                       "it (ideas only); the rule on min_edges, threshold and rank_edges is this "
                       "library's",
       kCost},
      {{"min_edges", "the fewest non-empty edges from one node to another that are combined",
        Bound::constant(kMinEdgesDefault), Bound::constant(1), Bound::constant(65536)},
       {"threshold", "bytes: node pairs whose mean edge is larger are sent directly",
        Bound::constant(kThresholdDefault), Bound::constant(0),
        Bound::constant(std::int64_t(1) << 30)},
       {"rank_edges",
        "the off-node edges a node pair's senders must have on average (in all) for the pair "
        "to be combined",
        Bound::multiple_of(Bound::Of::MaxLocal, kRankEdgesPerRank), Bound::constant(0),
        Bound::constant(std::int64_t(1) << 20)}},
      locality_partial, learn, {cost, candidates, 30}, kNeedsLocality)};
}

}  // namespace mpia
